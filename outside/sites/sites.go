// Package sites finds the allocation sites of any dynamically linked
// program: the view behind `probe exec --sites`.
//
// Its pipeline:
//
//  1. preload/sites.c, built into libmemprobe-sites.so next to bin/probe
//     (make build) and put in the program's LD_PRELOAD by Env, wraps the
//     C allocator and the program's anonymous mmap/munmap, samples
//     allocations by bytes and unwinds the sampled ones in the program
//     (by .eh_frame's rules on x86-64, else libunwind or libgcc's
//     unwinder), writing binary records, one file per
//     process image, to a directory (records.go says the format).
//  2. Analyze reads them, replays each image's events in order (the
//     in-use bytes, their peak, the blocks at the peak and at exit, the
//     temporary blocks), streamed from the file (its memory is the live
//     blocks' and the sites', not the allocations'), names the stacks outside the program from the
//     maps the library wrote (ELF symbol tables, DWARF lines, separate
//     debug files by build ID, C++ demangling), and writes the pprof
//     profiles alloc, peak and exit.
//  3. With the smaps walks of outside, it splits glibc's arenas'
//     resident bytes into in use and free but resident.
//
// While the program runs, LiveReader reads the same files as they grow
// (exec --live --sites): the sampled blocks in use and the top sites, as
// of each thread's last write.
//
// Figures are scaled from the samples as Go's heap profiler scales its
// own; at rate 1 every allocation is recorded and they are exact.
package sites

import (
	"cmp"
	"debug/elf"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"memprobe/schema"
)

// Names of the library (options.go names its environment).
const (
	// LibName is the library's file name, next to the probe's executable.
	LibName = "libmemprobe-sites.so"
	// EnvLib overrides where the library is looked up (tests).
	EnvLib = "MEMPROBE_SITES_LIB"
)

// ErrNoLibrary is wrapped by FindLibrary's error.
var ErrNoLibrary = errors.New("the allocation-site library is not built")

// FindLibrary is the library's path: $MEMPROBE_SITES_LIB, else
// libmemprobe-sites.so beside the running executable.
func FindLibrary() (string, error) {
	if p := os.Getenv(EnvLib); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvLib, p, ErrNoLibrary)
		}
		return p, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("%w: cannot find the probe's executable: %v", ErrNoLibrary, err)
	}
	p := filepath.Join(filepath.Dir(exe), LibName)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%w: %s is missing (make build builds it beside bin/probe, or set %s)", ErrNoLibrary, p, EnvLib)
	}
	return p, nil
}

// ErrNoRecords is wrapped by Analyze's error when the program wrote none.
var ErrNoRecords = errors.New("no allocation records")

// Walk is an smaps walk of the headline process to split its arenas at:
// MonoNs is its CLOCK_MONOTONIC time, BrkBytes and ArenasBytes the
// resident bytes of the brk heap and of the other arenas' heaps, Heaps
// those heaps one by one.
type Walk struct {
	// PID is the process walked: 0 (or Options.PID) is the program's,
	// another a descendant's.
	PID    int
	At     string
	AtMs   float64
	MonoNs uint64
	// Ns is how long the walk took: smaps is read over that time, and
	// a mapping made or unmapped meanwhile may be in it.
	Ns                    uint64
	BrkBytes, ArenasBytes int64
	Heaps                 []WalkHeap
	// Unexplained are the anonymous ranges the walk's reconciliation
	// left unexplained, each with its resident bytes.
	Unexplained []WalkRange
}

// WalkRange is an address range of a walk and its resident bytes.
type WalkRange struct {
	Start, End    uint64
	ResidentBytes int64
}

// WalkHeap is one of glibc's 64 MiB heaps at a walk (reconcile's
// MallocHeap): Arena is its heap_info.ar_ptr where the walk read it, 0
// otherwise.
type WalkHeap struct {
	Start         uint64
	ResidentBytes int64
	Arena         uint64
}

// heapMaxBytes is glibc's HEAP_MAX_SIZE on 64-bit: an arena's heaps are
// this size and aligned to it, so a block's heap is its address rounded
// down to it.
const heapMaxBytes = 64 << 20

