package sites

import (
	"bufio"
	"encoding/binary"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// liveSite is the site named fn in t, nil when absent.
func liveSite(t LiveTop, fn string) *LiveSite {
	for i := range t.Top {
		if t.Top[i].Function == fn {
			return &t.Top[i]
		}
	}
	return nil
}

// TestLiveReaderRunning: testdata/live.c under the library at rate 1,
// its records read while it waits on its stdin. At the first wait the
// reader has first_site's 8 blocks of 100000 bytes exactly and nothing
// of second_site; at the second, first_site's blocks freed and
// second_site's 5 of 300000 bytes; once the program exited, nothing
// (and no stack's name kept).
// The file as it stood at the first wait, cut at each of its last 300
// bytes and fed in two parts, gives the blocks of the whole: a record
// cut by the end of what is written is read whole by the next Poll.
func TestLiveReaderRunning(t *testing.T) {
	dir := t.TempDir()
	p := startWaiting(t, "live.c", dir, 1)
	cmd, in, wait := p.cmd, p.in, p.wait
	l := NewLiveReader(dir)
	check := func(when, fn string, bytes, objects int64, gone string) {
		t.Helper()
		if err := l.Poll(); err != nil {
			t.Fatal(err)
		}
		top := l.Top(10)
		t.Logf("%s: %+v", when, top)
		if top.Rate != 1 || top.Processes != 1 || top.Unnamed != 0 {
			t.Errorf("%s: rate %d, %d processes, %d stacks unnamed; want 1, 1, 0", when, top.Rate, top.Processes, top.Unnamed)
		}
		if s := liveSite(top, fn); s == nil || s.Bytes != bytes || s.Objects != objects {
			t.Errorf("%s: %s in use %+v, want %d bytes in %d blocks; top %+v", when, fn, s, bytes, objects, top)
		} else if !strings.HasSuffix(s.File, "live.c") || s.Line == 0 {
			t.Errorf("%s: %s at %s:%d, want a line of live.c", when, fn, s.File, s.Line)
		}
		if s := liveSite(top, gone); s != nil {
			t.Errorf("%s: %s in use %+v, want none", when, gone, s)
		}
		if top.Bytes < bytes {
			t.Errorf("%s: %d bytes in use in all, under %s's %d", when, top.Bytes, fn, bytes)
		}
	}

	wait("a")
	check("first wait", "first_site", 8*100000, 8, "second_site")
	paths, _ := filepath.Glob(filepath.Join(dir, "sites.*.bin"))
	if len(paths) != 1 {
		t.Fatalf("record files %q, want one", paths)
	}
	snap, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	liveCuts(t, filepath.Base(paths[0]), snap)

	in.Write([]byte("\n"))
	wait("b")
	check("second wait", "second_site", 5*300000, 5, "first_site")

	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := l.Poll(); err != nil {
		t.Fatal(err)
	}
	if top := l.Top(10); top.Processes != 0 || top.Bytes != 0 || len(top.Top) != 0 || len(l.names) != 0 {
		t.Errorf("after the exit: %+v and %d stacks named, want nothing in use and none kept", top, len(l.names))
	}
}

// TestLiveBigBlockWritten: blocks of 8 MiB made within a second of the
// thread's last write are in the file while the program waits
// (testdata/bigwait.c, two at big_site, at the default rate), and their
// frees too. Planted (written only once a second while the thread
// records), the live view showed one of the two, and it still showed
// it after the free: Python's 77 MiB list, then a sleep, read 1.2 MiB
// in use until the exit.
func TestLiveBigBlockWritten(t *testing.T) {
	dir := t.TempDir()
	p := startWaiting(t, "bigwait.c", dir, DefaultRate)
	l := NewLiveReader(dir)
	l.NameBudget = time.Minute // the two calls' stacks named in one Top, under -race too
	at := func(want string) *LiveSite {
		t.Helper()
		p.wait(want)
		if err := l.Poll(); err != nil {
			t.Fatal(err)
		}
		return liveSite(l.Top(10), "big_site")
	}
	// One sample per 512 KiB on average: an 8 MiB block goes unsampled
	// once in 9 million runs, and its estimate is its size.
	if s := at("a"); s == nil || s.Bytes < 15<<20 || s.Bytes > 17<<20 || s.Objects != 2 {
		t.Errorf("while the program waits with big_site's two blocks of 8 MiB: big_site %+v, want about 16 MiB in 2 (top %+v)", s, l.Top(10))
	}
	p.in.Write([]byte("\n"))
	if s := at("b"); s != nil {
		t.Errorf("once the program freed it: big_site %+v, want none", s)
	}
}

// TestLiveReaderPython: the live view names a Python program's stacks
// by their innermost Python frame, as the report does: hold's line of
// testdata/python/livewait.py, with its 80 MiB, at rate 1, on each
// interpreter. Planted (stacks named without their Python frames), the
// site was the allocator's caller in the interpreter (Debian's 3.11:
// python3.11+0x4fb450, 80 MiB in 21 blocks).
func TestLiveReaderPython(t *testing.T) {
	script, _ := filepath.Abs("testdata/python/livewait.py")
	for _, py := range pythons(t, 11, 12, 13) {
		t.Run(py.name, func(t *testing.T) {
			dir := t.TempDir()
			p := startCmd(t, exec.Command(py.path, script), "livewait.py", dir, 1)
			l := NewLiveReader(dir)
			l.NameBudget = time.Minute
			p.wait("a")
			if err := l.Poll(); err != nil {
				t.Fatal(err)
			}
			top := l.Top(5)
			s := liveSite(top, "hold")
			if s == nil || s.File != script || s.Line != 11 || s.Bytes < 20*4<<20 || s.Bytes > 20*4<<20+20 {
				t.Fatalf("hold %+v, want livewait.py:11 with %d bytes (and a byte a bytearray); top %+v", s, 20*4<<20, top)
			}
			if top.Top[0].Function != "hold" {
				t.Errorf("top site %+v, want hold's line first", top.Top[0])
			}
			t.Logf("top: %+v", top.Top)
		})
	}
}

// waiting is a testdata program that writes a line on stdout where it
// stops and waits for one on stdin (live.c, bigwait.c).
type waiting struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	wait func(want string) // reads its next line, which must be want
}

