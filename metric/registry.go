package metric

import "memprobe/schema"

// Units. A name ends with its unit where the unit has a suffix
// (suffixUnits in the test): _bytes, _ns, _pct, tokens_per_sec.
const (
	Bytes        = "bytes"
	BytesPerStep = "bytes/step"
	Nanoseconds  = "ns"
	Milliseconds = "ms"
	NsPerToken   = "ns/token"
	TokensPerSec = "tokens/s"
	Percent      = "%"
	Count        = "count"
	PerStep      = "count/step"
	PerToken     = "count/token"
	GFLOP        = "GFLOP/step"
	GFLOPS       = "GFLOP/s"
	Loss         = "nats"
)

// registry is every metric, in the order Names and Defaults list them:
// a run's headline metrics (diff's default order), the rest of a job result's
// numbers, its nested counters, then a decode record's figures.
var registry = []Def{
	{Name: "peak_rss_bytes", Label: "peak RSS", Unit: Bytes, Bench: "peak-rss-B", Default: true, Run: result(func(r *schema.Result) float64 { return float64(r.PeakRSSBytes) })},
	{Name: "max_rss_bytes", Unit: Bytes, Bench: "max-rss-B", Default: true, Outside: func(o *schema.Outside) (float64, bool) { return float64(o.MaxRSSBytes), true }},
	{Name: "final_vsz_bytes", Label: "final VSZ", Unit: Bytes, Bench: "final-vsz-B", Default: true, Run: result(func(r *schema.Result) float64 { return float64(r.FinalVSZBytes) })},
	{Name: "go_heap_alloc_bytes_per_step", Label: "bytes/step", Unit: BytesPerStep, Bench: "heap-B/step", Default: true, Run: result(func(r *schema.Result) float64 { return r.HeapAllocBytesPerStep })},
	// The program's own allocations, counted by site: fixed by the
	// configuration (diff says so where repetitions disagree).
	{Name: "go_heap_allocs_per_step", Label: "allocs/step", Unit: PerStep, Bench: "heap-allocs/step", Exact: true, Default: true, Run: result(func(r *schema.Result) float64 { return r.HeapAllocsPerStep })},
	{Name: "tokens_per_sec", Label: "tokens/s", Unit: TokensPerSec, Bench: "tokens/s", Default: true, Run: result(func(r *schema.Result) float64 { return r.TokensPerSec }),
		Decode: func(d *schema.DecodeRecord) (float64, bool) { return d.TokensPerSec, true },
		Passes: func(d *schema.DecodeRecord) []float64 { return d.TokensPerSecPasses },
		Runs:   func(d *schema.DecodeRecord) []float64 { return d.TokensPerSecRuns }},
	{Name: "step_ns_median", Label: "step time", Unit: Nanoseconds, Bench: "ns/op", Default: true, Run: result(func(r *schema.Result) float64 { return float64(r.StepNsMedian) })},
	{Name: "ledger_total_bytes", Unit: Bytes, Bench: "ledger-B", Exact: true, Default: true, Run: result(func(r *schema.Result) float64 { return float64(r.LedgerTotalBytes) })},

	{Name: "final_rss_bytes", Unit: Bytes, Run: result(func(r *schema.Result) float64 { return float64(r.FinalRSSBytes) })},
	{Name: "floor_bytes", Unit: Bytes, Run: result(func(r *schema.Result) float64 { return float64(r.FloorBytes) })},
	{Name: "executor_bytes", Unit: Bytes, Run: result(func(r *schema.Result) float64 { return float64(r.ExecutorBytes) })},
	{Name: "expected_total_bytes", Unit: Bytes, Run: result(func(r *schema.Result) float64 { return float64(r.ExpectedTotalBytes) })},
	{Name: "ledger_findings", Unit: Count, Run: result(func(r *schema.Result) float64 { return float64(r.LedgerFindings) })},
	{Name: "os_threads", Unit: Count, Run: result(func(r *schema.Result) float64 { return float64(r.OSThreads) })},
	{Name: "loss_first", Unit: Loss, Run: result(func(r *schema.Result) float64 { return float64(r.LossFirst) })},
	{Name: "loss_last", Unit: Loss, Run: result(func(r *schema.Result) float64 { return float64(r.LossLast) })},
	{Name: "gflop_per_step", Unit: GFLOP, Run: result(func(r *schema.Result) float64 { return r.GFLOPPerStep })},
	{Name: "achieved_gflops", Unit: GFLOPS, Run: result(func(r *schema.Result) float64 { return r.AchievedGFLOPS })},
	{Name: "params", Unit: Count, Run: result(func(r *schema.Result) float64 { return float64(r.Params) })},
	{Name: "data_tokens", Unit: Count, Run: result(func(r *schema.Result) float64 { return float64(r.DataTokens) })},
	{Name: "data_vocab", Unit: Count, Run: result(func(r *schema.Result) float64 { return float64(r.DataVocab) })},
	{Name: "threads", Unit: Count, Run: result(func(r *schema.Result) float64 { return float64(r.Threads) })},
	{Name: "executors", Unit: Count, Run: result(func(r *schema.Result) float64 { return float64(r.Executors) })},
	{Name: "gomaxprocs", Unit: Count, Run: result(func(r *schema.Result) float64 { return float64(r.GOMAXPROCS) })},
	{Name: "steps", Unit: Count, Run: result(func(r *schema.Result) float64 { return float64(r.Steps) })},
	{Name: "start_step", Unit: Count, Run: result(func(r *schema.Result) float64 { return float64(r.StartStep) })},
	{Name: "tokens_per_step", Unit: Count, Run: result(func(r *schema.Result) float64 { return float64(r.TokensPerStep) })},

	// The runtime's maxima over the step boundaries (null without
	// instruments).
	{Name: "runtime.peak.heap_live_bytes", Label: "peak Go heap", Unit: Bytes, Run: peak(func(p *schema.RuntimePeaks) int64 { return p.HeapLiveBytes })},
	{Name: "runtime.peak.heap_objects_bytes", Unit: Bytes, Run: peak(func(p *schema.RuntimePeaks) int64 { return p.HeapObjectsBytes })},
	{Name: "runtime.peak.go_mapped_bytes", Unit: Bytes, Run: peak(func(p *schema.RuntimePeaks) int64 { return p.GoMappedBytes })},
	{Name: "runtime.peak.goroutines", Unit: Count, Run: peak(func(p *schema.RuntimePeaks) int64 { return p.Goroutines })},
	{Name: "runtime.peak.runtime_threads", Unit: Count, Run: peak(func(p *schema.RuntimePeaks) int64 { return p.RuntimeThreads })},
	{Name: "runtime.peak.os_threads", Unit: Count, Run: peak(func(p *schema.RuntimePeaks) int64 { return p.OSThreads })},

	// The outside view of a process (probe exec, probe attach; null in a
	// training job's result): the kernel's peak RSS as last seen, wait4's
	// at exit, the largest RSS of the process tree at one moment, and
	// the CPU time, faults and context switches /usr/bin/time -v shows
	// (wait4's rusage for exec, /proc for attach: process.rusage_source).
	{Name: "process.vm_hwm_bytes", Unit: Bytes, Run: process(func(p *schema.Process) float64 { return float64(p.VmHWMBytes) })},
	{Name: "process.rusage_maxrss_bytes", Unit: Bytes, Run: process(func(p *schema.Process) float64 { return float64(p.RusageMaxRSSBytes) })},
	{Name: "process.tree_peak_rss_bytes", Unit: Bytes, Run: process(func(p *schema.Process) float64 { return float64(p.TreePeakRSSBytes) })},
	{Name: "process.rusage_user_ms", Label: "user CPU", Unit: Milliseconds, Run: process(func(p *schema.Process) float64 { return p.RusageUserMs })},
	{Name: "process.rusage_system_ms", Label: "system CPU", Unit: Milliseconds, Run: process(func(p *schema.Process) float64 { return p.RusageSystemMs })},
	{Name: "process.duration_ms", Unit: Milliseconds, Run: process(func(p *schema.Process) float64 { return p.DurationMs })},
	{Name: "process.rusage_minor_faults", Unit: Count, Run: process(func(p *schema.Process) float64 { return float64(p.RusageMinorFaults) })},
	{Name: "process.rusage_major_faults", Unit: Count, Run: process(func(p *schema.Process) float64 { return float64(p.RusageMajorFaults) })},
	{Name: "process.rusage_voluntary_context_switches", Unit: Count, Run: process(func(p *schema.Process) float64 { return float64(p.RusageVoluntaryContextSwitches) })},
	{Name: "process.rusage_involuntary_context_switches", Unit: Count, Run: process(func(p *schema.Process) float64 { return float64(p.RusageInvoluntaryContextSwitches) })},
	// The descendants (--children): the largest one's peak, and a lower
	// bound on those reaped between two reads, unseen.
	{Name: "process.descendant_peak_rss_bytes", Unit: Bytes, Run: process(func(p *schema.Process) float64 { return float64(p.DescendantPeakRSSBytes) })},
	{Name: "process.descendants_missed", Unit: Count, Run: process(func(p *schema.Process) float64 { return float64(p.DescendantsMissed) })},
	// The resident set at the walk nearest the peak of a process watched
	// from outside, by part (absent without that walk or part): thread
	// stacks and glibc's arenas are reserved far beyond what is resident,
	// which is what the threads note's fixes change.
	{Name: "process.at_peak.stacks_reserved_bytes", Label: "stacks reserved", Unit: Bytes, Run: atPeakPart("stacks.threads", true)},
	{Name: "process.at_peak.stacks_resident_bytes", Label: "stacks resident", Unit: Bytes, Run: atPeakPart("stacks.threads", false)},
	{Name: "process.at_peak.malloc_arenas_reserved_bytes", Label: "arenas reserved", Unit: Bytes, Run: atPeakPart("c.malloc.arenas", true)},
	{Name: "process.at_peak.malloc_arenas_resident_bytes", Label: "arenas resident", Unit: Bytes, Run: atPeakPart("c.malloc.arenas", false)},
	{Name: "process.at_peak.glibc_arenas", Label: "glibc arenas", Unit: Count, Run: func(r *schema.Result) (float64, bool) {
		if r.Process == nil || r.Process.AtPeak == nil {
			return 0, false
		}
		return float64(r.Process.AtPeak.Reconciliation.GlibcArenas), true
	}},
	// The sampler's maxima over every sample (null without instruments):
	// each field's own peak, not of one moment.
	{Name: "sampler.peaks.rss_bytes", Unit: Bytes, Run: samplerPeak(func(p *schema.SamplerPoint) uint64 { return p.RSSBytes })},
	{Name: "sampler.peaks.vsz_bytes", Unit: Bytes, Run: samplerPeak(func(p *schema.SamplerPoint) uint64 { return p.VSZBytes })},
	{Name: "sampler.peaks.rss_anon_bytes", Unit: Bytes, Run: samplerPeak(func(p *schema.SamplerPoint) uint64 { return p.RssAnonBytes })},
	{Name: "sampler.peaks.pss_bytes", Unit: Bytes, Run: samplerPeak(func(p *schema.SamplerPoint) uint64 { return p.PssBytes })},
	// Allocation sites of probe exec --sites (absent without): estimates
	// scaled from the samples, exact at --sites-rate 1.
	{Name: "process.sites.peak_in_use_bytes", Unit: Bytes, Run: sites(func(s *schema.Sites) float64 { return float64(s.PeakInUseBytes) })},
	{Name: "process.sites.exit_in_use_bytes", Unit: Bytes, Run: sites(func(s *schema.Sites) float64 { return float64(s.ExitInUseBytes) })},
	{Name: "process.sites.alloc_bytes", Unit: Bytes, Run: sites(func(s *schema.Sites) float64 { return float64(s.AllocBytes) })},
	{Name: "process.sites.alloc_objects", Unit: Count, Run: sites(func(s *schema.Sites) float64 { return float64(s.AllocObjects) })},
	{Name: "process.sites.temporary_objects", Unit: Count, Run: sites(func(s *schema.Sites) float64 { return float64(s.TemporaryObjects) })},
	{Name: "process.sites.fragmentation.free_resident_bytes", Unit: Bytes, Run: func(r *schema.Result) (float64, bool) {
		if r.Process == nil || r.Process.Sites == nil || r.Process.Sites.Fragmentation == nil {
			return 0, false
		}
		return float64(r.Process.Sites.Fragmentation.FreeResidentBytes), true
	}},
	{Name: "process.sites.fragmentation.max_heap_free_resident_bytes", Unit: Bytes, Run: func(r *schema.Result) (float64, bool) {
		if r.Process == nil || r.Process.Sites == nil || r.Process.Sites.Fragmentation == nil {
			return 0, false
		}
		return float64(r.Process.Sites.Fragmentation.MaxHeapFreeResidentBytes), true
	}},

	// The trainer's counters: what each phase changes.
	{Name: "counts.workers", Unit: Count, Run: counts(func(c *schema.Counts) int64 { return int64(c.Workers) })},
	{Name: "counts.worker_threads", Unit: Count, Run: counts(func(c *schema.Counts) int64 { return int64(c.WorkerThreads) })},
	{Name: "counts.worker_stack_bytes", Unit: Bytes, Run: counts(func(c *schema.Counts) int64 { return c.WorkerStackBytes })},
	{Name: "counts.contexts", Unit: Count, Run: counts(func(c *schema.Counts) int64 { return int64(c.Contexts) })},
	{Name: "counts.unused_contexts", Unit: Count, Run: counts(func(c *schema.Counts) int64 { return int64(c.UnusedContexts) })},
	{Name: "counts.idle_workers", Unit: Count, Run: counts(func(c *schema.Counts) int64 { return int64(c.IdleWorkers) })},
	{Name: "counts.workspaces", Unit: Count, Run: counts(func(c *schema.Counts) int64 { return int64(c.Workspaces) })},
	{Name: "counts.batch_buffers", Unit: Count, Run: counts(func(c *schema.Counts) int64 { return int64(c.BatchBuffers) })},
	{Name: "counts.batch_row_fills", Unit: Count, Run: counts(func(c *schema.Counts) int64 { return c.BatchRowFills })},
	{Name: "counts.model_lock_holds", Unit: Count, Run: counts(func(c *schema.Counts) int64 { return c.ModelLockHolds })},
	{Name: "counts.cache_clears", Unit: Count, Run: counts(func(c *schema.Counts) int64 { return c.CacheClears })},
	{Name: "counts.embedding_copies", Unit: Count, Run: counts(func(c *schema.Counts) int64 { return c.EmbeddingCopies })},
	{Name: "counts.side_work_runs", Unit: Count, Run: counts(func(c *schema.Counts) int64 { return int64(c.SideWorkRuns) })},
	{Name: "counts.tape_graphs", Unit: Count, Run: counts(func(c *schema.Counts) int64 { return c.TapeGraphs })},
	{Name: "counts.tape_graphs_kept", Unit: Count, Run: counts(func(c *schema.Counts) int64 { return int64(c.TapeGraphsKept) })},

	// The decode heads' device counters (with --decode; absent without).
	// syncs: the host's waits on the device over the job, fixed by it.
	{Name: "decode_stats.syncs", Unit: Count, Exact: true, Default: true, Run: decodeStats(func(s *schema.DecodeStats) int64 { return s.Syncs })},
	{Name: "decode_stats.launches", Unit: Count, Run: decodeStats(func(s *schema.DecodeStats) int64 { return s.Launches })},
	{Name: "decode_stats.h2d_copies", Unit: Count, Run: decodeStats(func(s *schema.DecodeStats) int64 { return s.H2DCopies })},
	{Name: "decode_stats.d2h_copies", Unit: Count, Run: decodeStats(func(s *schema.DecodeStats) int64 { return s.D2HCopies })},
	{Name: "decode_stats.h2d_bytes", Unit: Bytes, Run: decodeStats(func(s *schema.DecodeStats) int64 { return s.H2DBytes })},
	{Name: "decode_stats.d2h_bytes", Unit: Bytes, Run: decodeStats(func(s *schema.DecodeStats) int64 { return s.D2HBytes })},
	{Name: "decode_stats.device_bytes_in_use", Unit: Bytes, Run: decodeStats(func(s *schema.DecodeStats) int64 { return s.DeviceBytesInUse })},
	{Name: "decode_stats.device_bytes_peak", Unit: Bytes, Run: decodeStats(func(s *schema.DecodeStats) int64 { return s.DeviceBytesPeak })},
	{Name: "decode_stats.implicit_waits", Unit: Count, Run: decodeStats(func(s *schema.DecodeStats) int64 { return s.ImplicitWaits })},
	{Name: "decode_stats.pinned_host_bytes", Unit: Bytes, Run: decodeStats(func(s *schema.DecodeStats) int64 { return s.PinnedHostBytes })},
	{Name: "decode_stats.host_wait_ns", Unit: Nanoseconds, Run: decodeStats(func(s *schema.DecodeStats) int64 { return s.HostWaitNs })},
	{Name: "decode_stats.device_busy_ns", Unit: Nanoseconds, Run: decodeStats(func(s *schema.DecodeStats) int64 { return s.DeviceBusyNs })},

	// A decode record's figures. The counts a mode fixes for its shape
	// are exact: synchronisations, launches, the program's allocations
	// (in heap blocks, which tiny ones share: report says so), the bytes
	// copied and the ledger's peak. device_peak_bytes is exact only where
	// it is the ledger's (report's decodeExact).
	{Name: "host_wait_ns_per_token", Label: "host wait/token", Unit: NsPerToken, Bench: "host-wait-ns/op", Default: true,
		Decode: func(d *schema.DecodeRecord) (float64, bool) { return d.HostWaitNsPerToken, true },
		Passes: func(d *schema.DecodeRecord) []float64 { return d.HostWaitNsPerTokenPasses },
		Runs:   func(d *schema.DecodeRecord) []float64 { return d.HostWaitNsPerTokenRuns }},
	{Name: "device_busy_pct", Label: "device busy", Unit: Percent, Bench: "device-busy-%", Default: true,
		Decode: func(d *schema.DecodeRecord) (float64, bool) { return deref(d.DeviceBusyPct) },
		Passes: func(d *schema.DecodeRecord) []float64 { return d.DeviceBusyPctPasses },
		Runs:   func(d *schema.DecodeRecord) []float64 { return d.DeviceBusyPctRuns }},
	{Name: "device_busy_ns_per_token", Unit: NsPerToken,
		Decode: func(d *schema.DecodeRecord) (float64, bool) { return deref(d.DeviceBusyNsPerToken) },
		Runs:   func(d *schema.DecodeRecord) []float64 { return d.DeviceBusyNsPerTokenRuns }},
	{Name: "syncs_per_token", Label: "syncs/token", Unit: PerToken, Bench: "syncs/op", Exact: true, Default: true, Decode: record(func(d *schema.DecodeRecord) float64 { return d.SyncsPerToken })},
	{Name: "launches_per_token", Label: "launches/token", Unit: PerToken, Bench: "launches/op", Exact: true, Default: true, Decode: record(func(d *schema.DecodeRecord) float64 { return d.LaunchesPerToken })},
	{Name: "host_allocs_per_token", Label: "host allocs/token", Unit: PerToken, Bench: "host-allocs/op", Exact: true, Default: true, Decode: record(func(d *schema.DecodeRecord) float64 { return d.HostAllocsPerToken })},
	{Name: "h2d_bytes", Unit: Bytes, Exact: true, Decode: record(func(d *schema.DecodeRecord) float64 { return float64(d.H2DBytes) })},
	{Name: "d2h_bytes", Unit: Bytes, Exact: true, Decode: record(func(d *schema.DecodeRecord) float64 { return float64(d.D2HBytes) })},
	{Name: "ledger_peak_bytes", Unit: Bytes, Exact: true, Decode: record(func(d *schema.DecodeRecord) float64 { return float64(d.LedgerPeakBytes) })},
	{Name: "device_peak_bytes", Label: "device peak", Unit: Bytes, Bench: "device-peak-B", Default: true, Decode: record(func(d *schema.DecodeRecord) float64 { return float64(d.DevicePeakBytes) })},

	// The device's memory in parts (cuda; absent on cpu). Fields the
	// record leaves out when 0 (omitempty) are absent then, not 0.
	{Name: "device_memory.total_bytes", Unit: Bytes, Decode: deviceMemory(func(m *schema.DeviceMemory) int64 { return m.TotalBytes })},
	{Name: "device_memory.process_peak_bytes", Unit: Bytes, Decode: deviceMemory(func(m *schema.DeviceMemory) int64 { return m.ProcessPeakBytes })},
	{Name: "device_memory.process_bytes", Unit: Bytes, Decode: deviceMemory(func(m *schema.DeviceMemory) int64 { return m.ProcessBytes })},
	{Name: "device_memory.nvml_samples", Unit: Count, Decode: deviceMemory(func(m *schema.DeviceMemory) int64 { return int64(m.NVMLSamples) })},
	{Name: "device_memory.context_bytes", Unit: Bytes, Decode: deviceMemory(func(m *schema.DeviceMemory) int64 { return m.ContextBytes })},
	{Name: "device_memory.context_process_bytes", Unit: Bytes, Decode: nonzero(deviceMemory(func(m *schema.DeviceMemory) int64 { return m.ContextProcessBytes }))},
	{Name: "device_memory.held_before_open_bytes", Unit: Bytes, Decode: deviceMemory(func(m *schema.DeviceMemory) int64 { return m.HeldBeforeOpenBytes })},
	{Name: "device_memory.stream_handle_bytes", Unit: Bytes, Decode: deviceMemory(func(m *schema.DeviceMemory) int64 { return m.StreamHandleBytes })},
	{Name: "device_memory.ledger_bytes", Unit: Bytes, Decode: deviceMemory(func(m *schema.DeviceMemory) int64 { return m.LedgerBytes })},
	{Name: "device_memory.alloc_rounding_bytes", Unit: Bytes, Decode: deviceMemory(func(m *schema.DeviceMemory) int64 { return m.AllocRoundingBytes })},
	{Name: "device_memory.alloc_granularity_bytes", Unit: Bytes, Decode: nonzero(deviceMemory(func(m *schema.DeviceMemory) int64 { return m.AllocGranularityBytes }))},
	{Name: "device_memory.cublas_workspace_bytes", Unit: Bytes, Decode: deviceMemory(func(m *schema.DeviceMemory) int64 { return m.CuBLASWorkspaceBytes })},
	{Name: "device_memory.uncharged_bytes", Unit: Bytes, Decode: deviceMemory(func(m *schema.DeviceMemory) int64 { return m.UnchargedBytes })},
	{Name: "device_memory.free_gap_bytes", Unit: Bytes, Decode: deviceMemory(func(m *schema.DeviceMemory) int64 { return m.FreeGapBytes })},
	{Name: "device_memory.unexplained_bytes", Unit: Bytes, Decode: deviceMemory(func(m *schema.DeviceMemory) int64 { return m.UnexplainedBytes })},
}

