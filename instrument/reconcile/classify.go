package reconcile

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"memprobe/instrument/procfs"
)

// Internal names of what the mappings are claimed for; most are also the
// names of parts.
const (
	clGoArena   = "go.arena"            // Go's heap arenas and their reservations
	clGoOffHeap = "go.runtime.metadata" // Go's mappings outside the arenas
	clRace      = "race.runtime"
	clMain      = "stacks.main"
	clWorkers   = "stacks.workers"
	clThreads   = "stacks.threads"
	clBrk       = "c.malloc.brk"
	clArenas    = "c.malloc.arenas"
	clMmap      = "c.malloc.mmap"
	clBSS       = "file.bss"
	clFile      = "file.mapped"
	clCOW       = "file.cow"
	clShmem     = "shmem"
	clKernel    = "kernel"
	clGPU       = "gpu.driver" // mappings of GPU driver devices
	clReserved  = "anon.reserved"
	clPyMalloc  = "python.obmalloc" // CPython's small-object allocator's arenas
	clSitesOwn  = "probe.sites"     // the allocation-site library's own buffers, in the program
)

// GoHeapArenaBytes is the size of Go's heap arenas on linux/amd64
// (runtime/malloc.go heapArenaBytes): the runtime reserves its heap in
// whole arenas, aligned to their size.
const GoHeapArenaBytes = 64 << 20

// Shapes of the C library's mappings (glibc, 64-bit).
const (
	// GlibcHeapMaxBytes is HEAP_MAX_SIZE: each malloc arena other than
	// the main one lives in heaps of this size, aligned to it, mapped
	// PROT_NONE and made read-write from the bottom as the arena grows.
	GlibcHeapMaxBytes = 64 << 20
	// maxGuardBytes bounds what counts as a stack's guard mapping: glibc
	// puts one page (pthread_attr_setguardsize) below every stack, musl
	// two. Go's arenas have PROT_NONE reservations of megabytes below
	// their read-write part, which this tells from a guard.
	maxGuardBytes = 64 << 10
	// minStackBytes is the smallest read-write mapping that the guard
	// shape takes for a thread stack (osthread.MinStackBytes).
	minStackBytes = 64 << 10
)

// raceShadow is the Go race detector's shadow and meta-shadow memory on
// linux/amd64 (compiler-rt's MappingGo48: shadow from 0x200000000000,
// meta shadow up to 0x400000000000). Only used when Input.Race is set:
// without the race detector Go's randomised heap may live there.
var raceShadow = [2]uint64{0x200000000000, 0x400000000000}

// vma is one mapping of smaps and the claims on it: a source claims the
// whole mapping (owner) or ranges of it (subs).
type vma struct {
	procfs.Mapping
	owner string
	subs  []sub
	// counted says that the rule that claimed it counted what it holds
	// (mmappedChunks its chunks, pythonPools its pools).
	counted bool
}

type sub struct {
	lo, hi   uint64
	class    string
	resident int64
}

func (v *vma) anon() bool { return v.Path == "" }

func (v *vma) free() bool { return v.owner == "" && len(v.subs) == 0 }

// tally is one part's measured bytes.
type tally struct {
	resident, reserved int64
	count              int
}

// layout is the address space classified: what each source claims, and
// what no source claims.
type layout struct {
	vmas    []vma
	tallies map[string]*tally
	// candidates are anonymous, resident memory no source claimed: whole
	// mappings or what is left of a mapping after its claimed ranges.
	candidates []Piece
	stacks     []ThreadStack
	files      map[string]*FileShare
	// goroutineSPs counts threads whose stack pointer was in Go's heap
	// arenas: on a goroutine stack, not their own.
	goroutineSPs int
	liveStacks   int // stacks that hold a thread's stack pointer or are registered
	// heaps are glibc's malloc heaps found; arenas the arenas they belong
	// to (exactly, by their headers, when arenasExact).
	heaps       []glibcHeap
	arenas      int
	arenasExact bool
	// bssAssumed lists the files whose ELF headers could not be used: the
	// anonymous mapping above their data was taken whole as .bss.
	bssAssumed      []string
	bssAssumedBytes int64
	estimated       bool
	warnings        []string
	smapsRSS        int64
	smapsSize       int64
	pss             int64
}