// startWaiting starts testdata's name under the library at rate, its
// records in dir; the test's end closes its stdin and waits for it.
func startWaiting(t *testing.T, name, dir string, rate int64) *waiting {
	t.Helper()
	return startCmd(t, exec.Command(prog(t, name)), name, dir, rate)
}

// startCmd starts cmd under the library at rate, as startWaiting.
func startCmd(t *testing.T, cmd *exec.Cmd, name, dir string, rate int64) *waiting {
	t.Helper()
	cmd.Env = Env(os.Environ(), lib(t), dir, rate)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		cmd.Wait()
	})
	p := &waiting{cmd: cmd, in: in, out: bufio.NewReader(outPipe)}
	p.wait = func(want string) {
		t.Helper()
		l, err := p.out.ReadString('\n')
		if err != nil || strings.TrimSpace(l) != want {
			t.Fatalf("waiting for %q from %s: %q, %v", want, name, l, err)
		}
	}
	return p
}

// inUse is f's blocks in use, by address.
func inUse(f *liveFile) map[uint64]liveBlock {
	m := map[uint64]liveBlock{}
	for a, st := range f.addrs {
		if st.live {
			m[a] = st.alloc
		}
	}
	return m
}

// liveCuts feeds snap (a record file as written so far) to readers in
// two parts, cut at each of its last 300 bytes, and checks that each
// ends with the blocks of a reader fed it whole. Its process must be
// alive (a reader drops the images of dead ones).
func liveCuts(t *testing.T, name string, snap []byte) {
	t.Helper()
	feed := func(parts ...[]byte) *liveFile {
		dir := t.TempDir()
		p := filepath.Join(dir, name)
		l := NewLiveReader(dir)
		var f *liveFile
		for i, part := range parts {
			fh, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			fh.Write(part)
			fh.Close()
			if err := l.Poll(); err != nil {
				t.Fatalf("part %d: %v", i, err)
			}
			f = l.files[p]
		}
		if f.torn != "" || f.done {
			t.Fatalf("torn %q, done %v", f.torn, f.done)
		}
		return f
	}
	whole := feed(snap)
	wholeUse := inUse(whole)
	if len(wholeUse) == 0 || whole.off != int64(len(snap)) {
		t.Fatalf("the whole file: %d blocks, read to %d of %d bytes", len(wholeUse), whole.off, len(snap))
	}
	// Read 97 bytes a Poll: each ends at a record's end past them, the
	// rest said to be behind, until the blocks are the whole's.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), snap, 0o644); err != nil {
		t.Fatal(err)
	}
	l := NewLiveReader(dir)
	l.PollBytes = 97
	polls := 0
	for ; polls == 0 || l.Top(0).BehindBytes > 0; polls++ {
		if err := l.Poll(); err != nil {
			t.Fatal(err)
		}
		f := l.files[filepath.Join(dir, name)]
		if behind := l.Top(0).BehindBytes; behind != int64(len(snap))-f.off {
			t.Fatalf("poll %d: read to %d of %d bytes, %d said behind", polls, f.off, len(snap), behind)
		}
	}
	// The maps written at the start are one record, read in one Poll.
	events := len(snap)
	if len(snap) > headerLen+9 && snap[headerLen] == 'M' {
		events -= 9 + int(binary.LittleEndian.Uint64(snap[headerLen+1:]))
	}
	if u := inUse(l.files[filepath.Join(dir, name)]); !maps.Equal(u, wholeUse) || polls < events/200 {
		t.Errorf("97 bytes a poll: %d blocks after %d polls, want %d after at least %d", len(u), polls, len(wholeUse), events/200)
	}
	inside := 0
	for k := max(len(snap)-300, headerLen); k < len(snap); k++ {
		f := feed(snap[:k])
		if f.off < int64(k) {
			inside++ // cut inside a record: left for the next Poll
		}
		if f.off > int64(k) {
			t.Fatalf("cut at %d: read to %d", k, f.off)
		}
		dir := filepath.Dir(f.path)
		l := NewLiveReader(dir)
		l.files[f.path] = f
		fh, _ := os.OpenFile(f.path, os.O_APPEND|os.O_WRONLY, 0)
		fh.Write(snap[k:])
		fh.Close()
		if err := l.Poll(); err != nil {
			t.Fatalf("cut at %d: %v", k, err)
		}
		if u := inUse(f); !maps.Equal(u, wholeUse) || len(f.byStack) != len(whole.byStack) {
			t.Fatalf("cut at %d: %d blocks in %d stacks, want %d in %d", k, len(u), len(f.byStack), len(wholeUse), len(whole.byStack))
		}
		for h, u := range whole.byStack {
			if g := f.byStack[h]; g == nil || *g != *u {
				t.Fatalf("cut at %d: stack %x holds %+v, want %+v", k, h, g, u)
			}
		}
	}
	t.Logf("%d of %d cuts inside a record", inside, 300)
	if inside == 0 {
		t.Error("no cut fell inside a record")
	}
}