func result(get func(*schema.Result) float64) func(*schema.Result) (float64, bool) {
	return func(r *schema.Result) (float64, bool) { return get(r), true }
}

func peak(get func(*schema.RuntimePeaks) int64) func(*schema.Result) (float64, bool) {
	return func(r *schema.Result) (float64, bool) {
		if r.Runtime == nil {
			return 0, false
		}
		return float64(get(&r.Runtime.Peak)), true
	}
}

// process reads a figure of a process result (probe exec, probe attach);
// absent from a training job's.
func process(get func(*schema.Process) float64) func(*schema.Result) (float64, bool) {
	return func(r *schema.Result) (float64, bool) {
		if r.Process == nil {
			return 0, false
		}
		return get(r.Process), true
	}
}

// atPeakPart reads a part of a process's breakdown at its peak walk:
// its address space where reserved, else its resident bytes.
func atPeakPart(name string, reserved bool) func(*schema.Result) (float64, bool) {
	return func(r *schema.Result) (float64, bool) {
		if r.Process == nil || r.Process.AtPeak == nil {
			return 0, false
		}
		for _, p := range r.Process.AtPeak.Reconciliation.Parts {
			if p.Name == name {
				if reserved {
					return float64(p.ReservedBytes), true
				}
				return float64(p.Bytes), true
			}
		}
		return 0, false
	}
}