func (l *layout) tally(class string) *tally {
	t, ok := l.tallies[class]
	if !ok {
		t = &tally{}
		l.tallies[class] = t
	}
	return t
}

func (l *layout) warn(format string, args ...any) {
	l.warnings = append(l.warnings, fmt.Sprintf(format, args...))
}

// after returns the index of the first mapping that ends above addr.
func (l *layout) after(addr uint64) int {
	return sort.Search(len(l.vmas), func(i int) bool { return l.vmas[i].End > addr })
}

// find returns the index of the mapping holding addr, or -1.
func (l *layout) find(addr uint64) int {
	if i := l.after(addr); i < len(l.vmas) && l.vmas[i].Start <= addr {
		return i
	}
	return -1
}

// claimWhole gives mapping i to class if no source claimed any of it.
func (l *layout) claimWhole(i int, class string) bool {
	if !l.vmas[i].free() {
		return false
	}
	l.vmas[i].owner = class
	return true
}

// claimRange gives class the parts of [lo, hi) that no source claimed and
// returns the resident and reserved bytes it got. A range that covers a
// whole unclaimed mapping takes the mapping (smaps counts it); a range
// inside a mapping is measured through in.Resident (pagemap), or
// estimated when that cannot be read.
func (l *layout) claimRange(in *Input, lo, hi uint64, class string) (resident, reserved int64) {
	for i := l.after(lo); i < len(l.vmas) && l.vmas[i].Start < hi; i++ {
		v := &l.vmas[i]
		a, z := max(lo, v.Start), min(hi, v.End)
		if a >= z || v.owner != "" || v.Path == "[vsyscall]" {
			continue
		}
		if a == v.Start && z == v.End && len(v.subs) == 0 {
			v.owner = class
			resident += int64(v.RssBytes)
			reserved += int64(v.SizeBytes)
			continue
		}
		overlap := false
		var taken int64
		for _, s := range v.subs {
			overlap = overlap || s.lo < z && a < s.hi
			taken += s.resident
		}
		if overlap {
			continue
		}
		r := int64(-1)
		if v.RssBytes == 0 {
			r = 0 // nothing of the mapping is resident
		} else if in.Resident != nil {
			if b, err := in.Resident(a, z); err == nil {
				r = b
			}
		}
		if r < 0 {
			// No pagemap: give the range what the mapping has left,
			// at most its size. Flagged in the warnings.
			r = min(int64(z-a), max(int64(v.RssBytes)-taken, 0))
			l.estimated = true
		}
		r = min(r, max(int64(v.RssBytes)-taken, 0))
		v.subs = append(v.subs, sub{a, z, class, r})
		resident += r
		reserved += int64(z - a)
	}
	return resident, reserved
}

// claimRule is one of classify's rules: claim gives a part the mappings,
// or ranges of them, that the rule recognises among those no earlier rule
// claimed. Each rule sees only what the rules before it left.
type claimRule struct {
	name  string // as the package comment lists it
	claim func(l *layout, in *Input)
}

// The rules of classify, one for each step of the package comment's list.
var (
	ruleByName      = claimRule{"1 by name", (*layout).claimByName}
	ruleGoArenas    = claimRule{"2 go arenas", (*layout).goArenas}
	ruleRaceShadow  = claimRule{"3 race shadow", (*layout).claimRaceShadow}
	ruleBSS         = claimRule{"4 .bss", (*layout).claimBSS}
	ruleKnownStacks = claimRule{"5 known stacks", (*layout).claimKnownStacks}
	ruleStacksBySP  = claimRule{"6 stacks by stack pointer", (*layout).claimStacksBySP}
	ruleStacksBySh  = claimRule{"7 stacks by shape", (*layout).claimStacksByShape}
	ruleHeaps       = claimRule{"8 malloc heaps", (*layout).claimHeaps}
	ruleFullHeaps   = claimRule{"8b full malloc heaps", (*layout).fullHeaps}
	ruleMmapped     = claimRule{"9 mmapped chunks", (*layout).mmappedChunks}
	rulePythonPools = claimRule{"10 python pools", (*layout).pythonPools}
	ruleAfterPools  = claimRule{"11 chunks after python arenas", (*layout).chunksAfterPools}
)