// Options are what Analyze reads and writes.
type Options struct {
	// Dir holds the record files.
	Dir string
	// OutDir receives the profiles.
	OutDir string
	// PID is the program started: the headline is its last image.
	PID int
	// Top is the number of sites of each table (0: 10).
	Top int
	// StartMono is when the watch began (CLOCK_MONOTONIC, ns): the
	// walks' clock, from which ImageStartMs counts. 0: not known.
	StartMono uint64
	// Walks are the walks to split the arenas at and join the
	// unexplained ranges with: of each image, the last of its pid that
	// falls inside its life (for the join, its peak walk first).
	Walks []Walk
}

// Analyze reads the records of o.Dir and writes the profiles to o.OutDir.
// The warnings say what the figures lack (images that did not end
// cleanly, files cut short).
func Analyze(o Options) (*schema.Sites, []string, error) {
	if o.Top <= 0 {
		o.Top = 10
	}
	ims, err := readDir(o.Dir)
	if err != nil {
		return nil, nil, err
	}
	if len(ims) == 0 {
		return nil, nil, ErrNoRecords
	}
	a := &analysis{o: o, big: -1, pyUnplaced: map[string]int{}, b: newBuilder(LibName, ims[0].rate), s: &schema.Sites{Profiles: []schema.SitesProfile{},
		TopPeak: []schema.Site{}, TopExit: []schema.Site{}, TopTemporary: []schema.Site{}, Processes: []schema.SitesProcess{}}}
	a.s.RateBytes = int64(ims[0].rate)
	a.s.Exact = ims[0].rate <= 1
	for _, im := range ims {
		a.image(im)
	}
	a.warns = append(a.warns, ownAllocators(a.s.Processes)...)
	a.warns = append(a.warns, pyUnplacedWarnings(a.pyUnplaced)...)
	a.headline()
	a.tops()
	a.s.PyLines = pyLines(a.headSites, a.o.Top)
	hw := walksIn(o.Walks, a.head.im, func(pid int) bool { return pid == 0 || pid == a.head.im.pid })
	a.s.Fragmentation = fragmentation(a.head, hw)
	a.s.Unexplained = unexplained(a.b, a.head, a.headMaps, hw)
	if o.OutDir != "" {
		if a.s.Profiles, err = a.b.write(o.OutDir); err != nil {
			return nil, a.warns, fmt.Errorf("writing the sites profiles: %w", err)
		}
	}
	return a.s, a.warns, nil
}

// analysis is Analyze's state: the result so far, the images' stacks
// named (b), the headline image (head: the program's last image, else
// the first one recorded) and the image with the most in use at its peak
// (big: where it is not the headline's, its top sites are listed too).
type analysis struct {
	o         Options
	s         *schema.Sites
	b         *builder
	warns     []string
	head      *replayed
	headSites []*siteAcc
	headMaps  []mapping
	big       int // in s.Processes; -1 before the first
	bigPeak   float64
	bigSites  []*siteAcc
	// pyUnplaced counts, by executable, the stacks whose Python frames
	// could not all be put at an eval-loop frame.
	pyUnplaced map[string]int
}

