package sampler

import (
	"math/rand/v2"
	"testing"
)

func TestMergePairs(t *testing.T) {
	pts := []Point{
		{TMs: 0, Samples: 1, RSSBytes: 5, VSZBytes: 9, Threads: 1},
		{TMs: 1, Samples: 1, RSSBytes: 7, VSZBytes: 3, Threads: 4},
		{TMs: 2, Samples: 2, RSSBytes: 1, PssBytes: 8},
	}
	got := MergePairs(pts)
	want := []Point{
		{TMs: 0, Samples: 2, RSSBytes: 7, VSZBytes: 9, Threads: 4},
		{TMs: 2, Samples: 2, RSSBytes: 1, PssBytes: 8},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d points, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("point %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestTimelineKeepsMax feeds a seeded random series and checks, against a
// naive reference, that every point is the max of the samples it covers,
// that the count stays bounded, and that the global max survives.
func TestTimelineKeepsMax(t *testing.T) {
	for _, maxPoints := range []int{2, 3, 8, 512} {
		for _, n := range []int{1, 2, 7, 8, 9, 100, 1000, 5000} {
			r := rand.New(rand.NewPCG(uint64(maxPoints), uint64(n)))
			tl := NewTimeline(maxPoints)
			var samples []Point
			for i := range n {
				p := Point{TMs: float64(i), RSSBytes: 1 + r.Uint64N(1<<30), SwapBytes: r.Uint64N(10), Threads: 1 + r.IntN(64)}
				samples = append(samples, p)
				tl.Add(p)
				if got := len(tl.Points()); got > maxPoints {
					t.Fatalf("max %d: %d points after %d samples", maxPoints, got, i+1)
				}
			}
			pts := tl.Points()
			var peak uint64
			for _, s := range samples {
				peak = max(peak, s.RSSBytes)
			}
			var tlPeak uint64
			next := 0
			for i, p := range pts {
				// Naive reference: the max over the samples this point covers.
				want := Point{TMs: samples[next].TMs}
				for _, s := range samples[next : next+p.Samples] {
					want = Point{TMs: want.TMs, Samples: want.Samples + 1,
						RSSBytes: max(want.RSSBytes, s.RSSBytes), SwapBytes: max(want.SwapBytes, s.SwapBytes),
						Threads: max(want.Threads, s.Threads)}
				}
				if p != want {
					t.Fatalf("max %d, n %d: point %d = %+v, want %+v", maxPoints, n, i, p, want)
				}
				next += p.Samples
				tlPeak = max(tlPeak, p.RSSBytes)
			}
			if next != n {
				t.Errorf("max %d, n %d: points cover %d samples", maxPoints, n, next)
			}
			// First and Last are the samples themselves, whatever the
			// merging made of their buckets.
			first, okF := tl.First()
			last, okL := tl.Last()
			wantFirst, wantLast := samples[0], samples[n-1]
			wantFirst.Samples, wantLast.Samples = 1, 1
			if !okF || !okL || first != wantFirst || last != wantLast {
				t.Errorf("max %d, n %d: first %+v, last %+v; want %+v, %+v", maxPoints, n, first, last, wantFirst, wantLast)
			}
			if tlPeak != peak {
				t.Errorf("max %d, n %d: timeline peak %d, want %d", maxPoints, n, tlPeak, peak)
			}
		}
	}
}

func TestTimelineStride(t *testing.T) {
	tl := NewTimeline(4)
	for range 16 {
		tl.Add(Point{RSSBytes: 1})
	}
	// 4 full points of stride 2 would be full, so the stride is 8 after 16
	// samples: two points of 8 samples.
	if tl.Stride() != 8 || len(tl.Points()) != 2 {
		t.Errorf("stride %d, %d points; want 8, 2", tl.Stride(), len(tl.Points()))
	}
}

// TestTimelineFinalNotBucketMax: once the samples outgrow the store, the
// last point is the maximum of its bucket; Last is the last sample. (A
// process that frees 100 MiB just before it ends: its final RSS is the
// small one.)
func TestTimelineFinalNotBucketMax(t *testing.T) {
	tl := NewTimeline(4)
	if _, ok := tl.Last(); ok {
		t.Error("Last before any sample: ok")
	}
	tl.Add(Point{TMs: 0, RSSBytes: 1 << 20, VSZBytes: 2 << 20})
	for i := 1; i < 99; i++ {
		tl.Add(Point{TMs: float64(i), RSSBytes: 101 << 20, VSZBytes: 102 << 20})
	}
	tl.Add(Point{TMs: 99, RSSBytes: 1 << 20, VSZBytes: 2 << 20})
	pts := tl.Points()
	first, _ := tl.First()
	last, _ := tl.Last()
	if end := pts[len(pts)-1]; end.Samples < 2 || end.RSSBytes != 101<<20 {
		t.Fatalf("last point %+v: want a merged bucket at the maximum", end)
	}
	if first.RSSBytes != 1<<20 || last.RSSBytes != 1<<20 || last.VSZBytes != 2<<20 || last.TMs != 99 || last.Samples != 1 {
		t.Errorf("first %+v, last %+v: want the samples at 0 and 99 ms, 1 MiB RSS", first, last)
	}
}

// TestMaxPointCounts: merging sums the read counts and takes each field's
// maximum, so a field that one side did not read (0) takes the other's.
func TestMaxPointCounts(t *testing.T) {
	a := Point{TMs: 1, Samples: 1, StatusSamples: 1, RSSBytes: 5, RssAnonBytes: 4}
	b := Point{TMs: 2, Samples: 1, SmapsSamples: 1, RSSBytes: 7, PssBytes: 6}
	want := Point{TMs: 1, Samples: 2, StatusSamples: 1, SmapsSamples: 1, RSSBytes: 7, RssAnonBytes: 4, PssBytes: 6}
	if got := MaxPoint(a, b); got != want {
		t.Errorf("MaxPoint = %+v, want %+v", got, want)
	}
}