// recs writes record files for the reader's tests.
type recs struct{ b []byte }

func newRecs(pid int, rate uint64) *recs {
	r := &recs{b: []byte("MPSITES\n")}
	r.b = binary.LittleEndian.AppendUint32(r.b, recordVersion)
	r.b = binary.LittleEndian.AppendUint32(r.b, uint32(pid))
	r.b = binary.LittleEndian.AppendUint32(r.b, 1)
	r.b = binary.LittleEndian.AppendUint32(r.b, 0)
	r.b = binary.LittleEndian.AppendUint64(r.b, rate)
	r.b = binary.LittleEndian.AppendUint64(r.b, 0)
	return r
}

func (r *recs) u64(vs ...uint64) {
	for _, v := range vs {
		r.b = binary.LittleEndian.AppendUint64(r.b, v)
	}
}

func (r *recs) stack(hash uint64, pcs ...uint64) {
	r.b = append(r.b, 'S', byte(len(pcs)))
	r.u64(hash)
	r.u64(pcs...)
}

func (r *recs) alloc(kind uint8, seq, addr, size, stack uint64) {
	r.b = append(r.b, 'A', kind)
	r.u64(seq, seq*10, addr, size, stack, 0, size)
}

func (r *recs) free(seq, addr uint64) {
	r.b = append(r.b, 'F', 0)
	r.u64(seq, seq*10, addr)
}