// image replays im and adds it: its process, its sites, its figures.
func (a *analysis) image(im *image) {
	// The walks the arena split may read: the headline's (a candidate:
	// the first image, or the program's pid) and the image's own.
	own := walksIn(a.o.Walks, im, func(pid int) bool { return pid == im.pid })
	var head []Walk
	if a.head == nil || im.pid == a.o.PID {
		head = walksIn(a.o.Walks, im, func(pid int) bool { return pid == 0 || pid == im.pid })
	}
	maps, exe := a.imageMaps(im)
	goProg := isGoProgram(exe)
	if goProg {
		a.goRuntime(im, maps, exe)
	}
	r := replay(im, useAtWalks(im.startNs, own, head))
	if r.source == "counted" {
		r.scaleToCount()
	}
	ended := a.ended(im, goProg)
	if im.torn != "" {
		a.warns = append(a.warns, fmt.Sprintf("sites: %s: %s; what came before is kept", filepath.Base(im.path), im.torn))
	}
	all := a.sites(im, r, maps)
	a.s.Processes = append(a.s.Processes, schema.SitesProcess{
		PID: im.pid, PPID: im.ppid, Image: im.n, Executable: exe,
		PeakInUseBytes: round(r.peak), PeakMappedBytes: min(round(r.peakMapped), round(r.peak)), ExitInUseBytes: round(r.exit),
		AllocObjects: r.allocObjects(), AllocBytes: r.allocBytes(), TemporaryObjects: round(r.temp), Ended: ended,
	})
	// The headline is the program's last image (images are sorted by
	// pid and number), else the first one recorded.
	if a.head == nil || im.pid == a.o.PID {
		a.head, a.headMaps, a.headSites = r, maps, all
	}
	if im.pid != a.o.PID {
		if ws := walksIn(a.o.Walks, im, func(pid int) bool { return pid == im.pid }); len(ws) > 0 {
			pr := &a.s.Processes[len(a.s.Processes)-1]
			pr.Fragmentation, pr.Unexplained = fragmentation(r, ws), unexplained(a.b, r, maps, ws)
		}
	}
	if a.big < 0 || r.peak > a.bigPeak {
		a.big, a.bigPeak, a.bigSites = len(a.s.Processes)-1, r.peak, all
	}
}

// ended is how im ended, as SitesProcess.Ended says it; an image that
// wrote no end gets a warning. A Go program (goProg) gets one line of
// what --sites sees of it, whatever its end: its runtime exits by the
// system call, without the C library's exit, and writes no end.
func (a *analysis) ended(im *image, goProg bool) string {
	if goProg {
		a.warns = append(a.warns, fmt.Sprintf("sites: pid %d (image %d) is a Go program: --sites sees its C allocations (cgo, C libraries) and its own mmaps, not its Go heap (the runtime's mappings are left out; --pprof shows the Go heap), and its runtime exits without the C library's exit, so the allocations of its last record buffer may be missing", im.pid, im.n))
	}
	switch {
	case im.ended && im.endHow == 1:
		return "execve"
	case im.ended && im.endHow == 2:
		return "signal"
	case im.ended:
		return "exit"
	}
	if goProg {
		return "unflushed"
	}
	a.warns = append(a.warns, fmt.Sprintf("sites: pid %d (image %d) ended without writing its records (SIGKILL, a crash, or a handler of its own that ended it without exit): its figures lack the allocations of its last buffer", im.pid, im.n))
	return "unflushed"
}

// imageMaps is im's memory maps, by start: the last written, and the
// libraries dlclosed before it, with the executable's path.
func (a *analysis) imageMaps(im *image) (maps []mapping, exe string) {
	if len(im.maps) == 0 {
		if im.nEvents > 0 || len(im.events) > 0 {
			a.warns = append(a.warns, fmt.Sprintf("sites: pid %d (image %d) wrote no memory maps: its frames are addresses", im.pid, im.n))
		}
		return nil, ""
	}
	maps = parseMaps(im.maps[len(im.maps)-1])
	// The earlier maps (the start's, and each dlclose's) add what the
	// last lacks: the libraries dlclosed since.
	type span struct {
		start, end uint64
		path       string
	}
	have := map[span]bool{}
	for _, m := range maps {
		have[span{m.start, m.end, m.path}] = true
	}
	for _, old := range im.maps[:len(im.maps)-1] {
		for _, m := range parseMaps(old) {
			if k := (span{m.start, m.end, m.path}); !have[k] {
				have[k] = true
				maps = append(maps, m)
			}
		}
	}
	sort.SliceStable(maps, func(i, j int) bool { return maps[i].start < maps[j].start })
	return maps, executablePath(maps)
}

