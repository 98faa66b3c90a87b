package sites

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"syscall"
	"time"

	"memprobe/schema"
)

// LiveReader reads the record files of a directory while the program
// writes them (the live view of --sites): each Poll reads what the files
// gained since the last one and keeps the sampled blocks in use, by
// stack; Top names the largest sites.
//
// What it shows lags and is approximate where the final replay is not:
//   - a thread's records reach the file when its buffer is written, at
//     least once a second while the thread allocates or frees; a thread
//     that stopped doing either shows its state at its last write;
//   - the files hold each thread's records in order but not the threads'
//     in seq order, so events are applied as read, their effect decided
//     by seq, which gives what the replay in seq order of the same
//     records does: an allocator block's address holds its latest
//     allocation read unless a free read has a larger seq; each byte of
//     the program's mappings is in the latest mapping read that covers
//     it unless a munmap read covering it has a larger seq (a munmap
//     cuts a mapping, as in the replay: what is left counts a block a
//     piece). What holds nothing in use (an address freed, a range
//     unmapped) is remembered for forgetRounds polls after its last
//     event, for allocations written before the free but read after it;
//     one read later than that stays in use;
//   - an image that ended (exit, execve, or its process gone) holds
//     nothing in use.
//
// A LiveReader is not safe for concurrent use.
type LiveReader struct {
	dir   string
	round int
	files map[string]*liveFile
	// b names stacks: its symbolizer opens each ELF file once.
	b *builder
	// names are the stacks named, by file and hash; tries counts the
	// namings left unkept (a frame outside every mapping read).
	names map[liveKey]*named
	tries map[liveKey]int
	// NameBudget bounds the time one Top spends naming new stacks (the
	// largest first); the rest are named by the next calls.
	NameBudget time.Duration
	// PollBytes bounds the records one Poll reads, so that a view that
	// polls between frames keeps drawing them where the program writes
	// records faster than they are read (rate 1); behind is what was
	// left for the next Poll.
	PollBytes int64
	behind    int64
}

// forgetRounds is how many polls an address with nothing in use is
// remembered after its last event: its frees wait that long for their
// allocations (a thread writes its records at least once a second while
// it records).
const forgetRounds = 10

type liveKey struct {
	path string
	hash uint64
}

// liveFile is one record file read so far.
type liveFile struct {
	path string
	off  int64 // the bytes of whole records read
	im   *image
	// done: the image ended or the file cannot be read; nothing of it
	// is in use.
	done bool
	torn string
	// addrs are the allocator's blocks (kinds heap and chunk) by
	// address; segs the program's mappings (kind mmap): the ranges of
	// the address space that mmaps and munmaps covered, sorted, apart.
	addrs   map[uint64]addrState
	segs    []seg
	byStack map[uint64]*liveUse
	// dead are the addresses left with nothing in use at each poll, to
	// forget forgetRounds polls later.
	dead map[int][]uint64
	// maps are the process's mappings, read from /proc at mapsRound.
	maps      []mapping
	mapsRound int
}

type liveBlock struct {
	seq, size, stack uint64
	kind             uint8
}

// addrState is an address's events read: its latest allocation and
// its latest free.
type addrState struct {
	alloc liveBlock
	has   bool // alloc is set
	live  bool // alloc is in use
	// freeSeq is the seq + 1 of the latest free read; 0 for none.
	freeSeq uint64
	round   int // the poll of the last event
}

// seg is a range of the address space [lo, hi) that the event seq
// covered last of those read: a mapping's bytes (m), or unmapped (m
// nil, since round).
type seg struct {
	lo, hi, seq uint64
	m           *liveMap
	round       int
}

// liveMap is a sampled mapping of the program's: what is left of it
// counts bytes at the mapping's weight per byte and a block a piece
// (a run of its bytes), as the replay's pieces.
type liveMap struct {
	start, end, size, stack uint64
	bytes, objects          float64 // what it counts now
}

type liveUse struct{ bytes, objects float64 }

// NewLiveReader reads the record files of dir (EnvDir).
func NewLiveReader(dir string) *LiveReader {
	return &LiveReader{dir: dir, files: map[string]*liveFile{}, b: &builder{sym: newSymbolizer(), libName: LibName},
		names: map[liveKey]*named{}, tries: map[liveKey]int{}, NameBudget: 300 * time.Millisecond, PollBytes: 32 << 20}
}