func (r *recs) munmap(seq, addr, n uint64) {
	r.b = append(r.b, 'U', 0)
	r.u64(seq, seq*10, addr, n)
}

// TestLiveReaderOrder: events read out of seq order (threads' buffers
// written in any order), planted one by one. A free read before its
// allocation ends it when it arrives; a free of an earlier block at an
// address, read after a later block there, leaves the later one; an
// allocation read after a later block at its address does not replace
// it; a later free read first ends the later block, not an older one
// read before it; a munmap does not end an allocator block; an address
// whose allocation comes more than forgetRounds polls after its free is
// forgotten, and the block then stays in use (the documented
// approximation).
func TestLiveReaderOrder(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sites.1.0.bin")
	r := newRecs(os.Getpid(), 1)
	r.stack(7, 0x1000)
	r.stack(8, 0x2000)
	r.free(5, 0xa0) // freed before its allocation is read
	r.alloc(kindHeap, 3, 0xa0, 100, 7)
	r.alloc(kindHeap, 10, 0xb0, 200, 8)
	r.free(7, 0xb0)                   // the free of an earlier block at 0xb0
	r.alloc(kindHeap, 6, 0xb0, 50, 7) // that earlier block, read last
	r.alloc(kindHeap, 11, 0xc0, 300, 7)
	r.munmap(12, 0xc0, 300) // not the allocator's block
	r.free(45, 0xe0)        // the free of the later block, read first
	r.alloc(kindHeap, 30, 0xe0, 10, 8)
	r.alloc(kindHeap, 40, 0xe0, 20, 8)
	r.free(35, 0xe0) // the older block's
	r.free(20, 0xd0) // its allocation comes too late
	if err := os.WriteFile(p, r.b, 0o644); err != nil {
		t.Fatal(err)
	}
	l := NewLiveReader(dir)
	for range forgetRounds + 1 {
		if err := l.Poll(); err != nil {
			t.Fatal(err)
		}
	}
	f := l.files[p]
	want := map[uint64]uint64{0xb0: 200, 0xc0: 300}
	got := map[uint64]uint64{}
	for a, b := range inUse(f) {
		got[a] = b.size
	}
	if !maps.Equal(got, want) {
		t.Errorf("blocks in use (address: size) %v, want %v", got, want)
	}
	if u := f.byStack[7]; u == nil || u.bytes != 300 || u.objects != 1 {
		t.Errorf("stack 7: %+v, want 300 bytes in 1 block", u)
	}
	if len(f.addrs) != len(want) {
		t.Errorf("%d addresses remembered after %d polls, want the %d in use", len(f.addrs), forgetRounds+1, len(want))
	}
	r.b = r.b[:0]
	r.alloc(kindHeap, 15, 0xd0, 400, 8)
	fh, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	fh.Write(r.b)
	fh.Close()
	if err := l.Poll(); err != nil {
		t.Fatal(err)
	}
	if b, ok := inUse(f)[0xd0]; !ok || b.size != 400 {
		t.Errorf("a block whose free was dropped: %+v %v, want in use", b, ok)
	}
	// A record type no version writes: the file is left, one error.
	fh, _ = os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	fh.Write([]byte{'Z', 0, 0})
	fh.Close()
	if err := l.Poll(); err == nil || !strings.Contains(err.Error(), "record type 0x5a") {
		t.Errorf("a bad record: %v, want an error naming it", err)
	}
	if top := l.Top(5); top.Processes != 0 {
		t.Errorf("a file with a bad record still counted: %+v", top)
	}
}