// sites names im's stacks, adds them to the profiles, and sums them by
// site.
func (a *analysis) sites(im *image, r *replayed, maps []mapping) []*siteAcc {
	sites := map[string]*siteAcc{}
	// In an image with Python frames, a stack without any is a thread
	// with no Python state (OpenMP's, OpenBLAS's workers), or the
	// interpreter before its start or in its end: its row says so.
	python := len(im.pyStacks) > 0
	for h, x := range r.byStack {
		n, unplaced := a.b.nameStack(im, maps, h)
		if unplaced {
			a.pyUnplaced[filepath.Base(executablePath(maps))]++
		}
		a.b.add(im.pid, n, x)
		key := n.rowFrame().key()
		if python && n.pySite() < 0 {
			key = "native\x00" + key
		}
		sa := sites[key]
		if sa == nil {
			sa = &siteAcc{}
			sites[key] = sa
		}
		sa.stacks = append(sa.stacks, stackAcc{n, x})
		sa.acc.add(x)
		sa.nativeOnly = python && n.pySite() < 0
	}
	all := make([]*siteAcc, 0, len(sites))
	for _, sa := range sites {
		all = append(all, sa)
	}
	return all
}

// add adds x's figures to a's.
func (a *acc) add(x *acc) {
	a.allocObj += x.allocObj
	a.allocBytes += x.allocBytes
	a.peakObj += x.peakObj
	a.peakBytes += x.peakBytes
	a.exitObj += x.exitObj
	a.exitBytes += x.exitBytes
	a.tempObj += x.tempObj
	a.mapped = a.mapped || x.mapped
	a.allocVar += x.allocVar
	a.peakVar += x.peakVar
	a.exitVar += x.exitVar
}

// headline sets the result's figures from the headline image.
func (a *analysis) headline() {
	s, head, o := a.s, a.head, a.o
	if head.im.pid != o.PID && o.PID != 0 {
		a.warns = append(a.warns, fmt.Sprintf("sites: no records of pid %d itself: the figures are pid %d's", o.PID, head.im.pid))
	}
	s.PID, s.PeakSource = head.im.pid, head.source
	s.PeakInUseBytes, s.PeakInUseObjects, s.PeakAtMs = round(head.peak), round(head.peakObj), float64(head.peakNs)/1e6
	if o.StartMono > 0 {
		s.ImageStartMs = (float64(head.im.startNs) - float64(o.StartMono)) / 1e6
	}
	s.PeakMappedBytes = min(round(head.peakMapped), s.PeakInUseBytes)
	s.ExitInUseBytes, s.ExitInUseObjects = round(head.exit), round(head.exitObj)
	if n := head.allocObjects(); n > 0 {
		// A sampled small block stands for thousands (a 35 B block
		// for 15,000 at the default rate): no more in use than were
		// allocated (bash read 14,980 blocks at its peak of 958) or
		// committed.
		s.PeakInUseObjects, s.ExitInUseObjects = min(s.PeakInUseObjects, n), min(s.ExitInUseObjects, n)
	}
	s.AllocObjects, s.AllocBytes, s.SampledObjects = head.allocObjects(), head.allocBytes(), head.sampled
	s.TemporaryObjects = round(head.temp)
}

// tops lists the headline's top sites at the peak, at exit and of
// temporary blocks, and the biggest image's at its peak where it is not
// the headline's.
func (a *analysis) tops() {
	s, n := a.s, a.o.Top
	peak := func(x *acc) (float64, float64, float64) { return x.peakBytes, x.peakObj, x.peakVar }
	unnamed := map[string]*unnamedUse{}
	s.TopPeak = top(a.headSites, n, peak, false, s.AllocObjects, unnamed)
	s.TopExit = top(a.headSites, n, func(x *acc) (float64, float64, float64) { return x.exitBytes, x.exitObj, x.exitVar }, false, s.AllocObjects, unnamed)
	s.TopTemporary = top(a.headSites, n, func(x *acc) (float64, float64, float64) { return x.allocBytes, x.allocObj, x.allocVar }, true, s.AllocObjects, unnamed)
	if pr := &s.Processes[a.big]; pr.PeakInUseBytes > s.PeakInUseBytes && a.bigPeak > a.head.peak {
		pr.TopPeak = top(a.bigSites, n, peak, false, pr.AllocObjects, unnamed)
	}
	a.warns = append(a.warns, a.b.sym.unnamedWarnings(unnamed)...)
}

// siteAcc is one site's figures, summed over its stacks.
type siteAcc struct {
	stacks []stackAcc
	acc    acc
	// nativeOnly: the image has Python frames, this site's stacks none.
	nativeOnly bool
}

