package schema

// The sampler's timeline (instrument/sampler fills these; Result.Sampler and
// Run.Timeline hold them).

// SamplerResult is what a sampling run saw (sampler.Result).
type SamplerResult struct {
	// PID is the process sampled.
	PID int `json:"pid"`
	// Peaks is the field-wise maximum over every sample, not just the
	// timeline's points: TMs is 0, Samples the sample count. Each field's
	// peak is over the samples that read it: RSS and VSZ over all of
	// them, the status fields over the StatusSamples that read status
	// (every sample by default), the smaps_rollup fields (PSS, swap, the
	// private/shared split) over the SmapsSamples readings of
	// smaps_rollup only, so a spike between two of those is missed.
	// Peaks are not of one moment: each field may peak at another time.
	Peaks SamplerPoint `json:"peaks"`
	// PeakRSSAtMs is when the first sample at the peak RSS was taken, in
	// milliseconds since the sampler started: the timeline's points give
	// only their bucket's start, seconds apart in a long run.
	PeakRSSAtMs float64 `json:"peak_rss_at_ms,omitempty"`
	// First and Last are the first and the last sample exactly as taken
	// (Samples 1), not the maxima of the timeline's first and last
	// buckets: the start and final values of the run. Every sample is of
	// the live process (the sampler stops at one that has exited), so
	// Last is the last moment it was seen alive. Nil only before a first
	// sample (a result that no successful start produced).
	First *SamplerPoint `json:"first,omitempty"`
	Last  *SamplerPoint `json:"last,omitempty"`
	// Timeline is at most the sampler's MaxPoints points; each is the
	// field-wise maximum of the Samples samples it covers. Never nil.
	Timeline []SamplerPoint `json:"timeline"`
	// Samples is the number of samples taken.
	Samples int `json:"samples"`
	// StatusSamples and SmapsSamples are how many of them read status and
	// smaps_rollup (the others have those fields at 0: not read).
	StatusSamples int `json:"status_samples"`
	SmapsSamples  int `json:"smaps_samples"`
	// Reopens is how many times the sampler opened the process's /proc
	// files again while it lived: after a read failed (a descriptor that
	// an execve left stale) or when it saw an execve.
	Reopens int `json:"reopens,omitempty"`
	// Execs are the execve calls the sampler saw, in order (absent: none).
	Execs []SamplerExec `json:"execs,omitempty"`
	// IntervalMs is the requested interval, in milliseconds.
	IntervalMs float64 `json:"interval_ms"`
	// DurationMs is the time from the first sample to the last.
	DurationMs float64 `json:"duration_ms"`
	// CostMs is the wall time spent taking samples (reading /proc, most
	// of it in the kernel), and SmapsCostMs its smaps_rollup part: the
	// sampler's own cost, to set against DurationMs.
	CostMs      float64 `json:"cost_ms"`
	SmapsCostMs float64 `json:"smaps_cost_ms"`
	// Warnings are problems that did not stop the run, e.g. the process
	// exited before Stop, or smaps_rollup could not be read; never nil.
	Warnings []string `json:"warnings"`
}

// SamplerExec is an execve the process made while sampled (sampler.Exec):
// the same process (pid and start time) now runs another program, and
// every sample from TMs on is of it.
type SamplerExec struct {
	// TMs is the time of the sample that saw it (the execve came after
	// the sample before), in milliseconds since the sampler started.
	TMs float64 `json:"t_ms"`
	// Exe is /proc/<pid>/exe after it ("" where it cannot be read), Name
	// the command name that status gave last (the new program's, when
	// status was read in that sample, as by default).
	Exe  string `json:"exe"`
	Name string `json:"name"`
}

// SamplerPoint is one sample (sampler.Point), or after downsampling the
// field-wise maximum of Samples consecutive samples. Sizes are bytes.
//
// Every field is a measurement taken in the samples the point covers, never
// a value carried over from an earlier sample. Not every sample reads every
// file: StatusSamples and SmapsSamples say how many of the point's samples
// read /proc/<pid>/status and smaps_rollup. A field from a file that none of
// them read is 0, meaning "not read", not a measured zero; in a merged point
// each field is the maximum over the samples that read it.
type SamplerPoint struct {
	// TMs is the time of the bucket's first sample, in milliseconds since
	// the sampler started.
	TMs float64 `json:"t_ms"`
	// Samples is how many samples this point merges.
	Samples int `json:"samples"`
	// StatusSamples is how many of them read /proc/<pid>/status (Linux;
	// by default every sample does): the status fields below are measured
	// in this point only when it is above 0.
	StatusSamples int `json:"status_samples"`
	// SmapsSamples is how many of them read smaps_rollup (at most every
	// SmapsEvery-th sample, within a budget): the smaps_rollup fields
	// below are measured in this point only when it is above 0.
	SmapsSamples int `json:"smaps_samples"`

	// RSSBytes and VSZBytes are read by every sample. On Linux they are
	// VmRSS and VmSize of the status read in that sample (so RSSBytes is
	// exactly RssAnon + RssFile + RssShmem and at most VmHWM of the same
	// read), or, in a sample that reads no status (the sampler's
	// StatusEvery > 1), statm's resident and size: the same kernel
	// counters. Elsewhere they are gopsutil's process.MemoryInfo RSS and
	// VMS.
	RSSBytes uint64 `json:"rss_bytes"`
	VSZBytes uint64 `json:"vsz_bytes"`

	// From /proc/<pid>/status, Linux only (see instrument/procfs's Status for
	// each field's meaning); 0 when StatusSamples is 0.
	VmHWMBytes    uint64 `json:"vm_hwm_bytes"`
	VmPeakBytes   uint64 `json:"vm_peak_bytes"`
	RssAnonBytes  uint64 `json:"rss_anon_bytes"`
	RssFileBytes  uint64 `json:"rss_file_bytes"`
	RssShmemBytes uint64 `json:"rss_shmem_bytes"`
	VmStkBytes    uint64 `json:"vm_stk_bytes"`
	Threads       int    `json:"threads"`

	// From /proc/<pid>/smaps_rollup, Linux only; 0 when SmapsSamples is
	// 0 (the samples between two smaps_rollup reads carry nothing
	// forward).
	PssBytes          uint64 `json:"pss_bytes"`
	PrivateDirtyBytes uint64 `json:"private_dirty_bytes"`
	PrivateCleanBytes uint64 `json:"private_clean_bytes"`
	SharedDirtyBytes  uint64 `json:"shared_dirty_bytes"`
	SharedCleanBytes  uint64 `json:"shared_clean_bytes"`
	AnonymousBytes    uint64 `json:"anonymous_bytes"`
	SwapBytes         uint64 `json:"swap_bytes"`
}
