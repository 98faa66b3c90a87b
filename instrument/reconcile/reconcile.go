// Package reconcile explains a process's resident set and its address
// space: it splits RSS and VSZ, as the kernel reports them, into named
// parts, each measured by its own source, and it never hides what does not
// add up.
//
// It is the last stage of the probe: [memprobe/instrument/procfs] gives the
// kernel's view (status, every mapping of smaps, the threads' stack
// pointers, pagemap), [memprobe/instrument/rtstats] the Go runtime's, the
// trainer's [memprobe/ledger] its own; Compute lines them up and
// Render prints the table.
//
// # Method
//
// Every mapping of /proc/<pid>/smaps, or a range of one, is claimed by one
// source, in this order:
//
//  1. By name: [heap] (glibc's main malloc arena, brk), [stack] (the main
//     thread), files (clean pages, and pages written in private mappings),
//     shared memory, the kernel's [vdso]/[vvar], and anonymous mappings a
//     runtime named (Go 1.25+ "[anon: Go: ...]", glibc 2.41+ stacks and
//     arenas) on kernels that keep such names.
//  2. Go's heap arenas, where the runtime says they are: the mappings
//     holding Input.GoAddrs (addresses of Go heap objects and goroutine
//     stacks; Go 1.26 randomises the heap's base, so it is found by
//     address, not by place), the read-write mappings directly next to
//     them (the heap grows from its base without gaps), and the PROT_NONE
//     reservations directly below and above those, up to the 64 MiB arena
//     boundaries (the runtime reserves whole arenas). A mapping beyond a
//     reservation is not Go's, however close.
//  3. With the race detector, its shadow memory, by its fixed addresses.
//  4. .bss: the anonymous mapping directly above a file's writable,
//     private data, up to the end of the segment in memory (its ELF
//     program headers, read through Input.OpenFile); where they cannot be
//     read, the whole mapping, with a warning. A shared mapping has none.
//  5. Thread stacks with known ranges (Input.ThreadStacks: trainer/osthread
//     records pthread_getattr_np's), each with its guard.
//  6. The stacks of blocked threads: the mapping holding the stack pointer
//     in /proc/<pid>/task/*/syscall, if it sits above glibc's guard (a
//     PROT_NONE mapping of at most 64 KiB: Go's heap, where a pure-Go
//     program's threads run, has none), from its bottom for the default
//     pthread stack size, or to its end when the pointer is above that (a
//     larger stack: stacks grow down from the top).
//  7. glibc's stack shape, for the other pthreads (running ones, stacks kept
//     for reuse): a read-write mapping of at least 64 KiB above a PROT_NONE
//     guard of at most 64 KiB; the default size from its bottom, or the
//     whole mapping where pagemap shows one larger stack (its top page,
//     the thread descriptor, resident; nothing where a default stack's
//     top would be).
//  8. glibc's malloc heaps: a read-write head at a 64 MiB-aligned address
//     followed by PROT_NONE to the end of the 64 MiB heap. An arena that
//     outgrows a heap opens another, so heaps are grouped into arenas: by
//     their headers' arena pointer (Input.ReadMemory), or else by taking
//     a full heap as followed by another of its arena.
//  9. glibc's large blocks (c.malloc.mmap), a mapping each: an anonymous
//     read-write mapping whose first 16 bytes are an mmapped chunk's
//     header (prev_size 0, then a page-multiple size with IS_MMAPPED
//     alone), and the chunks after it where the kernel merged
//     neighbours, through Input.ReadMemory; the allocation-site
//     library's own buffers (probe.sites) by the header each begins with,
//     among them or alone, and past what has no header in a mapping that
//     holds something known (a library's .bss, a chunk, a buffer).
//  10. CPython's small-object allocator (python.obmalloc): runs of 16 KiB
//     pools in anonymous read-write mappings whose headers hold
//     obmalloc's invariants (pythonPools), through Input.ReadMemory.
//  11. glibc's large blocks the kernel merged above CPython's arenas
//     (c.malloc.mmap): a chain of chunk headers that begins within an
//     arena's size past a run of pools and runs to the mapping's end or
//     to the next pools (chunksAfterPools).
//
// A range inside a mapping (a stack the kernel merged with its neighbour)
// is measured with pagemap. What is left of each mapping is either
// reserved address space (nothing resident, or PROT_NONE: anon.reserved)
// or resident anonymous memory no source claimed: a candidate. Go's
// runtime/metrics classes then say how much of Go's memory should be
// outside the heap classes (metadata, profiling buckets, other,
// os-stacks). go.runtime.metadata is only what the kernel names as Go's;
// unnamed mappings cannot be told from C's by shape, so the smallest
// candidates that fit that budget (one with more resident than what is
// left of it, or mapping more than those classes plus Go's 32 MiB heap
// index, does not) are listed as probable Go metadata, with the budget
// left, and stay unexplained. Ledger components outside Go take the other
// candidates, largest first, up to their bytes.
//
// The go.heap.* parts keep Go's class breakdown (objects, in the ledger or
// not; free and unused; goroutine stacks) at their mapped size as the
// reserved bytes, and as resident bytes at most what smaps shows resident
// in the arenas: when the classes exceed it, heap free is cut first, then
// other objects, goroutine stacks, and the ledger's objects last. What the
// arenas hold beyond the classes is go.arena.other, up to the metadata
// classes (less what Go's named mappings hold): what runtime/metrics says
// Go mapped beyond its heap. More is a mapping of another's merged with
// an arena: unexplained, with a warning.
//
// Unexplained is VmRSS − Σ parts' resident bytes, with its sign: the
// candidates no source took (listed, largest first), plus the difference
// between the kernel's status counters and its page walk. Nothing is
// defined as a remainder.
//
// # Limits
//
// Without the kernel's names Go's metadata outside the arenas is
// unexplained (as probable Go metadata), and so is a C mapping listed with
// it. A mapping the kernel merged with Go's read-write heap hides up to the
// metadata classes in go.arena.other. An arena holding none of
// Input.GoAddrs is not found.
// The shape rules can take a Go mapping of the same shape (a page-summary
// island of 64 KiB or more above a small PROT_NONE piece) for a stack, and
// miss a stack whose guard the kernel merged with another PROT_NONE
// mapping, or a stack made without a guard. A larger stack the kernel
// merged with an anonymous mapping above it (before Linux 6.7) is claimed
// with it. Without the heaps' headers the arena count is an estimate. The status counters are per-CPU batched and may lag smaps's
// page walk by a few hundred KiB per CPU. The runtime, the ledger and
// /proc are read moments apart; pagemap is read when Compute runs, so
// Compute must run right after the input is gathered.
package reconcile

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"memprobe/instrument/procfs"
	"memprobe/instrument/rtstats"
	"memprobe/internal/table"
	"memprobe/ledger"
	"memprobe/schema"
)