type stackAcc struct {
	n *named
	a *acc
}

// shown is the stack a site shows in a table: its heaviest by the
// table's figure (then by bytes allocated, then by its frames' names, so
// that two runs show the same one), that stack's share of the site's
// figure, and how many of the site's stacks have some of it. An
// allocation wrapper (Perl_safesysmalloc, xmalloc) is one site reached by
// many stacks; shown by bytes allocated, a wrapper's row in the peak
// table named a caller whose blocks were long freed.
func (sa *siteAcc) shown(figure func(*acc) float64) (n *named, sharePct float64, stacks int) {
	best, total := 0, 0.0
	for i, st := range sa.stacks {
		v := figure(st.a)
		if v > 0 {
			stacks++
			total += v
		}
		b := sa.stacks[best]
		if bv := figure(b.a); v > bv || v == bv && (st.a.allocBytes > b.a.allocBytes ||
			st.a.allocBytes == b.a.allocBytes && stackKey(st.n) < stackKey(b.n)) {
			best = i
		}
	}
	if total > 0 {
		sharePct = 100 * figure(sa.stacks[best].a) / total
	}
	return sa.stacks[best].n, sharePct, stacks
}

// siteFrame is the site's frame (every stack of a site has it): the
// innermost Python frame where its stacks have them.
func (sa *siteAcc) siteFrame() frame { return sa.stacks[0].n.rowFrame() }

// stackKey is a stack's frames' names, to order stacks of equal weight.
func stackKey(n *named) string {
	var b strings.Builder
	for _, f := range n.frames {
		b.WriteString(f.fn)
		b.WriteByte(0)
	}
	return b.String()
}

// top is the n largest sites by what value picks (bytes, then objects,
// and the bytes' variance), or by temporary blocks. A site's blocks are
// at most allocated, the image's count of all its allocations (where
// above 0), as the totals are: a sampled small block stands for
// thousands, and rs's HashMap site read 208,444 blocks in use of the
// 200,044 the program ever allocated. unnamed gathers, by object, the
// sites listed whose stack (as listed) has a frame of it named by
// address.
func top(sites []*siteAcc, n int, value func(*acc) (bytes, obj, variance float64), temporary bool, allocated int64, unnamed map[string]*unnamedUse) []schema.Site {
	var keep []*siteAcc
	for _, sa := range sites {
		b, o, _ := value(&sa.acc)
		if temporary && sa.acc.tempObj >= 0.5 || !temporary && (b >= 0.5 || o >= 0.5) {
			keep = append(keep, sa)
		}
	}
	// figure is what the list is sorted by, and picks each site's stack.
	figure := func(a *acc) float64 {
		if temporary {
			return a.tempObj
		}
		b, _, _ := value(a)
		return b
	}
	key := func(sa *siteAcc) float64 { return figure(&sa.acc) }
	sort.Slice(keep, func(i, j int) bool {
		if ki, kj := key(keep[i]), key(keep[j]); ki != kj {
			return ki > kj
		}
		return keep[i].siteFrame().fn < keep[j].siteFrame().fn
	})
	if len(keep) > n {
		keep = keep[:n]
	}
	out := make([]schema.Site, 0, len(keep))
	for _, sa := range keep {
		f := sa.siteFrame()
		b, o, v := value(&sa.acc)
		st, share, stacks := sa.shown(figure)
		x := schema.Site{Function: f.fn, File: f.file, Line: f.line, Object: f.obj, Bytes: round(b), BytesSE: round(math.Sqrt(v)),
			Objects: round(o), Temporary: round(sa.acc.tempObj), Stack: st.rowStack(), Mapped: sa.acc.mapped,
			Native: st.rowNative(), NativeOnly: sa.nativeOnly}
		for _, fr := range st.unnamedFrames(len(x.Stack)) {
			u := unnamed[fr.obj]
			if u == nil {
				u = &unnamedUse{sites: map[string]bool{}, example: fr.fn}
				unnamed[fr.obj] = u
			}
			u.sites[f.key()] = true
		}
		if stacks > 1 {
			x.Stacks, x.StackSharePct = stacks, share
		}
		if allocated > 0 {
			x.Objects, x.Temporary = min(x.Objects, allocated), min(x.Temporary, allocated)
		}
		out = append(out, x)
	}
	return out
}

