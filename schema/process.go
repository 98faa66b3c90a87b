package schema

import "strings"

// Modes of Process.
const (
	ModeExec   = "exec"   // probe exec: the probe started the program
	ModeAttach = "attach" // probe attach: the program was already running
)

// Process is the outside view of a process that probe exec or probe attach
// watched (Result.Kind KindProcess): what /proc and wait4 say about it,
// without any help from the program. Every memory figure is in bytes and
// names the memory it is: RSS (resident), VSZ (reserved address space)
// and PSS (resident, shared pages divided among their processes) are
// different things. Slices are never nil; a pointer is null when the
// figure could not be had (said in the result's warnings).
type Process struct {
	// Mode is ModeExec or ModeAttach.
	Mode string `json:"mode"`
	// Command is the program and its arguments: as started (exec), or
	// /proc/PID/cmdline (attach).
	Command []string `json:"command"`
	PID     int      `json:"pid"`
	// Exited is true when the process ended while it was watched; false
	// when the watch ended first (--duration, Ctrl-C).
	Exited bool `json:"exited"`
	// ExitCode is the program's exit status, 128 + the signal's number
	// when a signal killed it (exec only: null for attach, whose process
	// is not the probe's child); Signal names that signal.
	ExitCode *int   `json:"exit_code"`
	Signal   string `json:"signal,omitempty"`
	// Go says whether the executable is a Go program (build information
	// in /proc/PID/exe); null when it is not or could not be read.
	Go *GoBuild `json:"go"`
	// DurationMs is the wall time watched.
	DurationMs float64 `json:"duration_ms"`
	// IntervalMs and SmapsEveryMs are the sampler's period and the least
	// period of the full smaps walks.
	IntervalMs   float64 `json:"interval_ms"`
	SmapsEveryMs float64 `json:"smaps_every_ms"`

	// Timeline sums up the sampler's timeline (Result.Sampler holds it).
	Timeline TimelineSummary `json:"timeline"`
	// VmHWMBytes is the kernel's peak RSS (VmHWM of status) as last
	// seen: the largest VmHWM read and RSS sampled (VmHWM is read every
	// tenth sample, RSS every one). It covers the process's whole life,
	// also before an attach.
	VmHWMBytes uint64 `json:"vm_hwm_bytes"`
	// RusageMaxRSSBytes is wait4's ru_maxrss (KiB × 1024) at exit: the
	// same counter read by the kernel as the process died (exec only; 0
	// for attach). It is the largest of the program and the descendants
	// it waited for, not their sum.
	RusageMaxRSSBytes uint64 `json:"rusage_maxrss_bytes"`
	// ProbeVmHWMAtStartBytes is the probe's own peak RSS when it started
	// the program (exec only). Go starts a program with vfork semantics,
	// and Linux carries the peak of the image an exec replaces into
	// ru_maxrss: wait4's maxrss is never below this, so a program smaller
	// than the probe reads as the probe's size there.
	ProbeVmHWMAtStartBytes uint64 `json:"probe_vm_hwm_at_start_bytes"`
	// PeakRSSSource says where the result's peak_rss_bytes comes from:
	// "vm_hwm" (the program's own high-water mark, sampled) or
	// "wait4_maxrss" (wait4's maxrss at exit, where it is larger: the
	// program or one of the descendants it waited for, whichever peaked
	// higher, so not necessarily the program's own).
	PeakRSSSource string `json:"peak_rss_source"`
	// PeakAgreementPct is 100 × (VmHWM − ru_maxrss) / ru_maxrss: the last
	// sample's peak against the one at exit (exec only; null otherwise).
	PeakAgreementPct *float64 `json:"peak_agreement_pct"`
	// RusageSource says where the CPU times, faults and context switches
	// below come from, the figures /usr/bin/time -v prints: "wait4"
	// (exec: wait4's rusage at exit, the program and the descendants it
	// waited for, as time -v reads them), "proc" (attach: /proc/PID/stat
	// and the threads' status at the last read, the process's own since
	// it started, its children not counted; context switches of its
	// live threads only), "" when none could be read.
	RusageSource string `json:"rusage_source"`
	// RusageUserMs and RusageSystemMs are the CPU time in user and
	// kernel mode.
	RusageUserMs   float64 `json:"rusage_user_ms"`
	RusageSystemMs float64 `json:"rusage_system_ms"`
	// RusageMinorFaults are page faults served without I/O (a page
	// zeroed or found in the page cache: mostly first touches of new
	// memory); RusageMajorFaults those that read from disk.
	RusageMinorFaults uint64 `json:"rusage_minor_faults"`
	RusageMajorFaults uint64 `json:"rusage_major_faults"`
	// RusageVoluntaryContextSwitches are the times a thread gave up the
	// CPU to wait (I/O, a lock, a sleep); RusageInvoluntaryContextSwitches
	// those it was preempted (its time slice over, or a higher priority
	// task): many of those mean more runnable threads than CPUs.
	RusageVoluntaryContextSwitches   uint64 `json:"rusage_voluntary_context_switches"`
	RusageInvoluntaryContextSwitches uint64 `json:"rusage_involuntary_context_switches"`

	// AtPeak is the reconciliation of the walk with the highest RSS; End
	// the last walk taken while the process lived. Null when no walk
	// could be taken (the process ended first).
	AtPeak *Snapshot `json:"at_peak"`
	End    *Snapshot `json:"end"`
	// Walks is the number of full smaps walks taken.
	Walks int `json:"walks"`

	// GPU is the process's GPU memory as NVML charges it, sampled, and the
	// utilization of the GPUs it used; null where NVML is not there (no
	// NVIDIA driver) or --gpu=false.
	GPU *ProcessGPU `json:"gpu"`

	// ChildrenWatched says the descendants were watched (--children):
	// with it, no Children means none was seen.
	ChildrenWatched bool `json:"children_watched"`
	// Children are the descendants seen (with --children), by pid.
	Children []Child `json:"children"`
	// TreePeakRSSBytes is the largest sum of RSS over the process and its
	// live descendants at one moment (with --children; else 0).
	TreePeakRSSBytes uint64 `json:"tree_peak_rss_bytes"`
	// DescendantPeakRSSBytes is the largest peak RSS (VmHWM as last read)
	// of one descendant seen (with --children; else 0).
	DescendantPeakRSSBytes uint64 `json:"descendant_peak_rss_bytes"`
	// DescendantsMissed is a lower bound on the descendants that lived
	// and were reaped between two reads, unseen: a parent's cminflt (the
	// faults of the children it waited for) rose while none of its
	// children seen had gone (with --children; else 0).
	DescendantsMissed int `json:"descendants_missed"`
	// DescendantWalks counts the walks of descendants (Child.AtPeak):
	// the largest at a read, at its new highs (with --children; else 0).
	DescendantWalks int `json:"descendant_walks"`

	// Diagnosis is what the figures say, in plain words, each with the
	// figure behind it.
	Diagnosis []Finding `json:"diagnosis"`
	// Overhead is what watching cost.
	Overhead Overhead `json:"overhead"`
	// Sites are the allocation sites (exec --sites); absent without.
	Sites *Sites `json:"sites,omitempty"`
	// Files are the files written to --out-dir (smaps at the peak and the
	// end, heap profiles).
	Files []string `json:"files"`
}

