// Package reconcile explains a process's resident set: it splits RSS, as
// the kernel reports it, into named parts using what the Go runtime and the
// trainer's ledger say they hold, and it never hides what does not add up.
//
// It is the last stage of the probe: [memprobe/probe/procfs] gives the
// kernel's view, [memprobe/probe/rtstats] the Go runtime's, the trainer's
// [memprobe/probe/ledger] its own; Compute lines them up and Render prints
// the table.
//
// # Method
//
// RSS is VmRSS from /proc/<pid>/status, which the kernel computes as
// RssAnon + RssFile + RssShmem. Parts, in order:
//
//  1. go.heap.objects.ledger: the ledger's bytes that live in the Go heap
//     (all components except Input.OutsideGoComponents), capped at
//     /memory/classes/heap/objects.
//  2. go.heap.objects.other: heap/objects minus (1): objects the ledger
//     does not know, plus dead objects not yet swept.
//  3. go.heap.free: heap/free + heap/unused, heap the runtime holds but no
//     object uses.
//  4. go.stacks.goroutines: heap/stacks (in a non-cgo program this also
//     holds the g0 stacks of the runtime's OS threads).
//  5. go.runtime.metadata: metadata/* + profiling/buckets + other.
//  6. go.stacks.os: os-stacks, thread stacks the runtime got from the OS.
//  7. outside_go.thread_stacks: an estimate of touched stack pages of
//     threads whose stacks pthread_create made (every thread in a cgo
//     binary; threads C code started otherwise): threads ×
//     Input.ThreadStackTouchedBytes.
//  8. outside_go.ledger: ledger components that live outside the Go heap
//     (e.g. device buffers made by C).
//  9. outside_go.other: RssAnon − (1..8), never below zero: C malloc, glibc
//     arenas, device and driver buffers, the binary's .data/.bss.
//  10. file.mapped: RssFile (program text, shared libraries, mapped files).
//  11. shmem: RssShmem.
//
// Unexplained is RSS − Σ parts, shown with its sign.
//
// # Limits
//
// Go's /memory/classes count mapped memory, not resident memory: a page
// the runtime mapped but never touched, or whose metadata array is mostly
// untouched, counts in full. Parts 1–6 are shown at face value, which makes
// them an upper bound of Go's resident memory. When they exceed RssAnon, (9)
// is clamped at zero and the excess appears as a negative unexplained
// residual, with a note; it also appears in the VSZ table as
// go.mapped.not_resident. Conversely, when they do not exceed RssAnon,
// (9) is a remainder and so a lower bound of the memory outside Go: any Go
// memory that is mapped but not resident makes (9) too small by as much,
// and the residual is zero by construction. The status counters are
// per-CPU batched and may lag smaps_rollup's page walk by a few hundred
// KiB; when a smaps_rollup reading is given, large disagreements are
// warnings. Thread-stack residency is an estimate from a per-thread
// figure, not a measurement (that would need /proc/<pid>/smaps per stack
// mapping). The runtime and the kernel are read at slightly different
// moments.
//
// VSZ is split the same way: resident, Go's released heap (mapped,
// returned to the OS), Go's mapped-not-resident excess, thread stack
// reservations beyond the touched pages, swap, and the rest of the address
// space (Go's PROT_NONE arena and page-allocator reservations, untouched
// parts of file mappings and C heaps, guard pages).
package reconcile

import (
	"fmt"
	"slices"
	"strings"

	"memprobe/probe/ledger"
	"memprobe/probe/procfs"
	"memprobe/probe/rtstats"
)

// Defaults of Input.
const (
	// DefaultThreadStackReserveBytes is glibc's default pthread stack size
	// (from RLIMIT_STACK, commonly 8 MiB).
	DefaultThreadStackReserveBytes = 8 << 20
	// DefaultThreadStackTouchedBytes guesses the resident part of an idle
	// pthread stack: the page holding the thread descriptor and TLS, and a
	// few pages of stack.
	DefaultThreadStackTouchedBytes = 16 << 10
)

// Input is one moment of the process, seen from all sides.
type Input struct {
	// Status is /proc/<pid>/status.
	Status procfs.Status
	// Smaps is /proc/<pid>/smaps_rollup, if read; it adds PSS and cross
	// checks.
	Smaps *procfs.SmapsRollup
	// Runtime is the Go runtime's snapshot of the same process.
	Runtime rtstats.Snapshot
	// LedgerTotalBytes is what the trainer's ledger holds now; if zero,
	// the sum of Ledger's current bytes.
	LedgerTotalBytes int64
	// Ledger is the ledger's per-component snapshot.
	Ledger []ledger.Entry
	// OutsideGoComponents names ledger components whose memory is not in
	// the Go heap (C or device allocations).
	OutsideGoComponents []string
	// Threads is the number of OS threads; 0 means Status.Threads.
	Threads int
	// Cgo says the process is a cgo binary, where the runtime's own
	// threads get pthread stacks outside Go's accounting. Otherwise only
	// threads beyond Runtime.RuntimeThreads have such stacks.
	Cgo bool
	// ThreadStackReserveBytes is each pthread stack's reservation; 0 means
	// DefaultThreadStackReserveBytes.
	ThreadStackReserveBytes int64
	// ThreadStackTouchedBytes estimates each pthread stack's resident
	// part; 0 means DefaultThreadStackTouchedBytes.
	ThreadStackTouchedBytes int64
}