// walksIn are the walks of a pid that of says is the image's (PID 0 is
// the program's) taken after im began and, where it ended by execve,
// before that.
func walksIn(walks []Walk, im *image, of func(pid int) bool) []Walk {
	var in []Walk
	for _, w := range walks {
		if of(w.PID) && w.MonoNs >= im.startNs && !(im.ended && im.endHow == 1 && w.MonoNs > im.startNs+im.endNs) {
			in = append(in, w)
		}
	}
	return in
}

// fragmentation splits the arenas at the last walk that falls in the
// image's life.
func fragmentation(r *replayed, walks []Walk) *schema.SitesFragmentation {
	start := r.im.startNs
	w := fragmentationWalk(start, walks)
	if w == nil {
		return nil
	}
	heaps := map[uint64]*estimate{}
	for _, h := range w.Heaps {
		heaps[h.Start] = &estimate{}
	}
	mainUse, othersUse := r.heapInUseAt(w.MonoNs-start, heaps)
	rate := r.im.rate
	// Blocks whose pages were never written are in use and not resident:
	// in use may pass resident, and free but resident is then at least 0.
	row := func(name string, res int64, use estimate) schema.SitesArena {
		u := round(use.bytes)
		return schema.SitesArena{Arena: name, ResidentBytes: res, InUseBytes: u, InUseSEBytes: round(use.se(rate)), FreeResidentBytes: max(res-u, 0)}
	}
	all := estimate{bytes: mainUse.bytes + othersUse.bytes, variance: mainUse.variance + othersUse.variance, samples: mainUse.samples + othersUse.samples}
	f := &schema.SitesFragmentation{At: w.At, AtMs: w.AtMs, InUseSEBytes: round(all.se(rate)),
		Arenas: []schema.SitesArena{row("main", w.BrkBytes, mainUse), row("others", w.ArenasBytes, othersUse)}}
	for _, a := range f.Arenas {
		f.ArenaResidentBytes += a.ResidentBytes
		f.InUseBytes += a.InUseBytes
		f.FreeResidentBytes += a.FreeResidentBytes
	}
	f.FreeResidentPct = pct(f.FreeResidentBytes, f.ArenaResidentBytes)
	// By heap: the brk heap first, then the others, most resident first.
	hrow := func(heap, arena string, res int64, use estimate) schema.SitesHeap {
		a := row("", res, use)
		return schema.SitesHeap{Heap: heap, Arena: arena, ResidentBytes: res, InUseBytes: a.InUseBytes, InUseSEBytes: a.InUseSEBytes,
			FreeResidentBytes: a.FreeResidentBytes, FreeResidentPct: pct(a.FreeResidentBytes, res)}
	}
	f.Heaps = []schema.SitesHeap{hrow("[heap]", "main", w.BrkBytes, mainUse)}
	others := slices.Clone(w.Heaps)
	slices.SortStableFunc(others, func(a, b WalkHeap) int {
		return cmp.Or(cmp.Compare(b.ResidentBytes, a.ResidentBytes), cmp.Compare(a.Start, b.Start))
	})
	for _, h := range others {
		arena := ""
		if h.Arena != 0 {
			arena = fmt.Sprintf("%#x", h.Arena)
		}
		f.Heaps = append(f.Heaps, hrow(fmt.Sprintf("%#x", h.Start), arena, h.ResidentBytes, *heaps[h.Start]))
	}
	for _, h := range f.Heaps {
		f.MaxHeapFreeResidentBytes = max(f.MaxHeapFreeResidentBytes, h.FreeResidentBytes)
	}
	return f
}

// fragmentationWalk is the walk the arena split reads: the last that
// falls in the image's life (from start) and found the arenas.
func fragmentationWalk(start uint64, walks []Walk) *Walk {
	var w *Walk
	for i := range walks {
		if walks[i].MonoNs >= start && (walks[i].BrkBytes > 0 || walks[i].ArenasBytes > 0) {
			w = &walks[i]
		}
	}
	return w
}

