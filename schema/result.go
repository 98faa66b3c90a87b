package schema

import ()

// ResultVersion names the format of Result. v2: the RSS reconciliation's
// parts come from smaps, each with its reserved bytes;
// go_heap_allocs_per_step is the program's own, counted by site. v3:
// "config" is the whole configuration of the run (the model shape's
// fields stay where they were, beside the rest), and "environment",
// "command_line" and "start_time" are required.
const ResultVersion = "memprobe.train/v3"

// The kinds of Result.
const (
	KindTrain   = "train"
	KindProcess = "process"
)

// Result is the JSON object one job prints (`probe train --json`). Every
// memory figure is in bytes and says which memory it is: RSS (resident),
// VSZ (reserved address space) and Go heap are different things.
type Result struct {
	// Schema names this format and its version (ResultVersion); a reader
	// refuses a result of another version rather than misread it.
	Schema string `json:"schema"`
	Label  string `json:"label,omitempty"` // "<plan>-<phase>" when a phase was selected
	// Kind is what was measured: "" (or KindTrain) for a probe train job,
	// KindProcess for any process watched from outside (probe exec,
	// probe attach), whose view is in Process.
	Kind string `json:"kind,omitempty"`
	// Interrupted is true when the job was stopped before its last step
	// (SIGINT, SIGTERM, or --mem-limit reached): every figure covers the
	// steps that ran. For a process result, the watch ended before the
	// process did.
	Interrupted bool `json:"interrupted,omitempty"`
	// Process is the outside view of a watched process (Kind
	// KindProcess); nil for a train job.
	Process *Process `json:"process,omitempty"`
	// Config is everything needed to run this job again
	// (job.OptionsFromConfig rebuilds the options from it).
	Config Config `json:"config"`
	// Environment is the build and the machine the job ran on.
	Environment Environment `json:"environment"`
	// CommandLine is the process's arguments, program name first (os.Args
	// of `probe train`); empty when the job ran in-process from Go.
	CommandLine []string `json:"command_line"`
	// StartTime is when the job started, RFC 3339.
	StartTime string `json:"start_time"`

	// Optimizer repeats Config.Optimizer (kept for readers of v2).
	Optimizer  Optimizer `json:"optimizer"`
	Params     int       `json:"params"`
	Data       string    `json:"data"` // the corpus as loaded: "synthetic:1MB" or the file's path
	DataTokens int       `json:"data_tokens"`
	DataVocab  int       `json:"data_vocab"` // distinct tokens in the corpus
	Threads    int       `json:"threads"`
	Executors  int       `json:"executors"` // workspaces made (Config.Executors is what was asked)
	GOMAXPROCS int       `json:"gomaxprocs"`
	GEMM       string    `json:"gemm"`                  // the backend used (Config.GEMMUsed)
	GEMMConfig string    `json:"gemm_config,omitempty"` // OpenBLAS's config string (Environment.OpenBLASConfig)
	Seed       uint64    `json:"seed"`

	Steps          int       `json:"steps"`
	StartStep      int       `json:"start_step"`
	TokensPerStep  int       `json:"tokens_per_step"`
	TokensPerSec   float64   `json:"tokens_per_sec"` // over the steps after the first
	StepNsMedian   int64     `json:"step_ns_median"`
	StepNs         []int64   `json:"step_ns"`
	LossFirst      float32   `json:"loss_first"`
	LossLast       float32   `json:"loss_last"`
	Losses         []float32 `json:"losses"`
	GFLOPPerStep   float64   `json:"gflop_per_step"`
	AchievedGFLOPS float64   `json:"achieved_gflops"`
	// HeapAllocsPerStep and HeapAllocBytesPerStep are the program's own
	// heap allocations per step in steady state (the steps after the
	// warm-up, default 1): with instruments, AllocsBySite's program class
	// (every allocation recorded with its stack; the Go runtime's own
	// objects and the probe's are left out and shown there); without, a
	// bracket of runtime/metrics reads around each step, which counts the
	// runtime's objects too.
	HeapAllocBytesPerStep float64 `json:"go_heap_alloc_bytes_per_step"`
	HeapAllocsPerStep     float64 `json:"go_heap_allocs_per_step"`
	// AllocsBySite names what allocated in the steady-state steps, site by
	// site, program, runtime and probe apart; null without instruments.
	AllocsBySite *AllocSites `json:"allocs_by_site"`

	PeakRSSBytes  uint64 `json:"peak_rss_bytes"` // VmHWM at the end of the run
	FinalRSSBytes uint64 `json:"final_rss_bytes"`
	FinalVSZBytes uint64 `json:"final_vsz_bytes"`
	OSThreads     int    `json:"os_threads"`

	FloorBytes       int64 `json:"floor_bytes"` // analytical floor, see job.Floor
	ExecutorBytes    int64 `json:"executor_bytes"`
	LedgerTotalBytes int64 `json:"ledger_total_bytes"`
	// ExpectedTotalBytes is the analytical model's sum over the same
	// components.
	ExpectedTotalBytes int64 `json:"expected_total_bytes"`
	// Ledger is the model-vs-ledger table (memmodel.Compare) at the end
	// of training; empty, never nil, with instruments off.
	Ledger []LedgerRow `json:"ledger"`
	// LedgerFindings counts Ledger rows that differ from the model by more
	// than 1 %.
	LedgerFindings int `json:"ledger_findings"`

	// Instruments says whether the instruments ran; when false the four
	// fields below are null.
	Instruments       bool               `json:"instruments"`
	Runtime           *Runtime           `json:"runtime"`
	RSSReconciliation *RSSReconciliation `json:"rss_reconciliation"`
	Sampler           *SamplerResult     `json:"sampler"`
	RSSAgreement      *RSSAgreement      `json:"rss_agreement"`
	// Profiles lists the pprof files written; null when none was asked
	// for.
	Profiles *Profiles `json:"profiles"`
	// Warnings name the figures an instrument or profile perturbed in
	// this run and by what (a heap profile owning the allocation
	// profile's rate, GCs forced by the peak profiler, profiling's own
	// cost in tokens/s); never nil.
	Warnings []string `json:"warnings"`

	Generated    string   `json:"generated_text,omitempty"`
	GeneratedIDs []uint16 `json:"generated_ids,omitempty"`
	Checkpoint   string   `json:"checkpoint,omitempty"`

	// Counts are the trainer's deterministic counters (contexts, worker
	// threads, model-lock holds, ...): what each phase changes.
	Counts Counts `json:"counts"`
	// DecodeStats are the decode heads' device counters (with --decode).
	DecodeStats *DecodeStats `json:"decode_stats,omitempty"`
}