// Part is a named share of RSS or VSZ.
type Part struct {
	Name  string `json:"name"`
	Bytes int64  `json:"bytes"`
	Note  string `json:"note"`
}

// Reconciliation is RSS and VSZ split into parts. For Parts, Σ Bytes +
// UnexplainedBytes == RSSBytes; for Virtual, Σ Bytes == VSZBytes (its last
// part is the remainder). Slices are never nil.
type Reconciliation struct {
	RSSBytes int64 `json:"rss_bytes"`
	VSZBytes int64 `json:"vsz_bytes"`
	// PSSBytes is smaps_rollup's Pss, 0 without a smaps reading.
	PSSBytes int64 `json:"pss_bytes"`
	// Parts explain RSS.
	Parts []Part `json:"parts"`
	// UnexplainedBytes is RSS − Σ Parts; negative when the parts claim
	// more than is resident.
	UnexplainedBytes int64  `json:"unexplained_bytes"`
	UnexplainedNote  string `json:"unexplained_note"`
	// Virtual explains VSZ; it starts with RSS as one part.
	Virtual []Part `json:"virtual"`
	// PthreadStacks is the number of threads with pthread-made stacks.
	PthreadStacks int `json:"pthread_stacks"`
	// ThreadStackReservedBytes is PthreadStacks × reservation: virtual,
	// not resident.
	ThreadStackReservedBytes int64 `json:"thread_stack_reserved_bytes"`
	// Warnings are disagreements between sources.
	Warnings []string `json:"warnings"`
}