// ProcessGPU is a watched process's GPU side, from NVML (instrument/gpumem):
// the device memory NVML charges to the pid (its CUDA context, library
// workspaces and allocator caches included: more than the program's own
// allocations), the utilization of the GPUs it held memory on, which is
// device-wide (every process on those GPUs) and NVML's own average over
// its sampling window (1/6 s to 1 s by product), and the process's own
// utilization there, from NVML's per-process samples.
type ProcessGPU struct {
	// IntervalMs is the period of the NVML readings (slower than the RSS
	// sampler's: a reading costs up to a millisecond).
	IntervalMs float64 `json:"interval_ms"`
	// Samples are the readings that gave a memory figure; PeakBytes the
	// largest (a lower bound on the true peak, which can fall between two
	// readings) and FinalBytes the last.
	Samples    int   `json:"samples"`
	PeakBytes  int64 `json:"peak_bytes"`
	FinalBytes int64 `json:"final_bytes"`
	// MeanUtilPct is the mean of the readings' GPU utilization (the mean
	// over the GPUs the process held memory on): null when none could be
	// read (the GPU does not report it, as MIG instances do not).
	MeanUtilPct *float64 `json:"mean_util_pct"`
	// MeanProcessSMUtilPct is the mean over the readings of the
	// process's own SM utilization (nvmlDeviceGetProcessUtilization's
	// smUtil: the percent of NVML's sample period during which the GPU's
	// SMs ran this process's kernels; time, not occupancy), over the GPUs
	// it held memory on, and MeanProcessMemUtilPct likewise of memUtil
	// (the percent during which its work read or wrote device memory).
	// Null when no reading had one: a driver without the call, a GPU
	// that does not support it (MIG), or NVML recorded no sample during
	// the watch. A reading whose NVML reply had samples of other
	// processes but none of this one counts as 0 (NVML keeps samples only
	// of processes with some utilization); one with no sample at all has
	// no figure and is counted in ProcessUtilNoSampleReadings, never as
	// 0. ProcessUtilErrors are readings the call failed for
	// (ProcessUtilFirstError the first).
	MeanProcessSMUtilPct        *float64 `json:"mean_process_sm_util_pct"`
	MeanProcessMemUtilPct       *float64 `json:"mean_process_mem_util_pct"`
	ProcessUtilNoSampleReadings int      `json:"process_util_no_sample_readings"`
	ProcessUtilErrors           int      `json:"process_util_errors"`
	ProcessUtilFirstError       string   `json:"process_util_first_error,omitempty"`
	// NoEntrySamples are readings in which NVML listed no figure for the
	// pid (before its CUDA context, or a PID namespace NVML cannot see
	// into; NoEntryReason says which it may be), Errors other failures
	// (FirstError the first), UtilErrors readings without a utilization.
	NoEntrySamples int    `json:"no_entry_samples"`
	NoEntryReason  string `json:"no_entry_reason,omitempty"`
	Errors         int    `json:"errors"`
	FirstError     string `json:"first_error,omitempty"`
	UtilErrors     int    `json:"util_errors"`
	UtilFirstError string `json:"util_first_error,omitempty"`
	// Timeline are the readings: seconds since the watch began, bytes,
	// and the utilizations where read. Never nil.
	Timeline []GPUSample `json:"timeline"`
}