// GoHeapIndexBytes is the size of Go's heap arena index on linux/amd64
// (1<<22 pointers, one per 64 MiB arena of the 48-bit address space): a
// mapping of Go's own that no runtime/metrics class counts ("we rely on
// demand paging", runtime/malloc.go), mostly untouched.
const GoHeapIndexBytes = 8 << 22

// probableGoMetadata marks an unexplained mapping that fits Go's metadata
// classes by size alone.
const probableGoMetadata = "probable Go metadata (by size)"

// DefaultThreadStackReserveBytes is glibc's default pthread stack size with
// the usual 8 MiB RLIMIT_STACK, used when Input.ThreadStackBytes is 0.
const DefaultThreadStackReserveBytes = 8 << 20

// Input is one moment of the process, seen from all sides.
type Input struct {
	// Status is /proc/<pid>/status.
	Status procfs.Status
	// StatusBefore is status read just before smaps (zero: not read):
	// what changed between the two reads explains a VmSize that the
	// smaps sizes do not add up to.
	StatusBefore procfs.Status
	// Mappings is /proc/<pid>/smaps. Without it (nil) only the counters
	// are split: Go's classes at face value, RssFile, RssShmem.
	Mappings []procfs.Mapping
	// ThreadSPs are the threads' stack pointers (task/*/syscall).
	ThreadSPs []procfs.ThreadSP
	// Resident counts the resident bytes of an address range (pagemap);
	// nil estimates the ranges that share a mapping with other memory.
	Resident func(lo, hi uint64) (int64, error)
	// Runtime is the Go runtime's snapshot of the same process.
	Runtime rtstats.Snapshot
	// LedgerTotalBytes is what the trainer's ledger holds now; if zero,
	// the sum of Ledger's current bytes.
	LedgerTotalBytes int64
	// Ledger is the ledger's per-component snapshot.
	Ledger []ledger.Entry
	// ProbeHeap is the Go heap the probe itself holds (its packages and
	// libraries: MeasureProbeHeap), shown as the part probe.heap out of
	// heap/objects; nil shows no such part.
	ProbeHeap *ProbeHeap
	// OutsideGoComponents names ledger components whose memory is not in
	// the Go heap (C or device allocations in host memory).
	OutsideGoComponents []string
	// GoAddrs are addresses inside Go's heap arenas: heap objects and
	// goroutine stack variables.
	GoAddrs []uint64
	// ThreadStacks are pthread stacks whose ranges are known.
	ThreadStacks []StackRange
	// ThreadStackBytes is the default pthread stack size (glibc: from
	// RLIMIT_STACK); 0 means DefaultThreadStackReserveBytes.
	ThreadStackBytes int64
	// Race says the process runs with the race detector.
	Race bool
	// Threads is the number of OS threads; 0 means Status.Threads.
	Threads int
	// OpenFile opens a mapped file, by the path smaps shows, to read its
	// ELF program headers: the .bss rule bounds the anonymous mapping
	// above a file's data by the segment's size in memory. nil opens the
	// path itself, which names the process's file only in its own mount
	// namespace (a different file at that path is caught: its headers do
	// not match the mappings); a probe of another process can open
	// "/proc/<pid>/root" + path instead. What it returns is closed when it
	// is an io.Closer.
	OpenFile func(path string) (io.ReaderAt, error)
	// ReadMemory reads the process's memory at addr (/proc/<pid>/mem,
	// which needs ptrace access). It is used for one word at the start of
	// each glibc heap (heap_info.ar_ptr, the heap's arena), which tells
	// the arenas apart; nil, or a failed read, estimates the arenas from
	// the heaps' sizes (GlibcArenasExact false).
	ReadMemory func(addr uint64, b []byte) error
}