// TestLiveReaderMatchesReplay: testdata/handoff.c, whose blocks are
// freed by other threads than the ones that made them (so frees are
// often read before their allocations), read while it runs. At each
// poll, the blocks in use the reader keeps, by stack, are those of the
// whole-file replay (seq order) of the same bytes: exactly at rate 1,
// within float rounding sampled.
func TestLiveReaderMatchesReplay(t *testing.T) {
	for _, rate := range []int64{1, 4096} {
		dir := t.TempDir()
		cmd := exec.Command(prog(t, "handoff.c"), "200")
		cmd.Env = Env(os.Environ(), lib(t), dir, rate)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		l := NewLiveReader(dir)
		snaps := t.TempDir()
		compared, early := 0, 0
		for running := true; running; {
			select {
			case err := <-exited:
				if err != nil {
					t.Fatal(err)
				}
				running = false
			case <-time.After(150 * time.Millisecond):
			}
			if err := l.Poll(); err != nil {
				t.Fatal(err)
			}
			for _, f := range l.files {
				if f.done || f.im == nil {
					continue
				}
				b, err := os.ReadFile(f.path)
				if err != nil {
					t.Fatal(err)
				}
				p := filepath.Join(snaps, filepath.Base(f.path))
				if err := os.WriteFile(p, b[:f.off], 0o644); err != nil {
					t.Fatal(err)
				}
				im, err := readFile(p)
				if err != nil || im.torn != "" {
					t.Fatalf("the bytes read: %v %q", err, im.torn)
				}
				r := replay(im, nil)
				for h := range r.byStack {
					if _, ok := f.byStack[h]; !ok && r.byStack[h].exitObj > 0 {
						f.byStack[h] = &liveUse{} // compared below as none
					}
				}
				for h, u := range f.byStack {
					var wb, wo float64
					if a := r.byStack[h]; a != nil {
						wb, wo = a.exitBytes, a.exitObj
					}
					if math.Abs(u.bytes-wb) > 1e-9*wb+1e-6 || math.Abs(u.objects-wo) > 1e-9*wo+1e-6 {
						t.Fatalf("rate %d, at byte %d of %s: stack %x holds %.3f bytes in %.3f blocks, the replay %.3f in %.3f",
							rate, f.off, filepath.Base(f.path), h, u.bytes, u.objects, wb, wo)
					}
					if u.objects == 0 {
						delete(f.byStack, h)
					}
				}
				compared++
				for _, st := range f.addrs {
					if !st.has {
						early++ // a free read before any allocation
					}
				}
			}
		}
		t.Logf("rate %d: %d polls compared; over them, %d addresses with frees read before any allocation", rate, compared, early)
		if compared == 0 {
			t.Errorf("rate %d: no poll while the program ran", rate)
		}
	}
}