// Compute splits in's RSS and VSZ into parts (see the package comment).
func Compute(in Input) Reconciliation {
	st, m := in.Status, in.Runtime.Memory
	r := Reconciliation{
		RSSBytes: int64(st.VmRSSBytes),
		VSZBytes: int64(st.VmSizeBytes),
		Parts:    []Part{},
		Virtual:  []Part{},
		Warnings: []string{},
	}
	warn := func(format string, args ...any) { r.Warnings = append(r.Warnings, fmt.Sprintf(format, args...)) }
	add := func(name string, b int64, note string) { r.Parts = append(r.Parts, Part{name, b, note}) }

	// Ledger: split into Go-heap and outside-Go components.
	var ledgerSum, ledgerOut int64
	var outNames []string
	for _, e := range in.Ledger {
		ledgerSum += e.CurrentBytes
		if slices.Contains(in.OutsideGoComponents, e.Component) {
			ledgerOut += e.CurrentBytes
			outNames = append(outNames, e.Component)
		}
	}
	ledgerTotal := in.LedgerTotalBytes
	if ledgerTotal == 0 {
		ledgerTotal = ledgerSum
	} else if len(in.Ledger) > 0 && ledgerTotal != ledgerSum {
		warn("ledger total %d B differs from the sum of its entries %d B", ledgerTotal, ledgerSum)
	}
	ledgerGo := ledgerTotal - ledgerOut
	ledgerHeap := min(max(ledgerGo, 0), m.HeapObjectsBytes)
	if ledgerGo > m.HeapObjectsBytes {
		warn("ledger holds %d B in the Go heap but heap/objects is %d B; go.heap.objects.ledger is capped", ledgerGo, m.HeapObjectsBytes)
	}

	// Go runtime parts, at face value.
	add("go.heap.objects.ledger", ledgerHeap, fmt.Sprintf("trainer ledger: %d Go-heap components", len(in.Ledger)-len(outNames)))
	add("go.heap.objects.other", m.HeapObjectsBytes-ledgerHeap, "heap/objects not in the ledger, incl. unswept garbage")
	add("go.heap.free", m.HeapFreeBytes+m.HeapUnusedBytes, "heap/free + heap/unused: held by Go, not returned")
	add("go.stacks.goroutines", m.HeapStacksBytes, "heap/stacks")
	add("go.runtime.metadata", m.MetadataBytes()+m.ProfilingBucketsBytes+m.OtherBytes, "metadata/* + profiling/buckets + other")
	add("go.stacks.os", m.OSStacksBytes, "os-stacks")
	goMapped := m.TotalBytes - m.HeapReleasedBytes
	var goSum int64
	for _, p := range r.Parts {
		goSum += p.Bytes
	}
	if goSum != goMapped {
		warn("Go memory classes sum to %d B, total − released is %d B", goSum, goMapped)
	}

	// Outside Go.
	threads := in.Threads
	if threads == 0 {
		threads = st.Threads
	}
	pthreads := threads
	if !in.Cgo {
		pthreads = max(threads-int(in.Runtime.RuntimeThreads), 0)
	}
	reserve := cmpOr(in.ThreadStackReserveBytes, DefaultThreadStackReserveBytes)
	touched := cmpOr(in.ThreadStackTouchedBytes, DefaultThreadStackTouchedBytes)
	r.PthreadStacks = pthreads
	r.ThreadStackReservedBytes = int64(pthreads) * reserve
	stacks := int64(pthreads) * touched
	add("outside_go.thread_stacks", stacks, fmt.Sprintf("estimate: %d pthread stacks × %s touched", pthreads, iec(touched)))
	outNote := "none named"
	if len(outNames) > 0 {
		outNote = fmt.Sprint(outNames)
	}
	add("outside_go.ledger", ledgerOut, "ledger components outside the Go heap: "+outNote)
	anon := int64(st.RssAnonBytes)
	other := anon - goSum - stacks - ledgerOut
	add("outside_go.other", max(other, 0), "RssAnon − above: C malloc, glibc arenas, device buffers, .data/.bss; a lower bound")
	add("file.mapped", int64(st.RssFileBytes), "RssFile: binary text, shared libraries, mapped files")
	add("shmem", int64(st.RssShmemBytes), "RssShmem: shared memory, tmpfs, memfd")

	var sum int64
	for _, p := range r.Parts {
		sum += p.Bytes
	}
	r.UnexplainedBytes = r.RSSBytes - sum
	var why []string
	if other < 0 {
		msg := fmt.Sprintf("parts claim %d B more than RssAnon", -other)
		if goSum > anon {
			msg += fmt.Sprintf(", Go classes alone %d B (they count mapped, not resident, memory)", goSum-anon)
		}
		why = append(why, msg)
	}
	if d := r.RSSBytes - int64(st.RssAnonBytes+st.RssFileBytes+st.RssShmemBytes); d != 0 {
		why = append(why, fmt.Sprintf("VmRSS − (RssAnon+RssFile+RssShmem) = %d B", d))
	}
	switch {
	case len(why) > 0:
		r.UnexplainedNote = strings.Join(why, "; ")
	case r.UnexplainedBytes == 0:
		r.UnexplainedNote = "zero by construction: outside_go.other is the remainder"
	}

	// Cross-checks with the page walk.
	if sm := in.Smaps; sm != nil {
		r.PSSBytes = int64(sm.PssBytes)
		check := func(what string, walk, counter uint64) {
			d := int64(walk) - int64(counter)
			if abs(d) > 1<<20 && abs(d)*100 > int64(counter) {
				warn("smaps_rollup %s %d B differs from status by %d B (status counters are batched and approximate)", what, walk, d)
			}
		}
		check("Rss", sm.RssBytes, st.VmRSSBytes)
		check("Anonymous", sm.AnonymousBytes, st.RssAnonBytes)
	}

	// VSZ.
	vadd := func(name string, b int64, note string) { r.Virtual = append(r.Virtual, Part{name, b, note}) }
	vadd("resident", r.RSSBytes, "RSS, as above")
	vadd("go.heap.released", m.HeapReleasedBytes, "heap/released: mapped, returned to the OS")
	vadd("go.mapped.not_resident", max(goSum-anon, 0), "Go classes beyond RssAnon: mapped, never or no longer touched")
	vadd("thread_stacks.reserved", r.ThreadStackReservedBytes-stacks,
		fmt.Sprintf("VIRTUAL: %d × %s reserved, less the touched estimate", pthreads, iec(reserve)))
	vadd("swap", int64(st.VmSwapBytes), "VmSwap: swapped out")
	var vsum int64
	for _, p := range r.Virtual {
		vsum += p.Bytes
	}
	vadd("other.address_space", r.VSZBytes-vsum, "rest: Go arena/page-allocator reservations, untouched mappings, guard pages")
	return r
}

func cmpOr(v, def int64) int64 {
	if v == 0 {
		return def
	}
	return v
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// iec formats bytes with a binary prefix, e.g. "8 MiB", "16 KiB".
func iec(b int64) string {
	switch {
	case b != 0 && b%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", b>>20)
	case b != 0 && b%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", b>>10)
	}
	return fmt.Sprintf("%d B", b)
}