// StackRange is a known thread stack: [Lo, Hi) usable, GuardBytes of guard
// directly below Lo.
type StackRange struct {
	Lo, Hi     uint64
	GuardBytes int64
}

// Part is a named share of RSS and of VSZ (schema.ReconciliationPart).
type Part = schema.ReconciliationPart

// Piece is an address range of one mapping, or what is left of it
// (schema.MappingPiece).
type Piece = schema.MappingPiece

// ThreadStack is one pthread stack found in the address space
// (schema.ThreadStack).
type ThreadStack = schema.ThreadStack

// FileShare is one file's mappings (schema.FileShare).
type FileShare = schema.FileShare

// Reconciliation is RSS and VSZ split into parts; package schema defines
// it, field by field, as part of the result's format.
type Reconciliation = schema.Reconciliation

// MallocHeap is one of glibc's heaps of Reconciliation.MallocHeaps.
type MallocHeap = schema.MallocHeap

// Compute splits in's RSS and VSZ into parts (see the package comment).
// It reads pagemap through in.Resident: call it right after gathering in.
// Its stages: Go's classes and the ledger at face value (newComputation),
// the address space classified (classify), then the parts in the order
// they are listed: Go's heap, Go's mappings outside it, the ledger outside
// Go, everything else as classified, and what is left.
func Compute(in Input) Reconciliation {
	c := newComputation(&in)
	if in.Mappings == nil {
		c.countersOnly()
		return c.r
	}
	l := classify(&in)
	c.r.PSSBytes, c.r.SmapsRSSBytes, c.r.SmapsSizeBytes = l.pss, l.smapsRSS, l.smapsSize
	c.r.Warnings = append(c.r.Warnings, l.warnings...)
	arenaOther, arenaExcess := c.goHeap(l)
	rest, probable := c.goOffHeap(l, arenaOther)
	rest = c.outsideLedger(rest)
	rest = append(append(rest, arenaExcess...), probable...)
	c.classified(l)
	c.stacksAndFiles(l)
	c.unexplained(l, rest, probable)
	return c.r
}