// Poll reads the records written since the last Poll, up to PollBytes
// of them. A record cut by the end of what is written is read by a later
// Poll. Files that vanish
// (the directory removed at the program's end) are left as they were;
// the error names a file that cannot be read as records, which is then
// left out.
func (l *LiveReader) Poll() error {
	l.round++
	paths, err := filepath.Glob(filepath.Join(l.dir, "sites.*.bin"))
	if err != nil {
		return err
	}
	var errs []error
	budget := l.PollBytes
	l.behind = 0
	for _, p := range paths {
		f := l.files[p]
		if f == nil {
			f = newLiveFile(p)
			l.files[p] = f
		}
		if f.done {
			continue
		}
		n, behind, err := f.read(l.round, budget)
		if err != nil {
			errs = append(errs, err)
		}
		budget = max(budget-n, 0)
		l.behind += behind
		if f.im != nil && !f.done && !alive(f.im.pid) {
			f.end()
		}
		if f.done { // ended now: its stacks' names go too
			for k := range l.names {
				if k.path == p {
					delete(l.names, k)
				}
			}
			for k := range l.tries {
				if k.path == p {
					delete(l.tries, k)
				}
			}
		}
	}
	return errors.Join(errs...)
}

func newLiveFile(path string) *liveFile {
	return &liveFile{path: path, addrs: map[uint64]addrState{}, byStack: map[uint64]*liveUse{}, dead: map[int][]uint64{}}
}

// alive says whether pid is a process.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// end drops an image's state: it holds nothing in use.
func (f *liveFile) end() {
	f.done = true
	f.addrs, f.segs, f.byStack, f.dead, f.maps = nil, nil, nil, nil, nil
}

// read reads f's new whole records, up to budget bytes of them, and
// applies their events: the bytes read, and those left to read.
func (f *liveFile) read(round int, budget int64) (n, behind int64, err error) {
	fh, err := os.Open(f.path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, 0, nil
		}
		return 0, 0, err
	}
	defer fh.Close()
	if f.im == nil {
		var h [headerLen]byte
		if k, _ := io.ReadFull(fh, h[:]); k < headerLen {
			return 0, 0, nil // the header is being written
		}
		im, err := parseHeader(f.path, h[:])
		if err != nil {
			f.torn = err.Error()
			f.end()
			return 0, 0, err
		}
		f.im, f.off = im, headerLen
	}
	if _, err := fh.Seek(f.off, io.SeekStart); err != nil {
		return 0, 0, err
	}
	d := decoder{r: bufio.NewReaderSize(fh, 256<<10)}
	var bad error
	for d.n < budget {
		err := d.next(f.im)
		for i := range f.im.events {
			f.apply(&f.im.events[i], round)
		}
		f.im.events = f.im.events[:0]
		if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
			break // a record cut here is whole next time
		}
		if err != nil {
			bad = fmt.Errorf("reading %s at byte %d: %w", f.path, f.off+d.n, err)
			break
		}
	}
	f.off += d.n
	if fi, err := fh.Stat(); err == nil {
		behind = max(fi.Size()-f.off, 0)
	}
	f.im.maps = nil // written at exit, exec and dlclose: /proc is read instead
	old := round - forgetRounds
	for _, a := range f.dead[old] {
		if st, ok := f.addrs[a]; ok && !st.live && st.round <= old {
			delete(f.addrs, a)
		}
	}
	delete(f.dead, old)
	f.segs = slices.DeleteFunc(f.segs, func(s seg) bool { return s.m == nil && s.round <= old })
	if bad != nil {
		f.torn = bad.Error()
		f.end()
		return d.n, 0, bad
	}
	if f.im.ended {
		f.end()
	}
	return d.n, behind, nil
}