// Model is the shape of the model (trainer/model.Config): V, C, L, NH,
// FF, T and B.
type Model struct {
	Vocab   int `json:"vocab"`   // V
	Dim     int `json:"dim"`     // C
	Layers  int `json:"layers"`  // L
	Heads   int `json:"heads"`   // NH
	FF      int `json:"ff"`      // feed-forward width
	Context int `json:"context"` // T, tokens per sequence
	Batch   int `json:"batch"`   // B, sequences per step
}

// Optimizer is AdamW's hyper-parameters (trainer/model.AdamW).
type Optimizer struct {
	LR          float32 `json:"lr"`
	Beta1       float32 `json:"beta1"`
	Beta2       float32 `json:"beta2"`
	Eps         float32 `json:"eps"`
	WeightDecay float32 `json:"weight_decay"`
	// ClipNorm, when > 0, is the bound on the gradient's global L2 norm.
	ClipNorm float32 `json:"clip_norm"`
}

// Counts are what the trainer built and did that the pathology switches
// change (trainer.Counts): deterministic quantities, the same on every
// run of a configuration.
type Counts struct {
	Workers          int   `json:"workers"`            // logical workers
	WorkerThreads    int   `json:"worker_threads"`     // OS threads created for workers (0: goroutine workers)
	WorkerStackBytes int64 `json:"worker_stack_bytes"` // stack reserved per worker thread, as the C library reports it
	Contexts         int   `json:"contexts"`           // worker contexts created (0: executors own the workspaces)
	UnusedContexts   int   `json:"unused_contexts"`    // contexts whose workspace has run no sequence
	IdleWorkers      int   `json:"idle_workers"`       // workers that have run no sequence (threads beyond B never do)
	Workspaces       int   `json:"workspaces"`         // sequence workspaces that run sequences (contexts' or executors')
	BatchBuffers     int   `json:"batch_buffers"`      // batches held at once
	BatchRowFills    int64 `json:"batch_row_fills"`    // sequences written into batches so far
	ModelLockHolds   int64 `json:"model_lock_holds"`   // times the model lock was taken
	CacheClears      int64 `json:"cache_clears"`       // workspace cache clears (clear_caches)
	EmbeddingCopies  int64 `json:"embedding_copies"`   // embedding-cache refreshes
	SideWorkRuns     int   `json:"side_work_runs"`     // sample + checkpoint rounds (side work)
	TapeGraphs       int64 `json:"tape_graphs"`        // sequence graphs the tape built (exec "tape")
	TapeGraphsKept   int   `json:"tape_graphs_kept"`   // graphs held in the history (tape.keep_graphs)
}