// computation is Compute's state between its stages: the result so far
// and Go's classes and the ledger at face value.
type computation struct {
	in *Input
	r  Reconciliation
	m  rtstats.MemoryClasses
	// The ledger: its components outside Go (bytes, names, the note of
	// their part) and the note of its Go-heap part.
	ledgerOut int64
	outNote   string
	// The go.heap.* parts at face value (heapFace), by name and note,
	// in the order they are listed; heapSum their sum.
	heapFace  [5]int64
	heapNames [5]string
	heapNotes [5]string
	heapSum   int64
	// goMeta is what runtime/metrics says Go mapped outside its heap
	// classes (metadata, profiling buckets, other, os-stacks); goMapped
	// all it mapped less what it released.
	goMeta, goMapped int64
}

func (c *computation) warn(format string, args ...any) {
	c.r.Warnings = append(c.r.Warnings, fmt.Sprintf(format, args...))
}

func (c *computation) add(name string, resident, reserved int64, count int, note string) {
	c.r.Parts = append(c.r.Parts, Part{Name: name, Bytes: resident, ReservedBytes: reserved, Count: count, Note: note})
}

// newComputation reads Go's classes and the ledger at face value: the
// ledger split into Go-heap and outside-Go components, the probe's own
// heap beside it, and the go.heap.* parts they make.
func newComputation(in *Input) *computation {
	st, m := in.Status, in.Runtime.Memory
	c := &computation{in: in, m: m, r: Reconciliation{
		RSSBytes: int64(st.VmRSSBytes), VSZBytes: int64(st.VmSizeBytes),
		Parts: []Part{}, UnexplainedMappings: []Piece{}, ThreadStacks: []ThreadStack{},
		Files: []FileShare{}, Warnings: []string{},
	}}
	var ledgerSum int64
	var outNames []string
	for _, e := range in.Ledger {
		ledgerSum += e.CurrentBytes
		if slices.Contains(in.OutsideGoComponents, e.Component) {
			c.ledgerOut += e.CurrentBytes
			outNames = append(outNames, e.Component)
		}
	}
	ledgerTotal := in.LedgerTotalBytes
	if ledgerTotal == 0 {
		ledgerTotal = ledgerSum
	} else if len(in.Ledger) > 0 && ledgerTotal != ledgerSum {
		c.warn("ledger total %d B differs from the sum of its entries %d B", ledgerTotal, ledgerSum)
	}
	ledgerGo := ledgerTotal - c.ledgerOut
	ledgerHeap := min(max(ledgerGo, 0), m.HeapObjectsBytes)
	if ledgerGo > m.HeapObjectsBytes {
		c.warn("ledger holds %d B in the Go heap but heap/objects is %d B; go.heap.objects.ledger is capped", ledgerGo, m.HeapObjectsBytes)
	}
	ledgerNote := fmt.Sprintf("trainer ledger: %d Go-heap components", len(in.Ledger)-len(outNames))
	c.outNote = "ledger components outside the Go heap: none named"
	if len(outNames) > 0 {
		c.outNote = fmt.Sprintf("ledger components outside the Go heap %v: unclaimed mappings, largest first, up to their bytes", outNames)
	}
	// The probe's own heap (its packages and libraries), beside the
	// ledger: what a reader must not take for the trainer's.
	var probeHeap int64
	var probeNote string
	if h := in.ProbeHeap; h != nil {
		probeHeap, probeNote = min(max(h.Bytes, 0), max(m.HeapObjectsBytes-ledgerHeap, 0)), h.Note
		if h.Bytes > probeHeap {
			c.warn("the probe's own heap is %d B but heap/objects less the ledger is %d B; probe.heap is capped", h.Bytes, m.HeapObjectsBytes-ledgerHeap)
		}
	}
	c.heapFace = [5]int64{ledgerHeap, probeHeap, m.HeapObjectsBytes - ledgerHeap - probeHeap, m.HeapFreeBytes + m.HeapUnusedBytes, m.HeapStacksBytes}
	c.heapNames = [5]string{"go.heap.objects.ledger", "probe.heap", "go.heap.objects.other", "go.heap.free", "go.stacks.goroutines"}
	c.heapNotes = [5]string{ledgerNote, probeNote, "heap/objects not in the ledger, incl. unswept garbage",
		"heap/free + heap/unused: held by Go, not returned", "heap/stacks"}
	if in.ProbeHeap != nil {
		c.heapNotes[2] = "heap/objects not in the ledger nor the probe's, incl. unswept garbage"
	}
	for _, b := range c.heapFace {
		c.heapSum += b
	}
	c.goMeta = m.MetadataBytes() + m.ProfilingBucketsBytes + m.OtherBytes + m.OSStacksBytes
	c.goMapped = m.TotalBytes - m.HeapReleasedBytes
	if sum := c.heapSum + c.goMeta; sum != c.goMapped {
		c.warn("Go memory classes sum to %d B, total − released is %d B", sum, c.goMapped)
	}
	return c
}

