// Package rtstats reads the Go runtime's own view of its memory through
// runtime/metrics, without allocating after construction.
//
// It is the in-process half of the probe: [memprobe/instrument/procfs] says what
// the kernel sees, rtstats says what the Go runtime thinks it holds, and
// [memprobe/instrument/reconcile] lines the two up.
//
// A [Reader] owns one []metrics.Sample, built once by [New], and fills a
// caller-owned [Snapshot] on each Read; Read allocates nothing (the pause
// histogram's buckets are reused from the previous read, which
// runtime/metrics does when the sample already holds a histogram).
//
// Notes on the numbers:
//
//   - Heap counters (/gc/heap/allocs:*, /gc/heap/frees:*) are cumulative.
//     Small-object allocations are added to them when a span leaves a P's
//     mcache, so a delta between two reads can lag the truth by up to one
//     span per size class per P; objects larger than 32 KiB are counted at
//     once. Over many steps ([Steady]) the lag washes out.
//   - GCPauseTotalNs is an estimate: runtime/metrics exposes GC pauses only
//     as the /sched/pauses/total/gc:seconds histogram (stop-the-world
//     latency included; /gc/pauses:seconds is its deprecated alias). We sum
//     count × bucket lower bound. The runtime's buckets split each power
//     of two into 4, so this floor is at most 20% below the true total.
//   - Threads: /sched/threads/total:threads (Go 1.26) counts only threads
//     the Go runtime owns. OSThreads, read from /proc/self/status on Linux,
//     counts every thread, including those made by C code (cgo, BLAS
//     pools); it is read by [ReadOSThreads], not by Read, because reading a
//     file allocates.
package rtstats

import (
	"math"
	"runtime/metrics"

	"memprobe/instrument/procfs"
	"memprobe/schema"
)

// MemoryClasses is /memory/classes/*: every byte of address space the Go
// runtime has mapped, by use (schema.MemoryClasses).
type MemoryClasses = schema.MemoryClasses

// Snapshot is one read of the runtime's metrics (schema.RuntimeSnapshot).
// All fields are int64 so that a Delta of two snapshots can hold a
// shrinking gauge.
type Snapshot = schema.RuntimeSnapshot

const pauseMetric = "/sched/pauses/total/gc:seconds"

// Reader reads runtime/metrics into Snapshots. A Reader is not safe for
// concurrent use.
type Reader struct {
	samples []metrics.Sample
	dst     []*int64 // dst[i] is where samples[i] goes, relative to &scratch
	scratch Snapshot
	pause   int // index of pauseMetric in samples
}

// New builds a Reader. It panics if the running Go lacks one of the metrics,
// which would be a toolchain mismatch, not a runtime condition.
func New() *Reader {
	r := &Reader{}
	s := &r.scratch
	m := &s.Memory
	for _, e := range []struct {
		name string
		dst  *int64
	}{
		{"/gc/heap/allocs:objects", &s.HeapAllocsObjects},
		{"/gc/heap/allocs:bytes", &s.HeapAllocsBytes},
		{"/gc/heap/frees:objects", &s.HeapFreesObjects},
		{"/gc/heap/frees:bytes", &s.HeapFreesBytes},
		{"/gc/heap/live:bytes", &s.HeapLiveBytes},
		{"/gc/heap/goal:bytes", &s.HeapGoalBytes},
		{"/gc/cycles/total:gc-cycles", &s.GCCycles},
		{"/sched/goroutines:goroutines", &s.Goroutines},
		{"/sched/gomaxprocs:threads", &s.GOMAXPROCS},
		{"/sched/threads/total:threads", &s.RuntimeThreads},
		{"/memory/classes/heap/objects:bytes", &m.HeapObjectsBytes},
		{"/memory/classes/heap/unused:bytes", &m.HeapUnusedBytes},
		{"/memory/classes/heap/free:bytes", &m.HeapFreeBytes},
		{"/memory/classes/heap/released:bytes", &m.HeapReleasedBytes},
		{"/memory/classes/heap/stacks:bytes", &m.HeapStacksBytes},
		{"/memory/classes/os-stacks:bytes", &m.OSStacksBytes},
		{"/memory/classes/metadata/mcache/free:bytes", &m.MetadataMCacheFreeBytes},
		{"/memory/classes/metadata/mcache/inuse:bytes", &m.MetadataMCacheInuseBytes},
		{"/memory/classes/metadata/mspan/free:bytes", &m.MetadataMSpanFreeBytes},
		{"/memory/classes/metadata/mspan/inuse:bytes", &m.MetadataMSpanInuseBytes},
		{"/memory/classes/metadata/other:bytes", &m.MetadataOtherBytes},
		{"/memory/classes/profiling/buckets:bytes", &m.ProfilingBucketsBytes},
		{"/memory/classes/other:bytes", &m.OtherBytes},
		{"/memory/classes/total:bytes", &m.TotalBytes},
		{pauseMetric, nil},
	} {
		if e.dst == nil {
			r.pause = len(r.samples)
		}
		r.samples = append(r.samples, metrics.Sample{Name: e.name})
		r.dst = append(r.dst, e.dst)
	}
	metrics.Read(r.samples) // size the histogram once, so Read reuses it
	for _, smp := range r.samples {
		if smp.Value.Kind() == metrics.KindBad {
			panic("rtstats: runtime/metrics has no " + smp.Name)
		}
	}
	return r
}