// DecodeStats are a decode device's counters (trainer/device.Stats),
// summed over the executors' decode heads.
type DecodeStats struct {
	Launches         int64 `json:"launches"` // kernels enqueued
	Syncs            int64 `json:"syncs"`    // host waits: Sync calls and ImplicitWaits
	H2DCopies        int64 `json:"h2d_copies"`
	D2HCopies        int64 `json:"d2h_copies"`
	H2DBytes         int64 `json:"h2d_bytes"`
	D2HBytes         int64 `json:"d2h_bytes"`
	DeviceBytesInUse int64 `json:"device_bytes_in_use"` // allocated and not freed
	DeviceBytesPeak  int64 `json:"device_bytes_peak"`
	ImplicitWaits    int64 `json:"implicit_waits"`    // waits no Sync asked for (cuda: staging full, free)
	PinnedHostBytes  int64 `json:"pinned_host_bytes"` // page-locked host memory (cuda): staging, and the caller's blocks (device.HostMemory)
	HostWaitNs       int64 `json:"host_wait_ns"`      // wall time the host spent in those waits
	DeviceBusyNs     int64 `json:"device_busy_ns"`    // time the devices spent on their work (when device_timed)
	DeviceTimed      bool  `json:"device_timed"`      // device_busy_ns was measured (cuda: event timing worked)
}

// LedgerRow is one line of the model-vs-ledger table (instrument/memmodel
// makes them).
type LedgerRow struct {
	Component string `json:"component"`
	// ExpectedBytes is the model's figure (0 when the model does not know
	// the component).
	ExpectedBytes int64 `json:"expected_bytes"`
	// MeasuredBytes is what the ledger holds now.
	MeasuredBytes int64 `json:"measured_bytes"`
	// PeakBytes is the ledger's high-water mark for the component.
	PeakBytes int64 `json:"peak_bytes"`
	// ExpectedPeakBytes is the model's peak figure.
	ExpectedPeakBytes int64 `json:"expected_peak_bytes"`
	// DiffPct is 100 × (measured − expected) / expected; null when
	// expected is 0.
	DiffPct *float64 `json:"diff_pct"`
	// PeakDiffPct is the same for the peaks.
	PeakDiffPct *float64 `json:"peak_diff_pct"`
	// Allocs and Frees are the ledger's counts of Alloc and Free calls.
	Allocs int64 `json:"allocs"`
	Frees  int64 `json:"frees"`
	// Finding is true when measured or peak differ from the model by more
	// than memmodel.Tolerance percent, or when only one side knows the
	// component.
	Finding bool `json:"finding"`
	// Note says why a row is a finding ("" when it is not), and the
	// model's formula.
	Note    string `json:"note"`
	Formula string `json:"formula"`
}