// claimRules are classify's rules in the order they apply: names first,
// then what the sources know by address, then the shapes, and the
// allocators' headers last.
var claimRules = []claimRule{
	ruleByName, ruleGoArenas, ruleRaceShadow, ruleBSS, ruleKnownStacks, ruleStacksBySP, ruleStacksBySh,
	ruleHeaps, ruleFullHeaps, ruleMmapped, rulePythonPools, ruleAfterPools,
}

// classify walks in.Mappings and claims each for a part: by name, by the
// addresses the sources know (Go heap objects, registered thread stacks,
// threads' stack pointers), and by the shapes glibc gives its stacks and
// arenas (claimRules, in order). What no source claims is left in
// layout.candidates.
func classify(in *Input) *layout {
	l := newLayout(in)
	for _, r := range claimRules {
		r.claim(l, in)
	}
	// An arena that outgrew its heap has several: count arenas, not
	// heaps.
	l.countArenas(in)
	l.tally(clArenas).count = l.arenas
	l.tallyClaims()
	if l.estimated {
		l.warn("pagemap unreadable: the resident bytes of stacks, arenas and .bss that share a mapping with other memory are estimated")
	}
	return l
}

// newLayout is in.Mappings by address, nothing claimed yet, with smaps'
// sums.
func newLayout(in *Input) *layout {
	l := &layout{tallies: map[string]*tally{}, files: map[string]*FileShare{}}
	l.vmas = make([]vma, 0, len(in.Mappings))
	for _, m := range in.Mappings {
		l.smapsRSS += int64(m.RssBytes)
		l.pss += int64(m.PssBytes)
		if m.Path == "[vsyscall]" {
			continue // the kernel's gate page: not in the process's mm, not in VmSize
		}
		l.smapsSize += int64(m.SizeBytes)
		l.vmas = append(l.vmas, vma{Mapping: m})
	}
	slices.SortFunc(l.vmas, func(a, b vma) int { return cmp.Compare(a.Start, b.Start) })
	return l
}

// claimByName is rule 1: the kernel's pseudo-paths, files, shared memory,
// and anonymous mappings a runtime named (Linux 5.17+ with
// CONFIG_ANON_VMA_NAME: Go 1.25+ names its own, glibc 2.41+ its stacks and
// arenas when asked to).
func (l *layout) claimByName(*Input) {
	for i := range l.vmas {
		v := &l.vmas[i]
		switch p := v.Path; {
		case p == "":
		case p == "[heap]":
			v.owner = clBrk
		case p == "[stack]":
			v.owner = clMain
		case strings.HasPrefix(p, "[anon_shmem:"), v.Perms[3] == 's' && shmemPath(p):
			v.owner = clShmem
		case strings.HasPrefix(p, "[anon: Go: heap"): // "heap", "heap reservation"
			v.owner = clGoArena
		case strings.HasPrefix(p, "[anon: Go: "):
			v.owner = clGoOffHeap
		case strings.HasPrefix(p, "[anon: glibc: pthread stack"):
			v.owner = clThreads
			if !strings.Contains(p, "guard") {
				l.stacks = append(l.stacks, ThreadStack{Lo: v.Start, Hi: v.End, ReservedBytes: int64(v.SizeBytes),
					ResidentBytes: int64(v.RssBytes), Source: "name"})
			}
		case strings.HasPrefix(p, "[anon: glibc: malloc arena"):
			v.owner = clArenas
			if v.Perms[0] == 'r' {
				l.heaps = append(l.heaps, glibcHeap{start: v.Start, rw: v.SizeBytes, resident: int64(v.RssBytes)})
			}
		case strings.HasPrefix(p, "[anon: glibc: malloc"):
			v.owner = clMmap
		case strings.HasPrefix(p, "[anon:"):
			// Named by someone else: still anonymous and unclaimed.
		case strings.HasPrefix(p, "["):
			v.owner = clKernel // [vdso], [vvar], [uprobes], ...
		case GPUDevice(p):
			v.owner = clGPU
		default:
			v.owner = clFile
		}
	}
}