// countersOnly is the result without smaps: Go's classes at face value
// (mapped, not resident), the kernel's file and shmem counters.
func (c *computation) countersOnly() {
	st := c.in.Status
	for i := range c.heapFace {
		if i != 1 || c.in.ProbeHeap != nil {
			c.add(c.heapNames[i], c.heapFace[i], c.heapFace[i], 0, c.heapNotes[i])
		}
	}
	c.add("go.heap.released", 0, c.m.HeapReleasedBytes, 0, "heap/released: mapped, returned to the OS")
	c.add(clGoOffHeap, c.goMeta, c.goMeta, 0, "metadata/* + profiling/buckets + other + os-stacks, mapped")
	c.add("outside_go.ledger", c.ledgerOut, c.ledgerOut, 0, c.outNote)
	c.add(clFile, int64(st.RssFileBytes), 0, 0, "RssFile")
	c.add(clShmem, int64(st.RssShmemBytes), 0, 0, "RssShmem")
	finish(&c.r)
	c.r.UnexplainedNote = "no smaps: Go's classes at face value (mapped, not resident); C memory, stacks and the rest are unexplained"
}

// goHeap adds Go's heap parts: the classes, at most what the arenas have
// resident, and go.arena.other. It returns go.arena.other's resident
// bytes and the arenas' excess over what Go says it mapped there (an
// unexplained piece, none where there is no excess).
func (c *computation) goHeap(l *layout) (arenaOther int64, arenaExcess []Piece) {
	m := c.m
	arena := *l.tally(clGoArena)
	c.r.GoArenaRSSBytes = arena.resident
	if arena.count == 0 && m.HeapObjectsBytes > 0 {
		c.warn("no mapping holds a known Go heap address (Input.GoAddrs): Go's arenas are not found and its heap parts are 0")
	}
	heapRes := c.heapFace
	excess := c.heapSum - arena.resident
	for _, k := range []int{3, 2, 4, 1, 0} { // free first, the probe's objects, then the ledger's, last
		d := min(max(excess, 0), heapRes[k])
		heapRes[k] -= d
		excess -= d
	}
	var heapResSum int64
	for i := range c.heapFace {
		note := c.heapNotes[i]
		if heapRes[i] < c.heapFace[i] {
			note += fmt.Sprintf("; %s mapped, cut to what the arenas have resident", iec(c.heapFace[i]))
		}
		if i != 1 || c.in.ProbeHeap != nil {
			c.add(c.heapNames[i], heapRes[i], c.heapFace[i], 0, note)
		}
		heapResSum += heapRes[i]
	}
	c.add("go.heap.released", 0, m.HeapReleasedBytes, 0, "heap/released: mapped, returned to the OS")

	// What the arenas hold beyond the heap classes is bounded by what
	// runtime/metrics says Go mapped beyond them: the metadata classes
	// (GC work buffers live in the arenas, counted in metadata/other),
	// less what Go's named mappings outside the arenas hold. The rest is
	// no class's: unexplained, with a warning.
	off := *l.tally(clGoOffHeap)
	heapSys := c.heapSum + m.HeapReleasedBytes
	metaRoom := max(c.goMeta-off.resident, 0)
	arenaOther = arena.resident - heapResSum
	excessRes := max(arenaOther-metaRoom, 0)
	arenaOther -= excessRes
	arenaNone := l.goArenaProtNone()
	excessResv := max(arena.reserved-arenaNone-heapSys-c.goMeta, 0)
	arenaOtherResv := arena.reserved - heapSys - excessResv
	if arenaOtherResv < 0 {
		c.warn("Go's heap classes map %d B more than the arena mappings found hold: an arena may hold no known address", -arenaOtherResv)
		arenaOtherResv = 0
	}
	otherNote := fmt.Sprintf("arena mappings beyond the heap classes: in-arena metadata (GC work buffers), at most the metadata classes' %s less Go's named mappings; %s of PROT_NONE reservations",
		iec(c.goMeta), iec(arenaNone))
	if excessRes > 0 || excessResv > 0 {
		lo, hi := l.goArenaSpan()
		arenaExcess = append(arenaExcess, Piece{Start: lo, End: hi, Perms: "rw-p", ResidentBytes: excessRes, ReservedBytes: excessResv,
			Note: "Go's arena mappings beyond what runtime/metrics says Go mapped"})
		c.warn("Go's arena mappings hold %s resident (%s mapped read-write) beyond what runtime/metrics says Go mapped there (heap classes %s, metadata classes %s): counted as unexplained; another mapping may have merged with an arena",
			iec(excessRes), iec(excessResv), iec(heapSys), iec(c.goMeta))
	}
	c.add("go.arena.other", arenaOther, arenaOtherResv, arena.count, otherNote)
	return arenaOther, arenaExcess
}