// GPUSample is one NVML reading of a watched process: UtilPct is the
// device-wide utilization, ProcessSMUtilPct and ProcessMemUtilPct the
// process's own in NVML's samples since the previous reading (absent when
// there was none).
type GPUSample struct {
	Seconds           float64  `json:"t_seconds"`
	Bytes             int64    `json:"bytes"`
	UtilPct           *float64 `json:"util_pct,omitempty"`
	ProcessSMUtilPct  *float64 `json:"process_sm_util_pct,omitempty"`
	ProcessMemUtilPct *float64 `json:"process_mem_util_pct,omitempty"`
}

// GoBuild is what a Go executable's build information says.
type GoBuild struct {
	GoVersion string `json:"go_version"`
	Path      string `json:"path"` // the main package's path
	// Cgo is the build's CGO_ENABLED setting ("" when not recorded).
	Cgo string `json:"cgo"`
}

// TimelineSummary is the timeline in a few figures.
type TimelineSummary struct {
	Samples int `json:"samples"`
	// StartRSSBytes and FinalRSSBytes are the first and last RSS sampled
	// while the process lived; PeakRSSBytes the largest.
	StartRSSBytes uint64 `json:"start_rss_bytes"`
	PeakRSSBytes  uint64 `json:"peak_rss_bytes"`
	FinalRSSBytes uint64 `json:"final_rss_bytes"`
	// Peak*Bytes are each field's largest sample (not at one moment).
	PeakVSZBytes      uint64 `json:"peak_vsz_bytes"`
	FinalVSZBytes     uint64 `json:"final_vsz_bytes"`
	PeakPSSBytes      uint64 `json:"peak_pss_bytes"`
	PeakRssAnonBytes  uint64 `json:"peak_rss_anon_bytes"`
	PeakRssFileBytes  uint64 `json:"peak_rss_file_bytes"`
	PeakRssShmemBytes uint64 `json:"peak_rss_shmem_bytes"`
	PeakSwapBytes     uint64 `json:"peak_swap_bytes"`
	PeakThreads       int    `json:"peak_threads"`
	// GrowthBytes is the peak RSS less the start's, reached PeakAtMs into
	// the run; LastQuarterGrowthBytes is how much RSS grew in the last
	// quarter of the run: near 0 is a plateau.
	GrowthBytes            int64   `json:"growth_bytes"`
	PeakAtMs               float64 `json:"peak_at_ms"`
	LastQuarterGrowthBytes int64   `json:"last_quarter_growth_bytes"`
}