// unexplained joins the program's own mappings that the records hold,
// live at the peak walk (else the end walk) of the image's life, with
// the anonymous ranges that walk left unexplained: what each site mapped
// there, and the resident bytes of the ranges it covers, shared out by
// address where it covers part of one.
//
// The heap blocks in use at that walk that lie in those ranges are
// joined too (HeapBytes, Blocks), as the sites' tables count them: a
// table that names a site for 200 MiB of blocks and a join that finds
// none of them in the 200 MiB unexplained would disagree.
func unexplained(b *builder, r *replayed, maps []mapping, walks []Walk) *schema.SitesUnexplained {
	start := r.im.startNs
	w := unexplainedWalk(start, walks)
	if w == nil {
		return nil
	}
	// A mapping live at any moment of the walk may be in the smaps it
	// read; one that was not overlaps none of its ranges.
	t0, t1 := w.MonoNs-start, w.MonoNs-start+w.Ns
	u := &schema.SitesUnexplained{At: w.At, AtMs: w.AtMs, Sites: []schema.SitesMapping{}}
	var span int64 // the unexplained ranges' bytes, resident or not
	for _, g := range w.Unexplained {
		u.UnexplainedBytes += g.ResidentBytes
		span += int64(g.End - g.Start)
	}
	bySite := map[string]*schema.SitesMapping{}
	acc := map[string][3]float64{} // mappings, bytes mapped, resident: scaled
	for k := range r.pieces {
		p := &r.pieces[k]
		if r.kept[p.from].tNs > t1 || p.to >= 0 && r.kept[p.to].tNs <= t0 {
			continue
		}
		var over uint64
		var res float64
		for _, g := range w.Unexplained {
			lo, hi := max(p.start, g.Start), min(p.end, g.End)
			if lo >= hi {
				continue
			}
			over += hi - lo
			res += float64(g.ResidentBytes) * float64(hi-lo) / float64(g.End-g.Start)
			if hi-lo < g.End-g.Start {
				u.Estimated = true
			}
		}
		if over == 0 {
			continue
		}
		// A mapping of L bytes stands for 1/(1 − e^(−L/rate)) of them.
		wt, _ := r.im.weightOf(&r.kept[p.alloc])
		n := b.name(maps, r.im.stacks[r.kept[p.alloc].stack])
		f := n.siteFrame()
		key := f.key()
		m := bySite[key]
		if m == nil {
			m = &schema.SitesMapping{Function: f.fn, File: f.file, Line: f.line, Stack: n.siteStack()}
			bySite[key] = m
		}
		acc[key] = [3]float64{acc[key][0] + wt, acc[key][1] + wt*float64(over), acc[key][2] + wt*res}
	}
	heap := map[string][3]float64{} // blocks, bytes there, resident: scaled
	if hu := r.useAt[w.MonoNs-start]; hu != nil {
		for stack, x := range hu.inRanges {
			n := b.name(maps, r.im.stacks[stack])
			f := n.siteFrame()
			key := f.key()
			if bySite[key] == nil {
				bySite[key] = &schema.SitesMapping{Function: f.fn, File: f.file, Line: f.line, Stack: n.siteStack()}
			}
			h := heap[key]
			heap[key] = [3]float64{h[0] + x[0], h[1] + x[1], h[2] + x[2]}
		}
	}
	for key, m := range bySite {
		a, h := acc[key], heap[key]
		m.Mappings, m.ReservedBytes, m.ResidentBytes = int(round(a[0])), round(a[1])+round(h[1]), round(a[2])
		m.Blocks, m.HeapBytes = int(round(h[0])), min(round(h[2]), u.UnexplainedBytes)
		m.ResidentBytes = min(m.ResidentBytes+m.HeapBytes, u.UnexplainedBytes)
		// Scaled, a site's estimate may pass what was there (node's
		// V8 pages, 256 KiB, each sampled with chance 0.39: 215.4 MiB
		// of 204.3): no more than all of it.
		m.ResidentBytes, m.ReservedBytes = min(m.ResidentBytes, u.UnexplainedBytes), min(m.ReservedBytes, span+round(h[1]))
		u.MappedBytes += m.ResidentBytes - m.HeapBytes
		u.HeapBytes += m.HeapBytes
		u.Sites = append(u.Sites, *m)
	}
	// Scaled, the sampled estimate may pass what was there.
	u.MappedBytes = min(u.MappedBytes, u.UnexplainedBytes)
	u.HeapBytes = min(u.HeapBytes, u.UnexplainedBytes-u.MappedBytes)
	slices.SortFunc(u.Sites, func(a, b schema.SitesMapping) int {
		return cmp.Or(cmp.Compare(b.ResidentBytes, a.ResidentBytes), strings.Compare(a.Function, b.Function))
	})
	return u
}