// LedgerTotals sums rows' expected, measured and peak bytes. The peak
// total is a sum of per-component peaks, which may not have coincided.
func LedgerTotals(rows []LedgerRow) (expected, measured, peak int64) {
	for _, r := range rows {
		expected += r.ExpectedBytes
		measured += r.MeasuredBytes
		peak += r.PeakBytes
	}
	return
}

// StepCounters is what the Go runtime counted during one step: between the
// read just before the trainer's Step and the read just after it, so the
// job's own per-step work (progress lines, these reads) is not in it.
type StepCounters struct {
	Step           int   `json:"step"`
	AllocsObjects  int64 `json:"allocs_objects"`
	AllocsBytes    int64 `json:"allocs_bytes"`
	GCCycles       int64 `json:"gc_cycles"`
	GCPauseNs      int64 `json:"gc_pause_ns"`
	HeapLiveBytes  int64 `json:"heap_live_bytes"` // after the step
	Goroutines     int64 `json:"goroutines"`      // after the step
	RuntimeThreads int64 `json:"runtime_threads"` // after the step
	OSThreads      int64 `json:"os_threads"`      // after the step
	RSSBytes       int64 `json:"rss_bytes"`       // VmRSS after the step
}

// RuntimePeaks are maxima over the step boundaries (the sampler's peaks
// cover the time in between for RSS).
type RuntimePeaks struct {
	HeapLiveBytes    int64 `json:"heap_live_bytes"`
	HeapObjectsBytes int64 `json:"heap_objects_bytes"`
	// GoMappedBytes is /memory/classes/total − heap/released: everything
	// the runtime has mapped and not returned.
	GoMappedBytes  int64 `json:"go_mapped_bytes"`
	Goroutines     int64 `json:"goroutines"`
	RuntimeThreads int64 `json:"runtime_threads"`
	OSThreads      int64 `json:"os_threads"`
}

// Runtime is the Go runtime's account of the job.
type Runtime struct {
	// Steady is the per-step cost after the warm-up steps: allocations
	// (objects and bytes, from /gc/heap/allocs:*, process-wide), GC
	// cycles and estimated pause time.
	Steady SteadyState `json:"steady"`
	// AllSteps sums StepCounters over every step, warm-up included.
	AllStepsAllocsObjects int64 `json:"all_steps_allocs_objects"`
	AllStepsAllocsBytes   int64 `json:"all_steps_allocs_bytes"`
	AllStepsGCCycles      int64 `json:"all_steps_gc_cycles"`
	AllStepsGCPauseNs     int64 `json:"all_steps_gc_pause_ns"`
	// Start is read before the first step, End after the last; both carry
	// /memory/classes/* (what the runtime holds, by use).
	Start RuntimeSnapshot `json:"start"`
	End   RuntimeSnapshot `json:"end"`
	Peak  RuntimePeaks    `json:"peak"`
	// Steps are the first job.MaxStepRows (1000) steps' counters; never
	// nil.
	Steps          []StepCounters `json:"steps"`
	StepsTruncated bool           `json:"steps_truncated"`
}