// claimRaceShadow is rule 3: with the race detector, its shadow memory,
// by its fixed addresses.
func (l *layout) claimRaceShadow(in *Input) {
	if !in.Race {
		return
	}
	for i := range l.vmas {
		if v := &l.vmas[i]; v.anon() && v.Start >= raceShadow[0] && v.End <= raceShadow[1] {
			l.claimWhole(i, clRace)
		}
	}
}

// claimBSS is rule 4, .bss: the anonymous mapping directly above a file's
// writable, private data mapping is the zero-initialised rest of that
// segment (the Go binary's holds the runtime's globals; libc's, its own),
// up to the end the ELF headers give the segment in memory. The rest of
// the anonymous mapping (the kernel merges it with an adjacent anonymous
// mapping of the same flags) is left to the later rules. A shared mapping
// (rw-s) has no .bss: MAP_SHARED maps a file, not a loaded segment, and
// whatever lies above it is not its.
func (l *layout) claimBSS(in *Input) {
	page := uint64(os.Getpagesize())
	for i := 1; i < len(l.vmas); i++ {
		p, v := &l.vmas[i-1], &l.vmas[i]
		if !v.anon() || !v.free() || p.owner != clFile || p.End != v.Start || p.Perms[1] != 'w' || p.Perms[3] != 'p' {
			continue
		}
		end, err := l.bssEnd(in, i-1, page)
		switch {
		case err == nil:
		case errors.Is(err, errNotELF):
			continue // a data file mapped private: nothing above it is its
		case i >= 2 && l.vmas[i-2].Path == p.Path:
			// The headers cannot be read (deleted, another mount
			// namespace) or do not match. The file is mapped in
			// pieces, as a loaded ELF object is (text below its
			// data): assume the anonymous mapping above is all its
			// .bss, and say so.
			end = v.End
			l.bssAssumed = append(l.bssAssumed, fmt.Sprintf("%s (%v)", p.Path, err))
			l.bssAssumedBytes += int64(v.SizeBytes)
		default:
			continue // one mapping of a file: not a loaded object
		}
		if end <= v.Start {
			continue // the segment has no .bss beyond its last file page
		}
		if res, resv := l.claimRange(in, v.Start, end, clBSS); resv > 0 {
			l.bss(p.Path, res, resv)
			l.tally(clBSS).count++
		}
	}
	if n := len(l.bssAssumed); n > 0 {
		l.warn("file.bss: the ELF headers of %s could not be used (first: %s): the %s of anonymous mappings directly above their data are taken whole as their .bss",
			plural(n, "file"), l.bssAssumed[0], iec(l.bssAssumedBytes))
	}
}

// claimKnownStacks is rule 5: thread stacks whose address ranges are
// known (pthread_getattr_np in trainer/osthread), each with its guard
// below.
func (l *layout) claimKnownStacks(in *Input) {
	for _, s := range in.ThreadStacks {
		st := ThreadStack{Lo: s.Lo, Hi: s.Hi, Source: "pthread_getattr_np"}
		st.ResidentBytes, st.ReservedBytes = l.claimRange(in, s.Lo, s.Hi, clWorkers)
		if st.ReservedBytes == 0 {
			l.warn("registered thread stack %#x-%#x is not in smaps (or was claimed twice)", s.Lo, s.Hi)
			continue
		}
		if s.GuardBytes > 0 {
			_, st.GuardBytes = l.claimRange(in, s.Lo-uint64(s.GuardBytes), s.Lo, clWorkers)
		}
		l.stacks = append(l.stacks, st)
		l.liveStacks++
	}
}