// unexplainedWalk is the walk the unexplained join reads: the peak walk
// in the image's life (from start) that left anything unexplained, else
// the last such walk.
func unexplainedWalk(start uint64, walks []Walk) *Walk {
	var w *Walk
	for i := range walks {
		if walks[i].MonoNs >= start && len(walks[i].Unexplained) > 0 && (w == nil || walks[i].At == "peak") {
			w = &walks[i]
		}
	}
	return w
}

// pct is part / whole × 100; 0 for nothing.
func pct(part, whole int64) float64 {
	if whole <= 0 {
		return 0
	}
	return 100 * float64(part) / float64(whole)
}

// executablePath is the first file mapped in an image: its executable.
func executablePath(maps []mapping) string {
	best := mapping{start: ^uint64(0)}
	for _, m := range maps {
		if m.path != "" && !strings.HasPrefix(m.path, "[") && m.offset == 0 && m.start < best.start && !strings.Contains(filepath.Base(m.path), ".so") {
			best = m
		}
	}
	return best.path
}

// isGoProgram says path is a Go executable: it has the Go build
// information's section.
func isGoProgram(path string) bool {
	if path == "" {
		return false
	}
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	return f.Section(".go.buildinfo") != nil
}

// goRuntime marks the stacks of a Go program's image (exe) whose first
// frame in the executable is its runtime's (runtime.*, or cgo's mmap
// shims): the mappings they make are its Go heap's and goroutine stacks'
// address space. A C function of the program's (cgo) called through
// runtime.asmcgocall comes first, and its mappings are kept.
func (a *analysis) goRuntime(im *image, maps []mapping, exe string) {
	im.goRuntime = map[uint64]bool{}
	for h, pcs := range im.stacks {
		for _, f := range a.b.name(maps, pcs).frames {
			if f.obj != exe {
				continue
			}
			if strings.HasPrefix(f.fn, "runtime.") || strings.HasPrefix(f.fn, "x_cgo_m") || strings.HasPrefix(f.fn, "_cgo_m") {
				im.goRuntime[h] = true
			}
			break
		}
	}
}

// ownAllocators says, of each program that defines malloc itself (an
// allocator linked in: jemalloc, tcmalloc, mimalloc, its own), that the
// library does not see its heap: the executable's definitions come
// before any preloaded library's. Its images read 0 blocks, or only
// those of libraries that call the C library's allocator directly.
func ownAllocators(ps []schema.SitesProcess) []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range ps {
		if p.Executable == "" || seen[p.Executable] {
			continue
		}
		seen[p.Executable] = true
		if fn := definesAllocator(p.Executable); fn != "" {
			out = append(out, fmt.Sprintf("sites: %s defines %s itself (an allocator linked into the program: jemalloc, tcmalloc, mimalloc or its own): its calls do not reach the library, so its heap blocks are not recorded (pid %d); the mappings it makes through the C library's mmap are", p.Executable, fn, p.PID))
		}
	}
	return out
}

// definesAllocator is the first of malloc, calloc, realloc and free
// that path's ELF file defines and exports, "" where none (or it cannot
// be read).
func definesAllocator(path string) string {
	f, err := elf.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	syms, _ := f.DynamicSymbols()
	for _, want := range []string{"malloc", "calloc", "realloc", "free"} {
		for _, s := range syms {
			if s.Name == want && s.Section != elf.SHN_UNDEF && elf.ST_TYPE(s.Info) == elf.STT_FUNC {
				return want
			}
		}
	}
	return ""
}