// apply plays one event. Read in any order, the events leave the
// blocks in use as the replay in seq order does. An allocator block:
// every allocation ends the one before at its address (replay's rule
// for a free not recorded), so only the latest can be in use, and it is
// unless a free has a larger seq. A mapping: each byte is the latest
// mmap's or munmap's that covers it.
func (f *liveFile) apply(e *event, round int) {
	switch {
	case e.free && e.flags&flagMunmap != 0:
		// The kernel unmaps whole pages from a page-aligned address;
		// another munmap fails and unmaps nothing.
		if e.addr%pageSize == 0 && e.size != 0 {
			f.cover(e.addr, pagesEnd(e.addr, e.size), e.seq, nil, round)
		}
		return
	case !e.free && e.kind == kindProtect:
		return
	case !e.free && mappingKind(e.kind):
		end := e.addr + e.size
		if end < e.addr {
			return
		}
		var m *liveMap // a reservation ends what it covers and holds nothing (V8's commits by mprotect are not followed live)
		if e.kind == kindMmap {
			m = &liveMap{start: e.addr, end: end, size: e.size, stack: e.stack}
		}
		f.cover(e.addr, end, e.seq, m, round)
		if pe := pagesEnd(e.addr, e.size); pe > end {
			f.cover(end, pe, e.seq, nil, round)
		}
		return
	}
	st, known := f.addrs[e.addr]
	wasLive, last := st.live, st.round
	if !e.free {
		if st.has && e.seq < st.alloc.seq {
			return // an older block, ended by the latest
		}
		if st.live {
			f.use(st.alloc, -1)
		}
		st.alloc, st.has = liveBlock{seq: e.seq, size: e.size, stack: e.stack, kind: e.kind}, true
		st.live = st.freeSeq <= e.seq
		if st.live {
			f.use(st.alloc, 1)
		}
	} else {
		st.freeSeq = max(st.freeSeq, e.seq+1)
		if st.live && e.seq > st.alloc.seq {
			st.live = false
			f.use(st.alloc, -1)
		}
	}
	st.round = round
	f.addrs[e.addr] = st
	if !st.live && (wasLive || !known || last != round) {
		f.dead[round] = append(f.dead[round], e.addr) // once a poll
	}
}

// cover gives [lo, hi) to the event seq (m's bytes, or unmapped where m
// is nil) wherever no later event read holds it, and recounts the
// mappings that lost or gained bytes.
func (f *liveFile) cover(lo, hi, seq uint64, m *liveMap, round int) {
	i := sort.Search(len(f.segs), func(i int) bool { return f.segs[i].hi > lo })
	j := i
	for j < len(f.segs) && f.segs[j].lo < hi {
		j++
	}
	var out []seg
	put := func(s seg) {
		if n := len(out); n > 0 && out[n-1].hi == s.lo && out[n-1].m == s.m && out[n-1].seq == s.seq {
			out[n-1].hi = s.hi
			return
		}
		out = append(out, s)
	}
	touched := map[*liveMap]bool{}
	if m != nil {
		touched[m] = true
	}
	mine := seg{seq: seq, m: m, round: round}
	cur := lo
	for _, s := range f.segs[i:j] {
		if s.lo < lo {
			head := s
			head.hi = lo
			put(head)
		}
		if s.lo > cur {
			mine.lo, mine.hi = cur, s.lo
			put(mine)
		}
		a, b := max(s.lo, lo), min(s.hi, hi)
		if s.seq > seq {
			kept := s
			kept.lo, kept.hi = a, b
			put(kept)
		} else {
			mine.lo, mine.hi = a, b
			put(mine)
			if s.m != nil {
				touched[s.m] = true
			}
		}
		cur = b
		if s.hi > hi {
			tail := s
			tail.lo = hi
			put(tail)
		}
	}
	if cur < hi {
		mine.lo, mine.hi = cur, hi
		put(mine)
	}
	f.segs = slices.Replace(f.segs, i, j, out...)
	for t := range touched {
		f.recount(t)
	}
}

// recount sets what m counts from the segments left of it.
func (f *liveFile) recount(m *liveMap) {
	i := sort.Search(len(f.segs), func(i int) bool { return f.segs[i].hi > m.start })
	var n uint64
	runs := 0
	prev := -1
	for ; i < len(f.segs) && f.segs[i].lo < m.end; i++ {
		if s := f.segs[i]; s.m == m {
			n += s.hi - s.lo
			if prev < 0 || f.segs[prev].m != m || f.segs[prev].hi != s.lo {
				runs++
			}
			prev = i
		} else {
			prev = -1
		}
	}
	o, b := weight(m.size, f.im.rate)
	bytes, objects := b/float64(m.size)*float64(n), o*float64(runs)
	f.add(m.stack, bytes-m.bytes, objects-m.objects)
	m.bytes, m.objects = bytes, objects
}

// use adds a block's weight (sign 1) to its stack's, or takes it away.
func (f *liveFile) use(b liveBlock, sign float64) {
	o, by := weight(b.size, f.im.rate)
	f.add(b.stack, sign*by, sign*o)
}