// Snapshot is one full walk of the address space, reconciled.
type Snapshot struct {
	// TMs is when the walk started, in milliseconds since the watch began.
	TMs float64 `json:"t_ms"`
	// WalkMs is what gathering it took (smaps, the threads, pagemap).
	WalkMs float64 `json:"walk_ms"`
	// Reconciliation is RSS and VSZ in named parts (instrument/reconcile, with
	// the outside-only parts: gpu.driver, go.runtime.anon).
	Reconciliation Reconciliation `json:"reconciliation"`
	// Threads is the number of threads; StackPointers how many of them
	// had a readable stack pointer (task/TID/syscall or stat's kstkesp).
	Threads       int `json:"threads"`
	StackPointers int `json:"stack_pointers"`
	// VmHWMBytes is the kernel's peak RSS as status said at the walk.
	VmHWMBytes uint64 `json:"vm_hwm_bytes"`
	// ThreadStackDefaultBytes is the process's default pthread stack size
	// (its RLIMIT_STACK, /proc/PID/limits).
	ThreadStackDefaultBytes int64 `json:"thread_stack_default_bytes"`
	// CPUs is the number of online CPUs; GlibcArenaLimit glibc's default
	// arena limit, 8 × CPUs on 64-bit (the main arena included);
	// MallocArenaMax is the process's MALLOC_ARENA_MAX ("" when unset or
	// unreadable).
	CPUs            int    `json:"cpus"`
	GlibcArenaLimit int    `json:"glibc_arena_limit"`
	MallocArenaMax  string `json:"malloc_arena_max"`
	// AnonBySize is every anonymous mapping (stacks and arenas included)
	// by size class: a second view, not more parts.
	AnonBySize []SizeClass `json:"anon_by_size"`
	// GPUMappings are the /dev/nvidia*, /dev/dri, /dev/kfd mappings.
	GPUMappings int `json:"gpu_mappings"`
}

// SizeClass is the anonymous mappings of one size range, [MinBytes,
// MaxBytes).
type SizeClass struct {
	Class         string `json:"class"`
	MinBytes      int64  `json:"min_bytes"`
	MaxBytes      int64  `json:"max_bytes"` // 0: no bound
	Mappings      int    `json:"mappings"`
	ReservedBytes int64  `json:"reserved_bytes"`
	ResidentBytes int64  `json:"resident_bytes"`
}

