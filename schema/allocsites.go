package schema

// Allocation sites: what allocated on the Go heap in a window of the run
// (instrument/allocsite fills these; Result.AllocsBySite holds them).

// AllocSite is one allocation site (allocsite.Site): the innermost frame
// that is not a runtime allocation entry point (newobject, makeslice,
// growslice, ...).
type AllocSite struct {
	// Class is program, runtime or probe (see instrument/allocsite's package
	// comment).
	Class string `json:"class"`
	// Function, File and Line are the site.
	Function string `json:"function"`
	File     string `json:"file"`
	Line     int    `json:"line"`
	// CalledFrom is, for a runtime site, the innermost frame outside the
	// runtime and the standard library's sync and time packages: the
	// code whose blocking or goroutine made the runtime allocate.
	CalledFrom string `json:"called_from,omitempty"`
	// Objects and Bytes are allocated in the window; per step when the
	// window has steps.
	Objects        int64   `json:"objects"`
	Bytes          int64   `json:"bytes"`
	ObjectsPerStep float64 `json:"objects_per_step"`
	BytesPerStep   float64 `json:"bytes_per_step"`
}

// AllocSites is what allocsite's Window saw: the heap allocations of a
// window of the run, by site, program, runtime and probe apart. Sites is
// never nil.
type AllocSites struct {
	// MemProfileRate is the rate during the window; Exact is true when
	// it was 1, so every allocation was recorded.
	MemProfileRate int  `json:"memprofile_rate"`
	Exact          bool `json:"exact"`
	Steps          int  `json:"steps"`
	// Totals by class, over the window.
	ProgramObjects int64 `json:"program_objects"`
	ProgramBytes   int64 `json:"program_bytes"`
	RuntimeObjects int64 `json:"runtime_objects"`
	RuntimeBytes   int64 `json:"runtime_bytes"`
	ProbeObjects   int64 `json:"probe_objects"`
	ProbeBytes     int64 `json:"probe_bytes"`
	// ProbeWalkBytes is the part of ProbeBytes the probe's walks of its
	// own process made (the reconciliation at a new peak), which the
	// cross-check against runtime/metrics takes out of its count.
	ProbeWalkBytes int64 `json:"probe_walk_bytes,omitempty"`
	// Sites are the allocsite Options.Top sites by objects (then bytes), program sites
	// first; SitesOmitted counts the rest.
	Sites        []AllocSite `json:"sites"`
	SitesOmitted int         `json:"sites_omitted"`
}

// ProgramObjectsPerStep is ProgramObjects / Steps (0 without steps).
func (r AllocSites) ProgramObjectsPerStep() float64 { return perStep(r.ProgramObjects, r.Steps) }

// ProgramBytesPerStep is ProgramBytes / Steps (0 without steps).
func (r AllocSites) ProgramBytesPerStep() float64 { return perStep(r.ProgramBytes, r.Steps) }

func perStep(v int64, steps int) float64 {
	if steps <= 0 {
		return 0
	}
	return float64(v) / float64(steps)
}