// goOffHeap adds Go's mappings outside the arenas: only those the kernel
// names as Go's. Unnamed candidates that fit the metadata classes' budget
// by size are probable Go metadata, but nothing says they are Go's: they
// stay unexplained, marked (probable); the other candidates are rest, by
// resident bytes, smallest first.
func (c *computation) goOffHeap(l *layout, arenaOther int64) (rest, probable []Piece) {
	off := *l.tally(clGoOffHeap)
	budget := max(c.goMeta-arenaOther-off.resident, 0)
	cands := l.candidates
	slices.SortStableFunc(cands, func(a, b Piece) int {
		return cmp.Or(cmp.Compare(a.ResidentBytes, b.ResidentBytes), cmp.Compare(a.Start, b.Start))
	})
	for _, p := range cands {
		// A mapping larger than all Go could have mapped outside its
		// arenas is not Go's, however little of it is resident (a BLAS
		// buffer).
		if p.ResidentBytes <= budget && p.ReservedBytes <= c.goMeta+GoHeapIndexBytes {
			budget -= p.ResidentBytes
			p.Note = strings.TrimPrefix(p.Note+"; "+probableGoMetadata, "; ")
			c.r.ProbableGoMetadataBytes += p.ResidentBytes
			probable = append(probable, p)
			continue
		}
		rest = append(rest, p)
	}
	c.r.ProbableGoMetadataBudgetLeftBytes = budget
	c.add(clGoOffHeap, off.resident, off.reserved, off.count, fmt.Sprintf(
		"metadata/* + profiling/buckets + other + os-stacks: %s mapped; %d mappings named by the kernel as Go's (unnamed ones that fit by size are unexplained, as probable Go metadata)",
		iec(c.goMeta), off.count))
	c.r.GoMappedNotResidentBytes = max(c.goMapped-l.tally(clGoArena).resident-off.resident, 0)
	return rest, probable
}

// outsideLedger adds the ledger's components outside Go, taken from the
// largest candidates of rest up to their bytes, and returns what is left.
func (c *computation) outsideLedger(rest []Piece) []Piece {
	var outRes, outResv int64
	var outCount int
	if c.ledgerOut > 0 {
		slices.Reverse(rest)
		left := rest[:0]
		for _, p := range rest {
			if p.ResidentBytes <= c.ledgerOut-outRes {
				outRes += p.ResidentBytes
				outResv += p.ReservedBytes
				outCount++
				continue
			}
			left = append(left, p)
		}
		rest = left
		slices.Reverse(rest)
	}
	c.add("outside_go.ledger", outRes, outResv, outCount, c.outNote)
	return rest
}