// Child is a descendant of the watched process.
type Child struct {
	PID     int      `json:"pid"`
	PPID    int      `json:"ppid"`
	Command []string `json:"command"`
	// VmHWMBytes is its peak RSS at the last time it was read.
	VmHWMBytes uint64 `json:"vm_hwm_bytes"`
	// PeakRSSBytes is the largest RSS seen in it.
	PeakRSSBytes uint64 `json:"peak_rss_bytes"`
	// StartMs is when it started (its stat's start time, to the kernel's
	// 10 ms tick), LastSeenMs when it was last read alive, both in
	// milliseconds since the watch began (StartMs is negative for one
	// started before); LifetimeMs is LastSeenMs − StartMs, short of its
	// true life by up to one read's period. Exited says it was gone
	// before the watch ended.
	StartMs    float64 `json:"start_ms"`
	LastSeenMs float64 `json:"last_seen_ms"`
	LifetimeMs float64 `json:"lifetime_ms"`
	Exited     bool    `json:"exited"`
	// AtPeak is, on the one descendant it is of, the walk of the
	// descendants with the most RSS: the largest one at a read of the
	// tree is walked at its new highs, as the program is, and the
	// highest walk is kept (TMs since the watch began). Absent on the
	// others, and where no descendant was walked.
	AtPeak *Snapshot `json:"at_peak,omitempty"`
}

// Finding is one line of the diagnosis and the figure behind it.
type Finding struct {
	// Topic is what it is about: stacks, arenas, growth, peak,
	// unexplained, go, gpu, files, swap, children.
	Topic string `json:"topic"`
	Text  string `json:"text"`
	// Metric names the figure (with its unit) and Value is it.
	Metric string  `json:"metric"`
	Value  float64 `json:"value"`
}

// Overhead is what watching cost the watcher, and so the machine the
// program ran on (the probe runs beside the program, not in it).
type Overhead struct {
	// SamplerCostMs is the wall time the sampler spent reading /proc
	// (statm every sample, status and smaps_rollup less often); WalkCostMs
	// the full smaps walks.
	SamplerCostMs float64 `json:"sampler_cost_ms"`
	WalkCostMs    float64 `json:"walk_cost_ms"`
	// ChildrenCostMs is the wall time spent reading the descendants
	// (--children; 0 without).
	ChildrenCostMs float64 `json:"children_cost_ms"`
	// ProbeCPUMs is the probe's own CPU time (getrusage, user + system)
	// while watching, until the program exited (attach: until the end
	// walk); ProbeCPUPct that over the watched wall time: the share of
	// one core the probe took from the program's machine while it ran.
	ProbeCPUMs  float64 `json:"probe_cpu_ms"`
	ProbeCPUPct float64 `json:"probe_cpu_pct"`
	// AnalysisCPUMs is the probe's CPU time after the watch: reading and
	// symbolizing --sites' records, writing profiles and raw walks.
	AnalysisCPUMs float64 `json:"analysis_cpu_ms"`
}

// trainOnly are the result fields (JSON names) that only a training job
// measures: a process result leaves them zero, which is not a measurement.
var trainOnly = map[string]bool{
	"params": true, "steps": true, "start_step": true, "tokens_per_step": true,
	"tokens_per_sec": true, "step_ns_median": true, "step_ns": true,
	"loss_first": true, "loss_last": true, "losses": true,
	"gflop_per_step": true, "achieved_gflops": true,
	"go_heap_alloc_bytes_per_step": true, "go_heap_allocs_per_step": true, "allocs_by_site": true,
	"floor_bytes": true, "executor_bytes": true, "ledger_total_bytes": true, "expected_total_bytes": true,
	"ledger": true, "ledger_findings": true, "counts": true, "decode_stats": true,
	"data_tokens": true, "data_vocab": true, "threads": true, "executors": true,
}

// Measures reports whether r measured metric, a JSON field name or a
// dotted path into one: every field for a training job, and for a process
// result (probe exec, probe attach) all but the training figures, so that
// summaries and diffs leave those out rather than compare zeros.
func (r *Result) Measures(metric string) bool {
	if r.Kind != KindProcess {
		return true
	}
	top, _, _ := strings.Cut(metric, ".")
	return !trainOnly[top]
}
