package sampler

import "memprobe/schema"

// Point is one sample, or after downsampling the field-wise maximum of
// Samples consecutive samples; package schema defines its fields (a field
// not read in a sample is 0, not a measured zero).
type Point = schema.SamplerPoint

// MaxPoint returns the field-wise maximum of a and b. TMs is the earlier
// of the two, Samples, StatusSamples and SmapsSamples the sums, so merging
// adjacent points gives the point of their combined bucket. A field not
// read in one of them is 0 there, so the maximum is over the points that
// read it.
func MaxPoint(a, b Point) Point {
	return Point{
		TMs:               min(a.TMs, b.TMs),
		Samples:           a.Samples + b.Samples,
		StatusSamples:     a.StatusSamples + b.StatusSamples,
		SmapsSamples:      a.SmapsSamples + b.SmapsSamples,
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
//
// So once the run has outgrown Max, the first and the last point are the
// maxima of their buckets, not the values at the start and at the end: a
// process that frees most of its memory just before it ends has a last
// point as high as its peak. First and Last keep those two samples exactly
// as they were taken, beside the merged points.
type Timeline struct {
	max         int
	stride      int
	points      []Point
	pending     Point // the bucket being filled, pending.Samples < stride
	first, last Point // the first and the latest sample, as taken
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
	if t.first.Samples == 0 {
		t.first = p
	}
	t.last = p
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

// First is the first sample added, exactly as it was (Samples 1); false
// before any.
func (t *Timeline) First() (Point, bool) { return t.first, t.first.Samples > 0 }

// Last is the latest sample added, exactly as it was (Samples 1), not the
// maximum of its bucket; false before any.
func (t *Timeline) Last() (Point, bool) { return t.last, t.last.Samples > 0 }

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