// claimStacksBySP is rule 6: the stacks of blocked threads, the mapping
// holding each one's stack pointer (stackBySP). A pointer into Go's arenas
// is a goroutine stack.
func (l *layout) claimStacksBySP(in *Input) {
	def := uint64(cmp.Or(in.ThreadStackBytes, DefaultThreadStackReserveBytes))
	for _, t := range in.ThreadSPs {
		if t.SP != 0 {
			l.stackBySP(in, t, def)
		}
	}
}

// stackBySP claims the stack that holds thread t's stack pointer, if it
// is in one, for rule 6; def is the default stack size.
func (l *layout) stackBySP(in *Input, t procfs.ThreadSP, def uint64) {
	i := l.find(t.SP)
	if i < 0 {
		return
	}
	v := &l.vmas[i]
	switch v.owner {
	case clGoArena:
		l.goroutineSPs++
		return
	case clMain:
		l.liveStacks++
		return
	}
	if k := l.stackHolding(t.SP); k >= 0 {
		if l.stacks[k].TID == 0 {
			l.stacks[k].TID = t.TID
			if l.stacks[k].Source != "pthread_getattr_np" {
				l.liveStacks++
			}
		}
		return
	}
	// A thread's stack pointer alone does not make a stack: Go's
	// threads (a pure-Go binary's, seen from outside where no heap
	// address is known) run on g0 and goroutine stacks inside Go's
	// heap mappings. glibc's and musl's thread stacks sit directly
	// above a small PROT_NONE guard; Go's arenas have a PROT_NONE
	// reservation of megabytes below them, or none.
	if !v.anon() || v.Perms[:2] != "rw" || v.owner != "" || !l.guardBelow(i) {
		return
	}
	// glibc puts a stack at the bottom of its mapping, above the
	// guard, and the thread's frames at its top: stacks grow down.
	// A pointer within the default size from the bottom is in a
	// stack of that size (or a larger one used that deep: the two
	// cannot be told apart), and the rest of a larger mapping is
	// what the kernel merged with it. A pointer above that is in a
	// stack made larger (pthread_attr_setstacksize): it reaches at
	// least to the pointer, and its top, where the frames are, is
	// at the end of the mapping. That is claimed whole. On kernels
	// before 6.7 (MAP_STACK did not set VM_NOHUGEPAGE) an anonymous
	// read-write mapping placed directly above can be merged into
	// it and is then claimed with it: where the stack ends inside
	// the mapping is not visible from outside.
	lo, hi := v.Start, stackEnd(v, def)
	if t.SP >= hi {
		if len(v.subs) > 0 {
			return // part of it is claimed: not one stack
		}
		hi = v.End
	}
	if st, ok := l.claimStack(in, i, lo, hi, "syscall sp"); ok {
		st.TID = t.TID
		l.stacks = append(l.stacks, st)
		l.liveStacks++
	}
}

// claimStacksByShape is rule 7: glibc's stack shape, for the rest
// (threads running now, stacks of exited threads glibc keeps for reuse):
// a read-write mapping of at least 64 KiB directly above a small
// PROT_NONE guard.
func (l *layout) claimStacksByShape(in *Input) {
	def := uint64(cmp.Or(in.ThreadStackBytes, DefaultThreadStackReserveBytes))
	page := uint64(os.Getpagesize())
	for i := 1; i < len(l.vmas); i++ {
		v := &l.vmas[i]
		if !v.anon() || v.Perms != "rw-p" || !l.guardBelow(i) || v.owner != "" || v.SizeBytes < minStackBytes {
			continue
		}
		if len(v.subs) > 0 && v.subs[0].lo == v.Start {
			continue
		}
		if st, ok := l.claimStack(in, i, v.Start, l.shapeStackEnd(in, v, def, page), "guard shape"); ok {
			l.stacks = append(l.stacks, st)
		}
	}
}