// BenchmarkLiveReaderPoll: one Poll over the records of testdata/stress.c
// at rate 1 (4 threads, 250000 allocations each), what a live view reads
// when it catches up, beside the whole-file read and replay the report
// makes of the same files. Bytes are the record files'.
func BenchmarkLiveReaderPoll(b *testing.B) {
	dir := b.TempDir()
	cmd := exec.Command(prog(b, "stress.c"), "250000", "4")
	cmd.Env = Env(os.Environ(), lib(b), dir, 1)
	if err := cmd.Run(); err != nil {
		b.Fatal(err)
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "sites.*.bin"))
	var size int64
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			b.Fatal(err)
		}
		size += fi.Size()
	}
	b.Run("live", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			l := NewLiveReader(dir)
			l.PollBytes = math.MaxInt64
			if err := l.Poll(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("replay", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			ims, err := readDir(dir)
			if err != nil {
				b.Fatal(err)
			}
			for _, im := range ims {
				replay(im, nil)
			}
		}
	})
}

// TestLiveReaderAnyOrder: the records of real programs, their events
// applied in the file's order, reversed and shuffled, leave the blocks
// in use of the replay in seq order, by stack: the allocator's blocks
// (planted.c, handoff.c's frees by other threads, stress.c) and the
// program's mappings cut by munmaps (munmap.c: heads, tails, middles,
// a munmap across two mappings, pieces counted a block each), at rate 1
// and sampled.
func TestLiveReaderAnyOrder(t *testing.T) {
	for _, c := range []struct {
		prog string
		args []string
		rate int64
	}{
		{"munmap.c", nil, 1}, {"munmap.c", nil, DefaultRate}, {"planted.c", nil, 1},
		{"handoff.c", []string{"20"}, 1}, {"handoff.c", []string{"20"}, 4096}, {"stress.c", []string{"20000", "2"}, 1},
	} {
		dir := t.TempDir()
		cmd := exec.Command(prog(t, c.prog), c.args...)
		cmd.Env = Env(os.Environ(), lib(t), dir, c.rate)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v", c.prog, err)
		}
		ims, err := readDir(dir)
		if err != nil || len(ims) != 1 {
			t.Fatalf("%s: %d images, %v", c.prog, len(ims), err)
		}
		im := ims[0]
		inFile := fileEvents(t, im.path)
		r := replay(im, nil)
		rng := rand.New(rand.NewPCG(1, uint64(c.rate)))
		for _, order := range []string{"file", "reversed", "shuffled", "shuffled again"} {
			ev := slices.Clone(inFile)
			switch order {
			case "reversed":
				slices.Reverse(ev)
			case "shuffled", "shuffled again":
				rng.Shuffle(len(ev), func(i, j int) { ev[i], ev[j] = ev[j], ev[i] })
			}
			f := newLiveFile(im.path)
			f.im = &image{rate: im.rate}
			for i := range ev {
				f.apply(&ev[i], 1)
			}
			var total float64
			for h, a := range r.byStack {
				u := f.byStack[h]
				if u == nil {
					u = &liveUse{}
				}
				if math.Abs(u.bytes-a.exitBytes) > 1e-9*a.exitBytes+1e-6 || math.Abs(u.objects-a.exitObj) > 1e-9*a.exitObj+1e-6 {
					t.Errorf("%s at rate %d, %s: stack %x holds %.3f bytes in %.3f blocks, the replay %.3f in %.3f",
						c.prog, c.rate, order, h, u.bytes, u.objects, a.exitBytes, a.exitObj)
				}
				total += u.bytes
			}
			for h, u := range f.byStack {
				if r.byStack[h] == nil {
					t.Errorf("%s at rate %d, %s: stack %x holds %+v, the replay has none", c.prog, c.rate, order, h, *u)
				}
			}
			if order == "file" {
				t.Logf("%s at rate %d: %d events, %.0f bytes in use at the end (the replay's exit %.0f)", c.prog, c.rate, len(ev), total, r.exit)
			}
		}
	}
}

// fileEvents are the events of the record file at path, in the file's
// order.
func fileEvents(t *testing.T, path string) []event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := bufio.NewReader(f)
	if _, err := r.Discard(headerLen); err != nil {
		t.Fatal(err)
	}
	d := decoder{r: r}
	im := &image{stacks: map[uint64][]uint64{}}
	for d.next(im) == nil {
	}
	return im.events
}
