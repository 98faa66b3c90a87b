package schema

// The Go profiles of a job (instrument/profiling writes them; Result.Profiles
// lists them).

// ProfileFile is one profile written (profiling.File).
type ProfileFile struct {
	// Kind is cpu, heap, allocs, mutex, block or heap-peak.
	Kind string `json:"kind"`
	Path string `json:"path"`
	// HeapLiveBytes is, for heap-peak, the live heap (as of the last GC)
	// that triggered it.
	HeapLiveBytes int64 `json:"heap_live_bytes,omitempty"`
	// TMs is when it was written, in milliseconds since the session
	// started.
	TMs float64 `json:"t_ms"`
}

// Profiles is what a profiling session did (profiling.Report): the pprof
// files it wrote and its server. Slices are never nil.
type Profiles struct {
	Files []ProfileFile `json:"files"`
	// PprofAddr is the address the server listened on ("" if none).
	PprofAddr string `json:"pprof_addr,omitempty"`
	// HeapLiveMaxBytes is the largest live heap seen at a GC during the
	// session, whether or not a profile was written for it.
	HeapLiveMaxBytes int64 `json:"heap_live_max_bytes"`
	// PeakSkipped counts live-heap peaks not profiled because the
	// session's PeakMax was reached.
	PeakSkipped int      `json:"peak_skipped"`
	Warnings    []string `json:"warnings"`
}