// claimHeaps is rule 8: glibc's malloc arenas (other than the main one,
// [heap]): a read-write head at a 64 MiB-aligned address, then PROT_NONE
// to exactly the end of the 64 MiB heap (glibc maps it MAP_NORESERVE, so
// the kernel does not merge the tail with its neighbours). Heaps grown to
// the whole 64 MiB are rule 8b's (fullHeaps).
func (l *layout) claimHeaps(in *Input) {
	for i := 1; i < len(l.vmas); i++ {
		h, t := &l.vmas[i-1], &l.vmas[i]
		if !h.anon() || !t.anon() || h.Perms != "rw-p" || t.Perms != "---p" || h.End != t.Start ||
			h.Start%GlibcHeapMaxBytes != 0 || h.End-h.Start >= GlibcHeapMaxBytes || t.End != h.Start+GlibcHeapMaxBytes ||
			!h.free() || !t.free() || notHeap(in, h.Start) {
			continue
		}
		if res, s := l.claimRange(in, h.Start, h.Start+GlibcHeapMaxBytes, clArenas); s > 0 {
			l.heaps = append(l.heaps, glibcHeap{start: h.Start, rw: h.SizeBytes, resident: res})
		}
	}
}

// tallyClaims adds up the claims: what is left of each mapping is
// reserved address space (nothing resident, or PROT_NONE) or a candidate.
func (l *layout) tallyClaims() {
	for i := range l.vmas {
		v := &l.vmas[i]
		switch v.owner {
		case "":
			l.tallyRest(v)
		case clFile:
			// Clean pages are the file's; written pages of a private
			// mapping (relocations, .data) are anonymous memory.
			l.file(v)
			cow := int64(min(v.AnonymousBytes, v.RssBytes))
			t := l.tally(clFile)
			t.resident += int64(v.RssBytes) - cow
			t.reserved += int64(v.SizeBytes)
			t.count++
			if cow > 0 {
				t := l.tally(clCOW)
				t.resident += cow
				t.count++
			}
		default:
			if v.owner == clGPU {
				l.file(v) // listed with the files too, by device
			}
			t := l.tally(v.owner)
			t.resident += int64(v.RssBytes)
			t.reserved += int64(v.SizeBytes)
			if v.owner != clThreads && v.owner != clWorkers && v.owner != clArenas && v.owner != clBSS && !v.counted {
				t.count++ // stacks, arenas, .bss and what a rule counted are counted as they are found
			}
		}
	}
	for _, st := range l.stacks {
		if st.Source == "pthread_getattr_np" {
			l.tally(clWorkers).count++
		} else {
			l.tally(clThreads).count++
		}
	}
}

// tallyRest tallies the claimed ranges of a mapping no rule took whole,
// and what is left of it: reserved address space or a candidate.
func (l *layout) tallyRest(v *vma) {
	size, rss := int64(v.SizeBytes), int64(v.RssBytes)
	for _, s := range v.subs {
		t := l.tally(s.class)
		t.resident += s.resident
		t.reserved += int64(s.hi - s.lo)
		size -= int64(s.hi - s.lo)
		rss -= s.resident
	}
	rss = max(rss, 0)
	switch {
	case size <= 0:
	case rss == 0 || v.Perms[:3] == "---":
		t := l.tally(clReserved)
		t.resident += rss
		t.reserved += size
		t.count++
	default:
		p := Piece{Start: v.Start, End: v.End, Perms: v.Perms, Path: v.Path, ResidentBytes: rss, ReservedBytes: size}
		if len(v.subs) > 0 {
			p.Note = fmt.Sprintf("rest of the mapping after %d claimed ranges", len(v.subs))
		}
		l.candidates = append(l.candidates, p)
	}
}

// claimStack claims [lo, hi) of mapping i as a thread stack, and the guard
// mapping directly below it when there is one.
func (l *layout) claimStack(in *Input, i int, lo, hi uint64, source string) (ThreadStack, bool) {
	st := ThreadStack{Lo: lo, Hi: hi, Source: source}
	st.ResidentBytes, st.ReservedBytes = l.claimRange(in, lo, hi, clThreads)
	if st.ReservedBytes == 0 {
		return st, false
	}
	if i > 0 {
		if g := &l.vmas[i-1]; g.anon() && g.Perms == "---p" && g.End == lo && g.free() {
			gsize := min(g.SizeBytes, maxGuardBytes)
			_, st.GuardBytes = l.claimRange(in, g.End-gsize, g.End, clThreads)
		}
	}
	return st, true
}