// RSSReconciliation explains the resident set and the address space at
// two moments, and says how much of the peak the named parts account for.
type RSSReconciliation struct {
	// AtPeak is reconcile.Compute at the step boundary where VmRSS was
	// highest (the first boundary within 1 MiB or 0.5 % of the highest;
	// 0 is after set-up, before step 1), computed right there.
	AtPeak     Reconciliation `json:"at_peak"`
	AtPeakStep int            `json:"at_peak_step"`
	// End is reconcile.Compute after the last step.
	End Reconciliation `json:"end"`
	// VmHWMBytes is the kernel's peak RSS at the end.
	VmHWMBytes int64 `json:"vm_hwm_bytes"`
	// ExplainedBytes is what AtPeak's parts name, each from its own
	// source (Go's classes within what smaps shows resident in Go's
	// mappings, thread stacks, glibc's heaps, files, ...): its RSS less
	// its unexplained bytes.
	ExplainedBytes int64 `json:"explained_bytes"`
	// ResidualBytes is VmHWM − ExplainedBytes: AtPeak's unexplained
	// bytes plus any gap between the boundary's RSS and the true peak.
	ResidualBytes int64   `json:"residual_bytes"`
	ResidualPct   float64 `json:"residual_pct"`
	// Within10Pct is |ResidualPct| ≤ 10.
	Within10Pct bool `json:"within_10pct"`
	// Residual is AtPeak's unexplained mappings: resident anonymous
	// memory no source claimed, largest first. Never nil.
	Residual []MappingPiece `json:"residual"`
	// GoArenaRSSBytes is the resident part of the mappings that hold Go's
	// heap arenas (smaps, at the end): what the heap classes, which count
	// mapped bytes, really have in RAM.
	GoArenaRSSBytes int64 `json:"go_arena_rss_bytes"`
	// ThreadStackReservedBytes and ThreadStackResidentBytes are AtPeak's
	// pthread stacks (guards apart): address space against memory.
	ThreadStackReservedBytes int64 `json:"thread_stack_reserved_bytes"`
	ThreadStackResidentBytes int64 `json:"thread_stack_resident_bytes"`
}

// RSSAgreement compares three views of the peak resident set.
type RSSAgreement struct {
	SamplerPeakRSSBytes uint64 `json:"sampler_peak_rss_bytes"`
	VmHWMBytes          uint64 `json:"vm_hwm_bytes"`
	// DiffPct is 100 × (sampler − VmHWM) / VmHWM: negative by what the
	// sampler missed between samples; slightly positive (a few hundred
	// KiB) where the kernel's per-CPU RSS counters were batched when
	// VmHWM was last updated.
	DiffPct float64 `json:"diff_pct"`
}

// DecodeCheck compares one decode mode's output on a device with the cpu
// device's on the same hidden states: the first Sequences sequences, every
// position, probabilities and losses copied back.
type DecodeCheck struct {
	Against       string  `json:"against"`
	Sequences     int     `json:"sequences"`
	MaxProbDiff   float64 `json:"max_prob_diff"`     // max |p_device − p_cpu|
	MaxLossDiff   float64 `json:"max_loss_rel_diff"` // max |Δloss| / max(1, |loss_cpu|)
	TokensDiffer  int     `json:"tokens_differ"`     // positions whose chosen token differs
	TokensNearTie int     `json:"tokens_near_tie"`   // of those, where the cpu's top two probabilities nearly tie
	Pass          bool    `json:"pass"`
	// The tolerances Pass applied: max_prob_diff <= ProbTol,
	// max_loss_rel_diff <= LossTol, and a token may differ only where the
	// cpu's top two probabilities are within TieTol.
	ProbTol float64 `json:"prob_tol"`
	LossTol float64 `json:"loss_rel_tol"`
	TieTol  float64 `json:"tie_tol"`
}

// DeviceSample is one NVML reading of the process's device memory.
type DeviceSample struct {
	Seconds float64 `json:"t_seconds"`
	Bytes   int64   `json:"bytes"`
}

// DeviceBuffer is one line of the device ledger.
type DeviceBuffer struct {
	Name  string `json:"name"`
	Bytes int64  `json:"bytes"`
}

