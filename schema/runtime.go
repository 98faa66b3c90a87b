package schema

// The Go runtime's own view of its memory, from runtime/metrics
// (instrument/rtstats fills these; Runtime holds them).

// MemoryClasses is /memory/classes/*: every byte of address space the Go
// runtime has mapped, by use. Sum of all fields except TotalBytes equals
// TotalBytes. These are mapped bytes, not resident bytes.
type MemoryClasses struct {
	// HeapObjectsBytes is memory occupied by live objects and dead objects
	// not yet swept (/memory/classes/heap/objects:bytes).
	HeapObjectsBytes int64 `json:"heap_objects_bytes"`
	// HeapUnusedBytes is memory reserved for heap objects but not in use:
	// fragmentation within spans (/memory/classes/heap/unused:bytes).
	HeapUnusedBytes int64 `json:"heap_unused_bytes"`
	// HeapFreeBytes is free heap memory that could be returned to the OS
	// but has not been (/memory/classes/heap/free:bytes).
	HeapFreeBytes int64 `json:"heap_free_bytes"`
	// HeapReleasedBytes is free heap memory returned to the OS: mapped,
	// not resident (/memory/classes/heap/released:bytes).
	HeapReleasedBytes int64 `json:"heap_released_bytes"`
	// HeapStacksBytes is memory allocated from the heap for goroutine
	// stacks, and in non-cgo programs for OS thread (g0) stacks
	// (/memory/classes/heap/stacks:bytes).
	HeapStacksBytes int64 `json:"heap_stacks_bytes"`
	// OSStacksBytes is stack memory the OS allocated; zero in non-cgo
	// programs (/memory/classes/os-stacks:bytes).
	OSStacksBytes int64 `json:"os_stacks_bytes"`
	// MetadataMCacheFreeBytes: /memory/classes/metadata/mcache/free:bytes.
	MetadataMCacheFreeBytes int64 `json:"metadata_mcache_free_bytes"`
	// MetadataMCacheInuseBytes: /memory/classes/metadata/mcache/inuse:bytes.
	MetadataMCacheInuseBytes int64 `json:"metadata_mcache_inuse_bytes"`
	// MetadataMSpanFreeBytes: /memory/classes/metadata/mspan/free:bytes.
	MetadataMSpanFreeBytes int64 `json:"metadata_mspan_free_bytes"`
	// MetadataMSpanInuseBytes: /memory/classes/metadata/mspan/inuse:bytes.
	MetadataMSpanInuseBytes int64 `json:"metadata_mspan_inuse_bytes"`
	// MetadataOtherBytes is other runtime metadata: GC bitmaps, arena
	// index, page allocator state (/memory/classes/metadata/other:bytes).
	MetadataOtherBytes int64 `json:"metadata_other_bytes"`
	// ProfilingBucketsBytes is memory for profiling stack trace hash
	// tables (/memory/classes/profiling/buckets:bytes).
	ProfilingBucketsBytes int64 `json:"profiling_buckets_bytes"`
	// OtherBytes is everything else the runtime mapped, e.g. trace
	// buffers and debugging structures (/memory/classes/other:bytes).
	OtherBytes int64 `json:"other_bytes"`
	// TotalBytes is all memory the runtime has mapped
	// (/memory/classes/total:bytes).
	TotalBytes int64 `json:"total_bytes"`
}

// MetadataBytes sums the four metadata/mcache and metadata/mspan classes
// and metadata/other.
func (m MemoryClasses) MetadataBytes() int64 {
	return m.MetadataMCacheFreeBytes + m.MetadataMCacheInuseBytes +
		m.MetadataMSpanFreeBytes + m.MetadataMSpanInuseBytes + m.MetadataOtherBytes
}

// RuntimeSnapshot is one read of the runtime's metrics (rtstats.Snapshot).
// All fields are int64 so that a delta of two snapshots can hold a
// shrinking gauge.
type RuntimeSnapshot struct {
	// HeapAllocsObjects: /gc/heap/allocs:objects (cumulative; tiny blocks,
	// not tiny objects).
	HeapAllocsObjects int64 `json:"heap_allocs_objects"`
	// HeapAllocsBytes: /gc/heap/allocs:bytes (cumulative).
	HeapAllocsBytes int64 `json:"heap_allocs_bytes"`
	// HeapFreesObjects: /gc/heap/frees:objects (cumulative).
	HeapFreesObjects int64 `json:"heap_frees_objects"`
	// HeapFreesBytes: /gc/heap/frees:bytes (cumulative).
	HeapFreesBytes int64 `json:"heap_frees_bytes"`
	// HeapLiveBytes is heap memory marked live by the last GC
	// (/gc/heap/live:bytes).
	HeapLiveBytes int64 `json:"heap_live_bytes"`
	// HeapGoalBytes is the heap size at which the next GC starts
	// (/gc/heap/goal:bytes).
	HeapGoalBytes int64 `json:"heap_goal_bytes"`
	// GCCycles is completed GC cycles (/gc/cycles/total:gc-cycles).
	GCCycles int64 `json:"gc_cycles"`
	// GCPauses is the number of GC stop-the-world pauses, the count of
	// /sched/pauses/total/gc:seconds.
	GCPauses int64 `json:"gc_pauses"`
	// GCPauseTotalNs estimates total GC stop-the-world time from the
	// /sched/pauses/total/gc:seconds histogram (sum of bucket lower
	// bounds; see instrument/rtstats's package comment).
	GCPauseTotalNs int64 `json:"gc_pause_total_ns"`
	// Goroutines is live goroutines (/sched/goroutines:goroutines).
	Goroutines int64 `json:"goroutines"`
	// GOMAXPROCS: /sched/gomaxprocs:threads.
	GOMAXPROCS int64 `json:"gomaxprocs"`
	// RuntimeThreads is live threads owned by the Go runtime
	// (/sched/threads/total:threads).
	RuntimeThreads int64 `json:"runtime_threads"`
	// OSThreads is every thread of the process from /proc/self/status,
	// including threads made by C code. rtstats's Read leaves it alone;
	// ReadOSThreads fills it. Zero when unknown.
	OSThreads int64 `json:"os_threads"`
	// Memory is /memory/classes/*.
	Memory MemoryClasses `json:"memory_classes"`
}

// SteadyState is the per-step cost of a loop once warm-up is over
// (rtstats.Steady).
type SteadyState struct {
	// Steps is the number of steps measured (after warm-up).
	Steps int `json:"steps"`
	// WarmupSteps is the number of leading steps left out.
	WarmupSteps int `json:"warmup_steps"`
	// AllocsPerStepObjects is mean heap allocations per step.
	AllocsPerStepObjects float64 `json:"allocs_per_step_objects"`
	// AllocsPerStepBytes is mean heap bytes allocated per step.
	AllocsPerStepBytes float64 `json:"allocs_per_step_bytes"`
	// MinStepAllocsObjects and MaxStepAllocsObjects bound the per-step
	// allocation counts; a wide range means the mcache flush lag (see the
	// rtstats package comment) or a loop that is not steady.
	MinStepAllocsObjects int64 `json:"min_step_allocs_objects"`
	MaxStepAllocsObjects int64 `json:"max_step_allocs_objects"`
	// GCCycles is GC cycles during the measured steps.
	GCCycles int64 `json:"gc_cycles"`
	// GCPauseTotalNs is the estimated GC pause time during the measured
	// steps.
	GCPauseTotalNs int64 `json:"gc_pause_total_ns"`
}