// Read fills s with the current metrics, leaving s.OSThreads unchanged.
// It does not allocate.
func (r *Reader) Read(s *Snapshot) {
	metrics.Read(r.samples)
	threads := s.OSThreads
	for i, smp := range r.samples {
		if r.dst[i] != nil {
			*r.dst[i] = int64(smp.Value.Uint64())
		}
	}
	h := r.samples[r.pause].Value.Float64Histogram()
	var n uint64
	var sec float64
	for i, c := range h.Counts {
		if c == 0 {
			continue
		}
		n += c
		if lo := h.Buckets[i]; !math.IsInf(lo, 0) && lo > 0 {
			sec += float64(c) * lo
		}
	}
	r.scratch.GCPauses = int64(n)
	r.scratch.GCPauseTotalNs = int64(sec * 1e9)
	*s = r.scratch
	s.OSThreads = threads
}

// Snapshot is Read into a new Snapshot, with OSThreads filled on Linux.
// It allocates; use Read in a loop.
func (r *Reader) Snapshot() Snapshot {
	var s Snapshot
	r.Read(&s)
	s.OSThreads, _ = ReadOSThreads()
	return s
}

// ReadOSThreads returns the Threads line of /proc/self/status: every thread
// of the process, Go-made or not. It fails where there is no /proc.
func ReadOSThreads() (int64, error) {
	st, err := procfs.ReadStatus(procfs.Self)
	if err != nil {
		return 0, err
	}
	return int64(st.Threads), nil
}

// Delta returns b − a field by field: for cumulative counters, what
// happened between the reads; for gauges (live heap, goal, goroutines,
// threads, memory classes), the signed change.
func Delta(a, b Snapshot) Snapshot {
	return Snapshot{
		HeapAllocsObjects: b.HeapAllocsObjects - a.HeapAllocsObjects,
		HeapAllocsBytes:   b.HeapAllocsBytes - a.HeapAllocsBytes,
		HeapFreesObjects:  b.HeapFreesObjects - a.HeapFreesObjects,
		HeapFreesBytes:    b.HeapFreesBytes - a.HeapFreesBytes,
		HeapLiveBytes:     b.HeapLiveBytes - a.HeapLiveBytes,
		HeapGoalBytes:     b.HeapGoalBytes - a.HeapGoalBytes,
		GCCycles:          b.GCCycles - a.GCCycles,
		GCPauses:          b.GCPauses - a.GCPauses,
		GCPauseTotalNs:    b.GCPauseTotalNs - a.GCPauseTotalNs,
		Goroutines:        b.Goroutines - a.Goroutines,
		GOMAXPROCS:        b.GOMAXPROCS - a.GOMAXPROCS,
		RuntimeThreads:    b.RuntimeThreads - a.RuntimeThreads,
		OSThreads:         b.OSThreads - a.OSThreads,
		Memory: MemoryClasses{
			HeapObjectsBytes:         b.Memory.HeapObjectsBytes - a.Memory.HeapObjectsBytes,
			HeapUnusedBytes:          b.Memory.HeapUnusedBytes - a.Memory.HeapUnusedBytes,
			HeapFreeBytes:            b.Memory.HeapFreeBytes - a.Memory.HeapFreeBytes,
			HeapReleasedBytes:        b.Memory.HeapReleasedBytes - a.Memory.HeapReleasedBytes,
			HeapStacksBytes:          b.Memory.HeapStacksBytes - a.Memory.HeapStacksBytes,
			OSStacksBytes:            b.Memory.OSStacksBytes - a.Memory.OSStacksBytes,
			MetadataMCacheFreeBytes:  b.Memory.MetadataMCacheFreeBytes - a.Memory.MetadataMCacheFreeBytes,
			MetadataMCacheInuseBytes: b.Memory.MetadataMCacheInuseBytes - a.Memory.MetadataMCacheInuseBytes,
			MetadataMSpanFreeBytes:   b.Memory.MetadataMSpanFreeBytes - a.Memory.MetadataMSpanFreeBytes,
			MetadataMSpanInuseBytes:  b.Memory.MetadataMSpanInuseBytes - a.Memory.MetadataMSpanInuseBytes,
			MetadataOtherBytes:       b.Memory.MetadataOtherBytes - a.Memory.MetadataOtherBytes,
			ProfilingBucketsBytes:    b.Memory.ProfilingBucketsBytes - a.Memory.ProfilingBucketsBytes,
			OtherBytes:               b.Memory.OtherBytes - a.Memory.OtherBytes,
			TotalBytes:               b.Memory.TotalBytes - a.Memory.TotalBytes,
		},
	}
}
