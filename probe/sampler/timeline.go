package sampler

// Point is one sample, or after downsampling the field-wise maximum of
// Samples consecutive samples. Sizes are bytes.
type Point struct {
	// TMs is the time of the bucket's first sample, in milliseconds since
	// Start.
	TMs float64 `json:"t_ms"`
	// Samples is how many samples this point merges.
	Samples int `json:"samples"`

	// RSSBytes and VSZBytes come from gopsutil's process.MemoryInfo
	// (RSS and VMS).
	RSSBytes uint64 `json:"rss_bytes"`
	VSZBytes uint64 `json:"vsz_bytes"`

	// The rest are Linux only, from /proc/<pid>/status (see
	// procfs.Status for each field's meaning).
	VmHWMBytes    uint64 `json:"vm_hwm_bytes"`
	VmPeakBytes   uint64 `json:"vm_peak_bytes"`
	RssAnonBytes  uint64 `json:"rss_anon_bytes"`
	RssFileBytes  uint64 `json:"rss_file_bytes"`
	RssShmemBytes uint64 `json:"rss_shmem_bytes"`
	VmStkBytes    uint64 `json:"vm_stk_bytes"`
	Threads       int    `json:"threads"`

	// From /proc/<pid>/smaps_rollup, read every SmapsEvery-th tick; in
	// between, the last reading is carried forward (zero before the
	// first).
	PssBytes          uint64 `json:"pss_bytes"`
	PrivateDirtyBytes uint64 `json:"private_dirty_bytes"`
	PrivateCleanBytes uint64 `json:"private_clean_bytes"`
	SharedDirtyBytes  uint64 `json:"shared_dirty_bytes"`
	SharedCleanBytes  uint64 `json:"shared_clean_bytes"`
	AnonymousBytes    uint64 `json:"anonymous_bytes"`
	SwapBytes         uint64 `json:"swap_bytes"`
}

// MaxPoint returns the field-wise maximum of a and b. TMs is the earlier
// of the two and Samples the sum, so merging adjacent points gives the
// point of their combined bucket.
func MaxPoint(a, b Point) Point {
	return Point{
		TMs:               min(a.TMs, b.TMs),
		Samples:           a.Samples + b.Samples,
		RSSBytes:          max(a.RSSBytes, b.RSSBytes),
		VSZBytes:          max(a.VSZBytes, b.VSZBytes),
		VmHWMBytes:        max(a.VmHWMBytes, b.VmHWMBytes),
		VmPeakBytes:       max(a.VmPeakBytes, b.VmPeakBytes),
		RssAnonBytes:      max(a.RssAnonBytes, b.RssAnonBytes),
		RssFileBytes:      max(a.RssFileBytes, b.RssFileBytes),
		RssShmemBytes:     max(a.RssShmemBytes, b.RssShmemBytes),
		VmStkBytes:        max(a.VmStkBytes, b.VmStkBytes),
		Threads:           max(a.Threads, b.Threads),
		PssBytes:          max(a.PssBytes, b.PssBytes),
		PrivateDirtyBytes: max(a.PrivateDirtyBytes, b.PrivateDirtyBytes),
		PrivateCleanBytes: max(a.PrivateCleanBytes, b.PrivateCleanBytes),
		SharedDirtyBytes:  max(a.SharedDirtyBytes, b.SharedDirtyBytes),
		SharedCleanBytes:  max(a.SharedCleanBytes, b.SharedCleanBytes),
		AnonymousBytes:    max(a.AnonymousBytes, b.AnonymousBytes),
		SwapBytes:         max(a.SwapBytes, b.SwapBytes),
	}
}

// MergePairs merges points 2i and 2i+1 with MaxPoint, in place, and
// returns the halved slice. An odd last point is kept as it is.
func MergePairs(pts []Point) []Point {
	n := 0
	for i := 0; i < len(pts); i += 2 {
		if i+1 < len(pts) {
			pts[n] = MaxPoint(pts[i], pts[i+1])
		} else {
			pts[n] = pts[i]
		}
		n++
	}
	clear(pts[n:])
	return pts[:n]
}

// Timeline keeps at most Max points of a stream of samples. Each stored
// point covers Stride samples; when the store fills, adjacent points are
// merged (MergePairs) and the stride doubles. Peaks survive exactly,
// because merging keeps each field's maximum; dips between peaks do not.
type Timeline struct {
	max     int
	stride  int
	points  []Point
	pending Point // the bucket being filled, pending.Samples < stride
}

// NewTimeline returns a Timeline of at most max points; max must be at
// least 2.
func NewTimeline(max int) *Timeline {
	if max < 2 {
		panic("sampler: timeline needs at least 2 points")
	}
	return &Timeline{max: max, stride: 1, points: make([]Point, 0, max)}
}

// Add appends one sample; p.Samples is taken as 1.
func (t *Timeline) Add(p Point) {
	p.Samples = 1
	if t.pending.Samples == 0 {
		t.pending = p
	} else {
		t.pending = MaxPoint(t.pending, p)
	}
	if t.pending.Samples < t.stride {
		return
	}
	t.points = append(t.points, t.pending)
	t.pending = Point{}
	if len(t.points) == t.max {
		t.points = MergePairs(t.points)
		t.stride *= 2
	}
}

// Stride is how many samples each full point covers now.
func (t *Timeline) Stride() int { return t.stride }

// Points returns a copy of the stored points followed by the partly filled
// bucket, if any; never more than max, never nil.
func (t *Timeline) Points() []Point {
	out := make([]Point, len(t.points), len(t.points)+1)
	copy(out, t.points)
	if t.pending.Samples > 0 {
		out = append(out, t.pending)
	}
	return out
}