func samplerPeak(get func(*schema.SamplerPoint) uint64) func(*schema.Result) (float64, bool) {
	return func(r *schema.Result) (float64, bool) {
		if r.Sampler == nil {
			return 0, false
		}
		return float64(get(&r.Sampler.Peaks)), true
	}
}

func sites(get func(*schema.Sites) float64) func(*schema.Result) (float64, bool) {
	return func(r *schema.Result) (float64, bool) {
		if r.Process == nil || r.Process.Sites == nil {
			return 0, false
		}
		return get(r.Process.Sites), true
	}
}

func counts(get func(*schema.Counts) int64) func(*schema.Result) (float64, bool) {
	return func(r *schema.Result) (float64, bool) { return float64(get(&r.Counts)), true }
}

func decodeStats(get func(*schema.DecodeStats) int64) func(*schema.Result) (float64, bool) {
	return func(r *schema.Result) (float64, bool) {
		if r.DecodeStats == nil {
			return 0, false
		}
		return float64(get(r.DecodeStats)), true
	}
}

func record(get func(*schema.DecodeRecord) float64) func(*schema.DecodeRecord) (float64, bool) {
	return func(d *schema.DecodeRecord) (float64, bool) { return get(d), true }
}

func deviceMemory(get func(*schema.DeviceMemory) int64) func(*schema.DecodeRecord) (float64, bool) {
	return func(d *schema.DecodeRecord) (float64, bool) {
		if d.DeviceMemory == nil {
			return 0, false
		}
		return float64(get(d.DeviceMemory)), true
	}
}

// nonzero is absent at 0: the record leaves the field out then.
func nonzero(get func(*schema.DecodeRecord) (float64, bool)) func(*schema.DecodeRecord) (float64, bool) {
	return func(d *schema.DecodeRecord) (float64, bool) {
		x, ok := get(d)
		return x, ok && x != 0
	}
}

func deref(p *float64) (float64, bool) {
	if p == nil {
		return 0, false
	}
	return *p, true
}