// classified adds everything else, as classify claimed it, and glibc's
// heaps.
func (c *computation) classified(l *layout) {
	stacksNote := l.stacksNote(c.in)
	for _, p := range []struct{ name, note string }{
		{clMain, "[stack]: the main thread's stack"},
		{clWorkers, "pthread stacks of trainer/osthread workers (pthread_getattr_np ranges) with their guards"},
		{clThreads, stacksNote},
		{clBrk, "[heap]: glibc's main malloc arena (brk)"},
		{clArenas, l.arenasNote()},
		{clMmap, "glibc malloc's large blocks, a mapping each (mmapped chunks: by their headers, or named by glibc 2.41+)"},
		{clPyMalloc, "CPython's small-object allocator (obmalloc): its pools (16 KiB, 4 KiB before 3.10), by their headers"},
		{clSitesOwn, "memprobe's allocation-site library (--sites): its buffers in the program, by their headers: the probe's own cost"},
		{clRace, "race detector shadow memory"},
		{clBSS, "anonymous mapping above a file's data: the binary's and libraries' .bss"},
		{clFile, "file pages: binary text, shared libraries, mapped files (clean)"},
		{clCOW, "pages written in private file mappings (relocations, .data): anonymous"},
		{clShmem, "shared memory: tmpfs, memfd, SysV"},
		{clKernel, "[vdso], [vvar]: the kernel's pages"},
		{clGPU, "mappings of GPU driver devices (/dev/nvidia*, /dev/dri, /dev/kfd): pinned host memory, device apertures"},
		{clReserved, "anonymous address space with nothing resident, or PROT_NONE: Go's page-allocator index, untouched mappings"},
	} {
		t := l.tallies[p.name]
		if t == nil && (p.name == clMmap || p.name == clPyMalloc || p.name == clSitesOwn || p.name == clGPU || p.name == clRace && !c.in.Race) {
			continue
		}
		if t == nil {
			t = &tally{}
		}
		c.add(p.name, t.resident, t.reserved, t.count, p.note)
	}
	c.r.GlibcArenas, c.r.GlibcHeaps, c.r.GlibcArenasExact = l.arenas, len(l.heaps), l.arenasExact
	for _, h := range l.heaps {
		c.r.MallocHeaps = append(c.r.MallocHeaps, MallocHeap{StartAddr: h.start, ReadWriteBytes: int64(h.rw), ResidentBytes: h.resident, ArenaAddr: h.arena})
	}
}

// stacksAndFiles lists the thread stacks and the files, for the JSON.
func (c *computation) stacksAndFiles(l *layout) {
	r := &c.r
	for _, s := range l.stacks {
		r.ThreadStacks = append(r.ThreadStacks, s)
		r.ThreadStackReservedBytes += s.ReservedBytes
		r.ThreadStackGuardBytes += s.GuardBytes
		r.ThreadStackResidentBytes += s.ResidentBytes
	}
	slices.SortFunc(r.ThreadStacks, func(a, b ThreadStack) int { return cmp.Compare(a.Lo, b.Lo) })
	r.PthreadStacks = len(r.ThreadStacks)
	for _, f := range l.files {
		r.Files = append(r.Files, *f)
	}
	slices.SortFunc(r.Files, func(a, b FileShare) int {
		return cmp.Or(cmp.Compare(b.ResidentBytes+b.COWBytes+b.BSSResidentBytes, a.ResidentBytes+a.COWBytes+a.BSSResidentBytes), strings.Compare(a.Path, b.Path))
	})
}