// DeviceMemory is the reconciliation of a cuda decode's device memory:
// what NVML charges to the process at the end (ProcessBytes) against
// parts known without it,
//
//	ProcessBytes = ContextProcessBytes + HeldBeforeOpenBytes + StreamHandleBytes
//	             + LedgerBytes + AllocRoundingBytes + CuBLASWorkspaceBytes + UnexplainedBytes
//
// the context measured on its own before any device, cuMemGetInfo deltas
// across the stages that allocate only the stream and handle and across
// cuBLAS's own calls (its workspace), and the ledger in whole pages of
// the driver's granularity, so that UnexplainedBytes is a remainder: what
// the decoder's allocations took beyond their pages, memory made while
// decoding outside cuBLAS's calls, or NVML charged without cuMemGetInfo's
// free memory falling. Records without ContextProcessMeasured (before it
// existed) reconciled free-memory deltas that sum to an identity; their
// UnexplainedBytes and AllocRoundingBytes mean what is said below.
// Every figure is bytes.
type DeviceMemory struct {
	GPU        string `json:"gpu"`
	TotalBytes int64  `json:"total_bytes"`
	// ProcessPeakBytes and ProcessBytes are NVML's per-process figures:
	// the peak over the mode's run (sampled every 10 ms, NVMLSamples
	// samples) and the value at its end with the device still open.
	ProcessPeakBytes int64 `json:"process_peak_bytes"`
	ProcessBytes     int64 `json:"process_bytes"`
	NVMLSamples      int   `json:"nvml_samples"`
	// NVMLTimeline is the process's device memory over the mode's run, as
	// sampled: seconds since the mode started and bytes.
	NVMLTimeline []DeviceSample `json:"nvml_timeline,omitempty"`
	// ProcessSource says where ProcessBytes comes from: "nvml" (NVML's
	// entry for this process) or "gpu_free_delta" (NVML lists no entry
	// for this process's PID, as in a container with its own PID
	// namespace: the one GPU's free memory before the context less at the
	// end, which assumes no other process changed its use; no peak then).
	// Empty when there is no process figure.
	ProcessSource string `json:"process_source,omitempty"`
	// ContextBytes: the GPU's fall in free memory when the primary context
	// and kernel module were made: NVML's free memory before the context
	// (as if this process held none) less cuMemGetInfo's free memory once
	// they existed (read when ContextProcessBytes was). It includes memory
	// NVML charges to no process
	// (UnchargedBytes), so it is not a part of the reconciliation.
	ContextBytes int64 `json:"context_bytes"`
	// ContextProcessBytes: the context and module measured on their own,
	// a part: NVML's figure for this process right after the context was
	// made, before any device opened (with ProcessSource
	// "gpu_free_delta", the fall in NVML's free memory since the
	// baseline). A context made before the run (an earlier run in this
	// process) is measured at the run's start, with what earlier runs left
	// in it (cuBLAS's kernels). ContextProcessMeasured says whether it
	// was; ContextProcessNote why not.
	ContextProcessBytes    int64  `json:"context_process_bytes,omitempty"`
	ContextProcessMeasured bool   `json:"context_process_measured,omitempty"`
	ContextProcessNote     string `json:"context_process_note,omitempty"`
	// HeldBeforeOpenBytes: what the process held beyond the context and
	// module when this mode's device opened: devices still open, cuBLAS
	// kernels an earlier device's GEMMs loaded (CUDA loads modules
	// lazily, and they stay in the context). cuMemGetInfo's free memory
	// when the context was measured less when the device opened.
	HeldBeforeOpenBytes int64 `json:"held_before_open_bytes"`
	// StreamHandleBytes: this device's stream and cuBLAS handle.
	StreamHandleBytes int64 `json:"stream_handle_bytes"`
	// LedgerBytes: the decoder's buffers as allocated (the device ledger).
	LedgerBytes int64 `json:"ledger_bytes"`
	// AllocRoundingBytes: LedgerBytes rounded up to AllocGranularityBytes,
	// less LedgerBytes: computed, not measured, the least the driver
	// charges for the ledger (it packs allocations into pages of its
	// granularity). In records without AllocGranularityBytes: what the
	// decoder's allocations took from cuMemGetInfo's free memory beyond
	// the ledger, measured.
	AllocRoundingBytes int64 `json:"alloc_rounding_bytes"`
	// AllocGranularityBytes: the driver's allocation page the ledger was
	// rounded to (2 MiB); absent in records from before it was used.
	AllocGranularityBytes int64 `json:"alloc_granularity_bytes,omitempty"`
	// CuBLASWorkspaceBytes: what cuBLAS allocated lazily (its workspace
	// and, the first time in a context, the kernels CUDA loads on first
	// use). With CuBLASWorkspaceSource "cublas_calls", cuMemGetInfo's
	// fall across the device's first GEMM of each shape, so memory made
	// anywhere else while decoding stays in UnexplainedBytes (and in
	// DecodingFallBytes); without it (older records), the fall from after
	// the decoder's buffers to the end, which took all such memory for
	// workspace.
	CuBLASWorkspaceBytes int64 `json:"cublas_workspace_bytes"`
	// CuBLASWorkspaceSource is "cublas_calls" where CuBLASWorkspaceBytes
	// was measured across cuBLAS's calls; absent in older records.
	CuBLASWorkspaceSource string `json:"cublas_workspace_source,omitempty"`
	// DecodingFallBytes: cuMemGetInfo's fall in free memory from after
	// the decoder's buffers to the end, less CuBLASWorkspaceBytes: device
	// memory made while decoding outside cuBLAS's calls, in no part, so
	// within UnexplainedBytes. Beside the reconciliation, not in it: it
	// says how much of the remainder arose while decoding. Measured only
	// with CuBLASWorkspaceSource.
	DecodingFallBytes int64 `json:"decoding_fall_bytes,omitempty"`
	// UnchargedBytes: device memory the driver took for this process that
	// NVML charges to no process: the GPU's fall in free memory by NVML's
	// count (before the context against the end) less ProcessBytes.
	// Beside the reconciliation, not in it (ProcessBytes leaves it out, and
	// so does ContextProcessBytes); in records without
	// ContextProcessMeasured it was taken off the free-delta parts' sum.
	// Measured only with ProcessSource "nvml" on a one-GPU machine
	// (FreeGapMeasured); 0 otherwise.
	UnchargedBytes int64 `json:"uncharged_bytes"`
	// UnchargedNote says why UnchargedBytes was not measured where it
	// could have been: the context existed before the baseline.
	UnchargedNote string `json:"uncharged_note,omitempty"`
	// FreeGapBytes is cuMemGetInfo's free memory less NVML's, read
	// together at the end (FreeGapMeasured: whether they were). ContextBytes
	// is measured from NVML's free figure to CUDA's, which assumes the two
	// agree.
	FreeGapBytes    int64 `json:"free_gap_bytes"`
	FreeGapMeasured bool  `json:"free_gap_measured,omitempty"`
	// UnexplainedBytes: ProcessBytes less the parts. In records without it: ProcessBytes less
	// free-delta parts plus UnchargedBytes, which is FreeGapBytes, not a
	// remainder.
	UnexplainedBytes int64 `json:"unexplained_bytes"`
	// UnexplainedMeasured: UnexplainedBytes is the remainder above, with
	// every part measured and the context's figure and ProcessBytes from
	// the same source; false in records from before it was.
	UnexplainedMeasured bool `json:"unexplained_measured,omitempty"`
	// ContextNote says why ContextBytes was not measured, if it was not
	// (no NVML; more than one GPU).
	ContextNote string `json:"context_note,omitempty"`
	// NVMLNote says why NVML's figures are missing, if they are.
	NVMLNote string `json:"nvml_note,omitempty"`
}