// add adds bytes and objects to a stack's.
func (f *liveFile) add(stack uint64, bytes, objects float64) {
	if bytes == 0 && objects == 0 {
		return
	}
	u := f.byStack[stack]
	if u == nil {
		u = &liveUse{}
		f.byStack[stack] = u
	}
	u.bytes += bytes
	u.objects += objects
	if u.objects < 0.5 && u.objects > -0.5 {
		delete(f.byStack, stack)
	}
}

// LiveTop is the sampled blocks in use of the images that have not
// ended, as of their last records read (the live view draws it).
type LiveTop = schema.LiveSites

// LiveSite is a site with blocks in use.
type LiveSite = schema.LiveSite

// Top is the n sites with the most bytes in use, naming the stacks it
// has not named yet (largest first, within NameBudget): the process's
// maps are read from /proc, where the records have none until the end.
func (l *LiveReader) Top(n int) LiveTop {
	type stackUse struct {
		f    *liveFile
		hash uint64
		use  liveUse
	}
	t := LiveTop{BehindBytes: l.behind}
	var all []stackUse
	var bytes, objects float64
	for _, f := range l.files {
		if f.done || f.im == nil {
			continue
		}
		t.Processes++
		t.Rate = f.im.rate
		for h, u := range f.byStack {
			all = append(all, stackUse{f, h, *u})
			bytes += u.bytes
			objects += u.objects
		}
	}
	t.Bytes, t.Objects = round(bytes), round(objects)
	sort.Slice(all, func(i, j int) bool {
		if all[i].use.bytes != all[j].use.bytes {
			return all[i].use.bytes > all[j].use.bytes
		}
		return all[i].hash < all[j].hash
	})
	type siteUse struct {
		site LiveSite
		b, o float64
	}
	bySite := map[string]*siteUse{}
	start := time.Now()
	for _, s := range all {
		k := liveKey{s.f.path, s.hash}
		nm := l.names[k]
		if nm == nil && time.Since(start) < l.NameBudget {
			nm = l.name(s.f, k)
		}
		if nm == nil {
			t.Unnamed++
			t.UnnamedBytes += round(s.use.bytes)
			continue
		}
		fr := nm.rowFrame() // a Python program's: its innermost Python frame
		key := fr.fn + "\x00" + fr.file + "\x00" + fmt.Sprint(fr.line)
		su := bySite[key]
		if su == nil {
			su = &siteUse{site: LiveSite{Function: fr.fn, File: fr.file, Line: fr.line}}
			bySite[key] = su
		}
		su.b += s.use.bytes
		su.o += s.use.objects
	}
	sites := make([]*siteUse, 0, len(bySite))
	for _, su := range bySite {
		if su.b >= 0.5 || su.o >= 0.5 {
			sites = append(sites, su)
		}
	}
	sort.Slice(sites, func(i, j int) bool {
		if sites[i].b != sites[j].b {
			return sites[i].b > sites[j].b
		}
		return sites[i].site.Function < sites[j].site.Function
	})
	t.Sites = len(sites)
	for _, su := range sites[:min(n, len(sites))] {
		s := su.site
		s.Bytes, s.Objects = round(su.b), round(su.o)
		t.Top = append(t.Top, s)
	}
	return t
}

// name names a stack of f from its process's maps, read again once a
// round where a stack needs them, its Python frames merged in as the
// report's (nameStack). A stack with a frame outside every mapping (code
// mapped after the read) or a Python frame whose code object was not
// read yet is named again later, up to three times.
func (l *LiveReader) name(f *liveFile, k liveKey) *named {
	if f.maps == nil || f.mapsRound != l.round {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", f.im.pid)); err == nil {
			f.maps, f.mapsRound = parseMaps(string(b)), l.round
		}
	}
	nm, _ := l.b.nameStack(f.im, f.maps, k.hash)
	complete := true
	for _, fr := range nm.frames {
		if fr.m == nil && fr.obj != pyObj {
			complete = false
		}
	}
	for _, r := range f.im.pyStacks[k.hash] {
		if f.im.codes[r.key] == nil {
			complete = false // its code object's record not read yet
		}
	}
	if complete || l.tries[k] >= 2 {
		l.names[k] = nm
		delete(l.tries, k)
	} else {
		l.tries[k]++
	}
	return nm
}