// unexplained sets what is left: the unexplained bytes, the pieces no
// part took (rest, of which probable are probable Go metadata), largest
// first, and the note and warnings that say why.
func (c *computation) unexplained(l *layout, rest, probable []Piece) {
	r := &c.r
	finish(r)
	slices.SortStableFunc(rest, func(a, b Piece) int {
		return cmp.Or(cmp.Compare(b.ResidentBytes, a.ResidentBytes), cmp.Compare(a.Start, b.Start))
	})
	r.UnexplainedAll = rest
	var restSum int64
	for i, p := range rest {
		restSum += p.ResidentBytes
		if i < 8 {
			r.UnexplainedMappings = append(r.UnexplainedMappings, p)
		}
	}
	if len(rest) > 8 {
		var agg Piece
		for _, p := range rest[8:] {
			agg.ResidentBytes += p.ResidentBytes
			agg.ReservedBytes += p.ReservedBytes
		}
		agg.Note = fmt.Sprintf("%d smaller anonymous mappings", len(rest)-8)
		r.UnexplainedMappings = append(r.UnexplainedMappings, agg)
	}
	drift := r.RSSBytes - l.smapsRSS
	why := []string{fmt.Sprintf("%s in %d anonymous mappings no source claims", iec(restSum), len(rest))}
	if len(rest) > 0 {
		why[0] += fmt.Sprintf(" (largest %#x-%#x: %s resident)", rest[0].Start, rest[0].End, iec(rest[0].ResidentBytes))
	}
	if len(probable) > 0 {
		why = append(why, fmt.Sprintf("of which %s in %s fit Go's metadata classes by size (probable Go metadata; %s of their %s budget left)",
			iec(r.ProbableGoMetadataBytes), plural(len(probable), "mapping"), iec(r.ProbableGoMetadataBudgetLeftBytes), iec(c.goMeta)))
	}
	why = append(why, fmt.Sprintf("VmRSS − Σ smaps Rss = %s (status counters are per-CPU batched)", iecSigned(drift)))
	if d := r.VSZBytes - l.smapsSize; d != 0 {
		why = append(why, fmt.Sprintf("VmSize − Σ smaps Size = %s (a mapping came or went between the reads)", iecSigned(d)))
	}
	if large(r.UnexplainedBytes, r.RSSBytes) {
		if restSum > 0 {
			why = append(why, "large: smaps has resident memory that neither Go's classes, the ledger, the thread stacks nor glibc's shapes account for")
		}
		if large(drift, r.RSSBytes) {
			why = append(why, "large: the status counters and the page walk disagree (or memory changed between the reads)")
		}
	}
	r.UnexplainedNote = strings.Join(why, "; ")
	if large(drift, r.RSSBytes) {
		c.warn("VmRSS %s differs from smaps' page walk %s by %s", iec(r.RSSBytes), iec(l.smapsRSS), signed(drift))
	}
	if d := r.VSZBytes - l.smapsSize; large(d, r.VSZBytes) {
		c.warn("VmSize %s differs from Σ smaps Size %s by %s: %s", iec(r.VSZBytes), iec(l.smapsSize), signed(d), vszDriftCause(c.in.StatusBefore, c.in.Status))
	}
}

// finish sets the unexplained bytes from the parts.
func finish(r *Reconciliation) {
	var res, resv int64
	for _, p := range r.Parts {
		res += p.Bytes
		resv += p.ReservedBytes
	}
	r.UnexplainedBytes = r.RSSBytes - res
	r.UnexplainedReservedBytes = r.VSZBytes - resv
}

// stacksNote says how the other pthread stacks were found.
func (l *layout) stacksNote(in *Input) string {
	by := map[string]int{}
	for _, s := range l.stacks {
		if s.Source != "pthread_getattr_np" {
			by[s.Source]++
		}
	}
	threads := cmp.Or(in.Threads, in.Status.Threads)
	return fmt.Sprintf("other pthread stacks with guards: %d by stack pointer, %d by guard shape, %d by name; %d threads, %d stacks in use, %d threads on goroutine stacks",
		by["syscall sp"], by["guard shape"], by["name"], threads, l.liveStacks, l.goroutineSPs)
}

// large says whether b is more than 1 MiB and 1 % of total.
func large(b, total int64) bool {
	b = max(b, -b)
	return b > 1<<20 && b*100 > total
}

// iec formats bytes in the notes: "8 MiB", "16 KiB", "1.5 MiB"
// (table.FormatBytesShort, as probe exec's diagnosis).
func iec(b int64) string { return table.FormatBytesShort(b) }

// signed is iec with its sign: "+64 MiB", "−8 MiB".
func signed(b int64) string {
	if b < 0 {
		return iecSigned(b)
	}
	return "+" + iec(b)
}

// vszDriftCause says why VmSize (status, read after smaps) and the sum of
// the smaps sizes disagree: smaps is read mapping by mapping while the
// process runs, and a thread created or ended meanwhile maps or unmaps its
// stack (8 MiB by default). status read before the walk (before; zero
// where there was none) tells which.
func vszDriftCause(before, after procfs.Status) string {
	switch {
	case before.VmSizeBytes == 0:
	case before.Threads != after.Threads:
		return fmt.Sprintf("probably a race with threads created or ended during the walk (%d threads before it, %d after), whose stacks were mapped or unmapped between the reads", before.Threads, after.Threads)
	case before.VmSizeBytes != after.VmSizeBytes:
		return fmt.Sprintf("the process mapped or unmapped memory during the walk (VmSize %s before it, %s after)", iec(int64(before.VmSizeBytes)), iec(int64(after.VmSizeBytes)))
	}
	return "mappings came or went while smaps was read"
}

// iecSigned is iec with a minus sign (U+2212) for a negative drift.
func iecSigned(b int64) string {
	if b < 0 {
		return "−" + iec(-b)
	}
	return iec(b)
}
