package sampler

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"memprobe/instrument/procfs"
)

// fakeProc is a proc tree for one pid whose files a test rewrites between
// samples. The sampler's descriptors stay open, and os.WriteFile rewrites
// the same file, so each read sees the content of that moment, as with
// /proc. Sizes are KiB, as the kernel prints them.
type fakeProc struct {
	t    *testing.T
	root string
	dir  string
	pid  int
}

// mem is what the fake status says.
type mem struct {
	name                             string
	rss, anon, file, hwm, vsz, stack uint64
	threads                          int
}

func newFakeProc(t *testing.T) *fakeProc {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the /proc files are read on Linux only")
	}
	root := t.TempDir()
	const pid = 4242
	dir := filepath.Join(root, strconv.Itoa(pid))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return &fakeProc{t: t, root: root, dir: dir, pid: pid}
}

func (f *fakeProc) fs() procfs.FS { return procfs.NewFS(f.root) }

func (f *fakeProc) write(name, text string) {
	f.t.Helper()
	if err := os.WriteFile(filepath.Join(f.dir, name), []byte(text), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// status writes status with m; RssFile is m.file, RssAnon m.anon, and
// VmRSS their sum, as the kernel prints it.
func (f *fakeProc) status(m mem) {
	if m.name == "" {
		m.name = "fake"
	}
	rss := m.anon + m.file
	f.write("status", fmt.Sprintf("Name:\t%s\nVmPeak:\t%d kB\nVmSize:\t%d kB\nVmHWM:\t%d kB\nVmRSS:\t%d kB\n"+
		"RssAnon:\t%d kB\nRssFile:\t%d kB\nRssShmem:\t0 kB\nVmStk:\t%d kB\nThreads:\t%d\n",
		m.name, m.vsz, m.vsz, max(m.hwm, rss), rss, m.anon, m.file, m.stack, m.threads))
}

// statm writes statm with size and resident in KiB.
func (f *fakeProc) statm(vsz, rss uint64) {
	pg := uint64(os.Getpagesize()) / 1024
	f.write("statm", fmt.Sprintf("%d %d 0 1 0 %d 0\n", vsz/pg, rss/pg, vsz/pg))
}

func (f *fakeProc) smaps(pss uint64) {
	f.write("smaps_rollup", fmt.Sprintf("00400000-7fff0000 ---p 00000000 00:00 0 [rollup]\nRss: %d kB\nPss: %d kB\nPrivate_Dirty: %d kB\nSwap: 0 kB\n", pss, pss, pss))
}

// stat writes stat with a state and a start time (field 22).
func (f *fakeProc) stat(state, start string) {
	fields := make([]string, 50)
	for i := range fields {
		fields[i] = "0"
	}
	fields[0] = state
	fields[statStartTime] = start
	f.write("stat", fmt.Sprintf("%d (fake) %s\n", f.pid, strings.Join(fields, " ")))
}

// exe points exe at target.
func (f *fakeProc) exe(target string) {
	f.t.Helper()
	path := filepath.Join(f.dir, "exe")
	os.Remove(path)
	if err := os.Symlink(target, path); err != nil {
		f.t.Fatal(err)
	}
}

// start starts a sampler on the fake pid that samples only when the test
// calls sample.
func (f *fakeProc) start(opts Options, setup func(*Sampler)) *Sampler {
	f.t.Helper()
	opts.PID, opts.FS, opts.Interval = f.pid, f.fs(), time.Hour
	s, err := New(opts)
	if err != nil {
		f.t.Fatal(err)
	}
	if setup != nil {
		setup(s)
	}
	if err := s.Start(context.Background()); err != nil {
		f.t.Fatal(err)
	}
	return s
}

func stop(t *testing.T, s *Sampler) Result {
	t.Helper()
	r, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestFinalIsLastSample: a process that holds 100 MiB for most of a run
// longer than the timeline and frees it just before it ends. The
// timeline's last point is its bucket's maximum (100 MiB); Last, the
// final sample, is 1.1 MiB RSS and 2.3 MiB VSZ, and First the first.
// (Before, only the bucket maxima were there: probe exec reported the
// final RSS as 11.2 MiB and the final VSZ as 102.3 MiB for such a
// program.)
func TestFinalIsLastSample(t *testing.T) {
	f := newFakeProc(t)
	f.status(mem{anon: 100, file: 900, vsz: 2000, threads: 1})
	f.smaps(500)
	s := f.start(Options{MaxPoints: 4}, nil)
	f.status(mem{anon: 100 << 10, file: 900, vsz: 102 << 10, threads: 1})
	for range 40 {
		if err := s.sample(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	f.status(mem{anon: 226, file: 900, hwm: 100<<10 + 900, vsz: 2355, threads: 1})
	r := stop(t, s)
	checkResult(t, r, 4)
	if end := r.Timeline[len(r.Timeline)-1]; end.RSSBytes != (100<<10+900)<<10 {
		t.Errorf("last point %+v: want the maximum of its bucket", end)
	}
	if r.First.RSSBytes != 1000<<10 || r.First.VSZBytes != 2000<<10 {
		t.Errorf("first %+v: want RSS 1000 KiB, VSZ 2000 KiB", *r.First)
	}
	if r.Last.RSSBytes != 1126<<10 || r.Last.VSZBytes != 2355<<10 || r.Last.VmHWMBytes != (100<<10+900)<<10 {
		t.Errorf("last %+v: want RSS 1126 KiB, VSZ 2355 KiB, VmHWM 101 MiB", *r.Last)
	}
	if r.Peaks.RSSBytes != (100<<10+900)<<10 {
		t.Errorf("peak RSS %d", r.Peaks.RSSBytes)
	}
	// The peak's time is its first sample's, between the first and the
	// last sample, whatever bucket holds it.
	if r.PeakRSSAtMs < r.First.TMs || r.PeakRSSAtMs >= r.Last.TMs || r.PeakRSSAtMs < r.Timeline[0].TMs {
		t.Errorf("peak at %v ms; first sample %v, last %v", r.PeakRSSAtMs, r.First.TMs, r.Last.TMs)
	}
}

// TestNoCarriedFields: a sample that does not read a file has its fields at
// 0 and its count at 0, never the last reading's values: here status is
// read every third sample and smaps_rollup every second, and between them
// RSS goes from 1 MiB to 45 MiB. (Before, the point at 45 MiB RSS said
// VmHWM 1 MiB and RssAnon 0.5 MiB, from the status read before.)
func TestNoCarriedFields(t *testing.T) {
	f := newFakeProc(t)
	f.status(mem{anon: 512, file: 512, vsz: 4096, threads: 1})
	f.statm(4096, 1024)
	f.smaps(900)
	s := f.start(Options{StatusEvery: 3, SmapsEvery: 2, SmapsBudget: -1}, nil)
	f.status(mem{anon: 44 << 10, file: 1 << 10, vsz: 50 << 10, threads: 2})
	f.statm(50<<10, 45<<10)
	f.smaps(40 << 10)
	for range 5 { // samples 1 to 5: status at 3, smaps_rollup at 2 and 4
		if err := s.sample(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	r := stop(t, s) // sample 6 reads status (the last always does) and smaps_rollup
	checkResult(t, r, DefaultMaxPoints)
	p1 := r.Timeline[1]
	if p1.RSSBytes != 45<<20 || p1.StatusSamples != 0 || p1.SmapsSamples != 0 || p1.VmHWMBytes != 0 || p1.RssAnonBytes != 0 || p1.PssBytes != 0 {
		t.Errorf("sample 1 (statm only): %+v; want RSS 45 MiB and nothing else", p1)
	}
	var gotStatus, gotSmaps []int
	for i, p := range r.Timeline {
		if p.StatusSamples > 0 {
			gotStatus = append(gotStatus, i)
		}
		if p.SmapsSamples > 0 {
			gotSmaps = append(gotSmaps, i)
		}
	}
	if fmt.Sprint(gotStatus) != "[0 3 6]" || fmt.Sprint(gotSmaps) != "[0 2 4 6]" {
		t.Errorf("status read in samples %v, smaps_rollup in %v; want [0 3 6], [0 2 4 6]", gotStatus, gotSmaps)
	}
	if r.Peaks.RssAnonBytes != 44<<20 || r.Peaks.PssBytes != 40<<20 || r.StatusSamples != 3 || r.SmapsSamples != 4 {
		t.Errorf("peaks %+v, %d status and %d smaps_rollup reads", r.Peaks, r.StatusSamples, r.SmapsSamples)
	}
}

// TestStatusEverySample: by default every sample reads status, so the
// peaks of RssAnon and VmHWM see a spike one sample long as RSS does, and
// every point's RSS is its RssAnon + RssFile + RssShmem (checkResult).
// (Before, status was read every tenth sample: three 40 MiB spikes gave a
// peak RSS of 38 to 41 MiB beside a peak RssAnon of 5.7 to 12 MiB.)
func TestStatusEverySample(t *testing.T) {
	f := newFakeProc(t)
	base := mem{anon: 1 << 10, file: 2 << 10, vsz: 8 << 10, threads: 1}
	f.status(base)
	f.statm(base.vsz, base.anon+base.file)
	f.smaps(3 << 10)
	s := f.start(Options{}, nil)
	for i := 1; i <= 20; i++ {
		m := base
		if i == 5 {
			m.anon, m.vsz = 41<<10, 48<<10
		}
		f.status(m)
		f.statm(m.vsz, m.anon+m.file)
		if err := s.sample(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	r := stop(t, s)
	checkResult(t, r, DefaultMaxPoints)
	if r.StatusSamples != r.Samples || r.Peaks.RSSBytes != 43<<20 || r.Peaks.RssAnonBytes != 41<<20 || r.Peaks.VmHWMBytes != 43<<20 {
		t.Errorf("%d status reads in %d samples; peaks %+v: want every sample, RSS 43 MiB, RssAnon 41 MiB, VmHWM 43 MiB",
			r.StatusSamples, r.Samples, r.Peaks)
	}
}

// staleAfterExec wraps the smaps_rollup readers the sampler opens: a reader
// opened before the fake execve (gen bumped) fails as the kernel's does
// once the address space it holds is gone, with ESRCH; one opened after
// reads. fail makes every read fail with that error instead.
type staleAfterExec struct {
	gen  atomic.Int32
	fail error
}

type staleReader struct {
	r    reader[procfs.SmapsRollup]
	gen  int32
	from *staleAfterExec
}

func (r *staleReader) Read(s *procfs.SmapsRollup) error {
	if r.from.fail != nil {
		return fmt.Errorf("reading smaps_rollup: %w", r.from.fail)
	}
	if r.gen != r.from.gen.Load() {
		return fmt.Errorf("reading smaps_rollup: %w", syscall.ESRCH)
	}
	return r.r.Read(s)
}

func (r *staleReader) Close() error { return r.r.Close() }

func (x *staleAfterExec) install(s *Sampler) {
	s.open.smaps = func(fs procfs.FS, pid int) (reader[procfs.SmapsRollup], error) {
		r, err := procOpeners.smaps(fs, pid)
		if err != nil {
			return nil, err
		}
		return &staleReader{r: r, gen: x.gen.Load(), from: x}, nil
	}
}

// TestExecReopens: the process calls execve. The smaps_rollup descriptor
// opened before fails with ESRCH from then on; the sampler reopens its
// files and goes on, and records the exec: found by the ESRCH when the
// program's name and exe are unchanged (a shell exec'ing a shell), by the
// new name and exe before any read fails otherwise. (Before, the first
// ESRCH stopped the sampling: "sampling stopped after N samples".)
func TestExecReopens(t *testing.T) {
	for _, c := range []struct {
		name, newName, newExe string
		wantExe               string
	}{
		{"same program", "sh", "/bin/sh", "/bin/sh"},
		{"another program", "python3", "/usr/bin/python3", "/usr/bin/python3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeProc(t)
			f.stat("S", "1234")
			f.exe("/bin/sh")
			f.status(mem{name: "sh", anon: 100, file: 900, vsz: 2000, threads: 1})
			f.smaps(400)
			var x staleAfterExec
			s := f.start(Options{SmapsEvery: 1, SmapsBudget: -1}, x.install)
			if err := s.sample(context.Background()); err != nil {
				t.Fatal(err)
			}
			// execve: a new program, 200 MiB, the same process.
			x.gen.Add(1)
			f.exe(c.newExe)
			f.status(mem{name: c.newName, anon: 200 << 10, file: 3 << 10, vsz: 300 << 10, threads: 1})
			f.smaps(203 << 10)
			for range 3 {
				if err := s.sample(context.Background()); err != nil {
					t.Fatalf("after the exec: %v", err)
				}
			}
			r := stop(t, s)
			checkResult(t, r, DefaultMaxPoints)
			if r.Samples != 6 || r.Reopens != 1 || len(r.Execs) != 1 || r.Execs[0].Exe != c.wantExe || r.Execs[0].Name != c.newName {
				t.Errorf("%d samples, %d reopens, execs %+v: want 6, 1, one exec of %s", r.Samples, r.Reopens, r.Execs, c.wantExe)
			}
			if len(r.Execs) == 1 && r.Execs[0].TMs != r.Timeline[2].TMs {
				t.Errorf("exec at %v ms, want at sample 2's %v ms", r.Execs[0].TMs, r.Timeline[2].TMs)
			}
			if r.Peaks.PssBytes != 203<<20 || r.Peaks.RSSBytes != 203<<20 || r.SmapsSamples != 6 {
				t.Errorf("peaks %+v, %d smaps_rollup reads: want the new program's 203 MiB PSS and RSS, 6 reads", r.Peaks, r.SmapsSamples)
			}
			if len(r.Warnings) != 0 {
				t.Errorf("warnings %q: an exec is not a problem", r.Warnings)
			}
		})
	}
}

// TestReopenGone: a read fails and the process is not there any more:
// /proc/<pid>/stat is another process's (its start time differs), or the
// process is a zombie. The sampler stops, reading nothing of the other
// process.
func TestReopenGone(t *testing.T) {
	for _, c := range []struct{ state, start, want string }{
		{"S", "99999", "another process"},
		{"Z", "1234", "has exited"},
	} {
		f := newFakeProc(t)
		f.stat("S", "1234")
		f.status(mem{anon: 100, file: 900, vsz: 2000, threads: 1})
		f.smaps(400)
		var x staleAfterExec
		s := f.start(Options{SmapsEvery: 1, SmapsBudget: -1}, x.install)
		x.gen.Add(1)
		f.stat(c.state, c.start)
		err := s.sample(context.Background())
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, syscall.ESRCH) {
			t.Errorf("stat %s %s: %v; want an error saying %q, wrapping ESRCH", c.state, c.start, err, c.want)
		}
		r := stop(t, s)
		if r.Samples != 1 || r.Reopens != 0 {
			t.Errorf("stat %s %s: %d samples, %d reopens; want 1, 0", c.state, c.start, r.Samples, r.Reopens)
		}
	}
}

// TestNoSmapsRollup: without smaps_rollup (Linux before 4.14) the sampler
// starts, samples RSS, VSZ and status, and says what it lacks. (Before,
// Start failed, and probe exec ran the program unwatched.)
func TestNoSmapsRollup(t *testing.T) {
	f := newFakeProc(t)
	f.status(mem{anon: 100, file: 900, vsz: 2000, threads: 1})
	s := f.start(Options{}, nil)
	if err := s.sample(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := stop(t, s)
	if r.Samples != 3 || r.SmapsSamples != 0 || r.Peaks.RSSBytes != 1000<<10 || r.Peaks.PssBytes != 0 {
		t.Errorf("%d samples, %d smaps_rollup reads, peaks %+v", r.Samples, r.SmapsSamples, r.Peaks)
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "smaps_rollup") || !strings.Contains(r.Warnings[0], "PSS") ||
		!strings.Contains(r.Warnings[0], "4.14") {
		t.Errorf("warnings %q: want one naming smaps_rollup, PSS and Linux 4.14", r.Warnings)
	}
}

// TestSmapsUnreadable: smaps_rollup fails on fresh descriptors too (a
// set-uid program after an execve, which the probe may not inspect): the
// sampler goes on without it and says so.
func TestSmapsUnreadable(t *testing.T) {
	f := newFakeProc(t)
	f.status(mem{anon: 100, file: 900, vsz: 2000, threads: 1})
	f.smaps(400)
	var x staleAfterExec
	s := f.start(Options{SmapsEvery: 1, SmapsBudget: -1}, x.install)
	x.fail = fs.ErrPermission
	for range 3 {
		if err := s.sample(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	r := stop(t, s)
	if r.Samples != 5 || r.SmapsSamples != 1 || r.Reopens != 1 || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "not sampled") {
		t.Errorf("%d samples, %d smaps_rollup reads, %d reopens, warnings %q", r.Samples, r.SmapsSamples, r.Reopens, r.Warnings)
	}
}

// heldShell starts sh -c script with a pipe on its standard input, which
// the script reads to go on.
func heldShell(t *testing.T, script string) (*exec.Cmd, func()) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	cmd := exec.Command("sh", "-c", script)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	return cmd, func() { in.Write([]byte("go\n")) }
}

// until polls cond for up to 10 s.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestExecReal: a real shell that execs, the kernel's ESRCH on the
// smaps_rollup descriptor opened before: into another program (sleep: its
// name tells), and into the same one (sh: only the ESRCH tells).
func TestExecReal(t *testing.T) {
	for _, c := range []struct{ name, script, wantName string }{
		{"another program", `read x; exec sleep 60`, "sleep"},
		{"same program", `read x; exec sh -c 'read y; echo $y'`, "sh"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd, release := heldShell(t, c.script)
			pid := cmd.Process.Pid
			s, err := New(Options{PID: pid, Interval: time.Hour, SmapsEvery: 1, SmapsBudget: -1})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			// A descriptor of our own, opened now, tells when the exec
			// has happened: it reads ESRCH from then on.
			probe, err := procfs.FS{}.OpenSmapsRollup(pid)
			if err != nil {
				t.Fatal(err)
			}
			defer probe.Close()
			release()
			var sm procfs.SmapsRollup
			until(t, "the exec", func() bool { return errors.Is(probe.Read(&sm), syscall.ESRCH) })
			for range 3 {
				if err := s.sample(context.Background()); err != nil {
					t.Fatalf("after the exec: %v", err)
				}
			}
			r := stop(t, s)
			checkResult(t, r, DefaultMaxPoints)
			if r.Samples != 5 || r.SmapsSamples != 5 || r.Reopens != 1 || len(r.Execs) != 1 || r.Execs[0].Name != c.wantName {
				t.Errorf("%d samples, %d smaps_rollup reads, %d reopens, execs %+v: want 5, 5, 1, one exec of %s",
					r.Samples, r.SmapsSamples, r.Reopens, r.Execs, c.wantName)
			}
		})
	}
}

// TestZombieNotSampled: a child that has exited and waits to be reaped has
// no address space (its statm reads 0, its status has no Vm lines): the
// sample fails, wrapping ESRCH, and the timeline ends with the last sample
// of the live process instead of a point of zeros. (Before, the zombie's
// zeros were a sample, and the last one.)
func TestZombieNotSampled(t *testing.T) {
	cmd, release := heldShell(t, `read x`)
	pid := cmd.Process.Pid
	s, err := New(Options{PID: pid, Interval: time.Hour, SmapsEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	release()
	stat := procfs.FS{}.Path(pid, "stat")
	until(t, "the zombie", func() bool { f := procfs.StatFields(stat); return len(f) > 0 && f[0] == "Z" })
	if err := s.sample(context.Background()); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("sampling a zombie: %v, want an error wrapping ESRCH", err)
	}
	r := stop(t, s)
	if r.Samples != 1 || r.Last == nil || r.Last.VSZBytes == 0 || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "final sample") {
		t.Errorf("%d samples, last %+v, warnings %q; want the one sample of the live shell and a warning for the final sample", r.Samples, r.Last, r.Warnings)
	}
	for _, p := range r.Timeline {
		if p.VSZBytes == 0 {
			t.Errorf("a point of zeros: %+v", p)
		}
	}
}