// stackEnd is where a stack at the bottom of mapping v ends: the mapping's
// end, or def bytes up when the mapping is larger (the kernel merged the
// stack with the mapping above it).
func stackEnd(v *vma, def uint64) uint64 { return min(v.End, v.Start+def) }

// guardBelow says whether mapping i sits directly above glibc's (or musl's)
// stack guard: an unclaimed anonymous PROT_NONE mapping of at most
// maxGuardBytes ending where i starts.
func (l *layout) guardBelow(i int) bool {
	if i == 0 {
		return false
	}
	g := &l.vmas[i-1]
	return g.anon() && g.Perms == "---p" && g.End == l.vmas[i].Start && g.SizeBytes <= maxGuardBytes && g.free()
}

// shapeStackEnd is where the stack found by its shape at the bottom of v
// ends, when no thread's stack pointer says: stackEnd, unless pagemap shows
// v to be one stack larger than the default. glibc (and musl) keep the
// thread's descriptor and static TLS at the top of its stack, written when
// the thread is made, so a stack's top page is resident, running thread or
// stack kept for reuse alike. A default-size stack merged with a mapping
// above has its top, resident, def bytes up; a stack made larger has
// nothing resident there (its frames are at the mapping's top, unless it
// is used that deep) and its top page at the mapping's end. Only that
// second shape is claimed whole. Without pagemap nothing tells the two
// apart, and the default size is claimed: what a larger stack holds above
// it is then unexplained, not hidden in a stack that may not be one.
func (l *layout) shapeStackEnd(in *Input, v *vma, def, page uint64) uint64 {
	hi := stackEnd(v, def)
	if hi == v.End || in.Resident == nil {
		return hi
	}
	atDef, err1 := in.Resident(hi-page, hi)
	atTop, err2 := in.Resident(v.End-page, v.End)
	if err1 == nil && err2 == nil && atDef == 0 && atTop > 0 {
		return v.End
	}
	return hi
}

// stackHolding returns the index of the stack that holds addr, or -1.
func (l *layout) stackHolding(addr uint64) int {
	for k, s := range l.stacks {
		if s.Lo <= addr && addr < s.Hi {
			return k
		}
	}
	return -1
}

func (l *layout) file(v *vma) {
	f, ok := l.files[v.Path]
	if !ok {
		f = &FileShare{Path: v.Path}
		l.files[v.Path] = f
	}
	f.ResidentBytes += int64(v.RssBytes - min(v.AnonymousBytes, v.RssBytes))
	f.COWBytes += int64(min(v.AnonymousBytes, v.RssBytes))
	f.ReservedBytes += int64(v.SizeBytes)
	f.Mappings++
}

func (l *layout) bss(path string, resident, reserved int64) {
	f, ok := l.files[path]
	if !ok {
		f = &FileShare{Path: path}
		l.files[path] = f
	}
	f.BSSResidentBytes += resident
	f.BSSReservedBytes += reserved
}

// gpuDevicePrefixes are GPU driver device files: NVIDIA's, DRM render
// nodes, AMD's KFD.
var gpuDevicePrefixes = []string{"/dev/nvidia", "/dev/dri/", "/dev/kfd"}

// GPUDevice says whether a mapping's path is a GPU driver's device file.
// Such mappings are pinned host memory and apertures onto the device that
// the driver maps for a process with a GPU context (a CUDA program's
// cuMemHostAlloc, its channels and doorbells): resident, and neither a
// file's pages nor memory any allocator of the process names.
func GPUDevice(path string) bool {
	for _, p := range gpuDevicePrefixes {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// shmemPath says whether a shared mapping's path is shared memory (counted
// in RssShmem) rather than a file on disk.
func shmemPath(p string) bool {
	for _, pre := range []string{"/dev/shm/", "/memfd:", "/SYSV", "/dev/zero", "/run/shm/", "/[aio]"} {
		if strings.HasPrefix(p, pre) {
			return true
		}
	}
	return false
}
