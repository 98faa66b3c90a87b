package stats

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"golang.org/x/perf/benchmath"
)

// TestMedian: the middle value, the mean of the middle two, 0 for none;
// the input keeps its order.
func TestMedian(t *testing.T) {
	for _, c := range []struct {
		vals []float64
		want float64
	}{
		{nil, 0},
		{[]float64{7}, 7},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{10, -10}, 0},
	} {
		in := slices.Clone(c.vals)
		if got := Median(in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.vals, got, c.want)
		}
		if !slices.Equal(in, c.vals) {
			t.Errorf("Median(%v) reordered its input to %v", c.vals, in)
		}
	}
}

// TestMedianOfWholeNumbers: on whole numbers below 2^52 (bytes, counts,
// nanoseconds) Median is bit for bit the mean of the middle two of the
// sorted values, the formula report and htmlreport used before they
// called Median, so that their figures do not move. (On fractions
// benchmath's x + (y−x)/2 and (x+y)/2 may differ in the last bit.)
func TestMedianOfWholeNumbers(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		n := 1 + rng.IntN(12)
		vals := make([]float64, n)
		for i := range vals {
			vals[i] = float64(rng.Int64N(1 << 40))
		}
		s := slices.Sorted(slices.Values(vals))
		want := s[n/2]
		if n%2 == 0 {
			want = (s[n/2-1] + s[n/2]) / 2
		}
		if got := Median(vals); got != want {
			t.Fatalf("Median(%v) = %v, the mean of the middle two is %v", vals, got, want)
		}
	}
}

// TestSummarize: the median and interval are benchmath's where finite;
// with fewer than MinForCI values the interval is [min, max] and a
// ClampedInterval says so; a spread past SpreadWarn of the median is a
// WideSpread; the input keeps its order.
func TestSummarize(t *testing.T) {
	if s := Summarize(nil); s.N != 0 || s.Warnings != nil {
		t.Errorf("Summarize(nil) = %+v, want zero", s)
	}

	few := []float64{120, 100, 110}
	s := Summarize(few)
	if s.N != 3 || s.Median != 110 || s.Lo != 100 || s.Hi != 120 || s.Min != 100 || s.Max != 120 {
		t.Errorf("Summarize(%v) = %+v, want median 110 in [100, 120]", few, s)
	}
	var ci *ClampedInterval
	if len(s.Warnings) != 1 || !errors.As(s.Warnings[0], &ci) || ci.N != 3 || ci.Need != 6 {
		t.Errorf("Summarize(%v).Warnings = %v, want one ClampedInterval, 3 values of 6", few, s.Warnings)
	}
	if !slices.Equal(few, []float64{120, 100, 110}) {
		t.Errorf("Summarize reordered its input to %v", few)
	}

	many := []float64{109, 101, 108, 102, 107, 103, 106, 104, 105, 100}
	s = Summarize(many)
	want := benchmath.AssumeNothing.Summary(benchmath.NewSample(slices.Clone(many), &benchmath.DefaultThresholds), Confidence)
	if s.Median != want.Center || s.Lo != want.Lo || s.Hi != want.Hi || s.Confidence != want.Confidence || s.Warnings != nil {
		t.Errorf("Summarize(10 values) = %+v, benchmath gives %+v", s, want)
	}
	if !(s.Lo > s.Min && s.Hi < s.Max) {
		t.Errorf("10 values: interval [%v, %v] not inside [min, max]", s.Lo, s.Hi)
	}

	wide := []float64{100, 100, 130}
	s = Summarize(wide)
	var ws *WideSpread
	if !slices.ContainsFunc(s.Warnings, func(w error) bool { return errors.As(w, &ws) }) || ws.Percent() != 30 {
		t.Errorf("Summarize(%v).Warnings = %v, want a WideSpread of 30 %%", wide, s.Warnings)
	}
	if s = Summarize([]float64{100, 100, 120}); slices.ContainsFunc(s.Warnings, func(w error) bool { return errors.As(w, &ws) }) {
		t.Errorf("a 20 %% spread warns: %v", s.Warnings)
	}
}

// TestMinForCI: 6 values at 95 % (benchmath's own count), and the first
// size at which Summarize's interval is not clamped.
func TestMinForCI(t *testing.T) {
	n := MinForCI(Confidence)
	if n != 6 {
		t.Errorf("MinForCI(0.95) = %d, want 6", n)
	}
	for k := 2; k <= 8; k++ {
		vals := make([]float64, k)
		for i := range vals {
			vals[i] = float64(i)
		}
		var ci *ClampedInterval
		clamped := slices.ContainsFunc(Summarize(vals).Warnings, func(w error) bool { return errors.As(w, &ci) })
		if clamped != (k < n) {
			t.Errorf("%d values: clamped %v, want %v", k, clamped, k < n)
		}
	}
}

// TestMinP: the smallest p MinP gives is the p benchmath's U test gives
// for two samples that do not overlap, at every size up to 6+6; and
// MinRepetitions is the fewest a side with which it is below
// DefaultAlpha.
func TestMinP(t *testing.T) {
	th := benchmath.DefaultThresholds
	for n := 1; n <= 6; n++ {
		for m := 1; m <= 6; m++ {
			var a, b []float64
			for i := range n {
				a = append(a, float64(i))
			}
			for i := range m {
				b = append(b, float64(100+i))
			}
			p := benchmath.AssumeNothing.Compare(benchmath.NewSample(a, &th), benchmath.NewSample(b, &th)).P
			if got := MinP(n, m); math.Abs(got-p) > 1e-9 {
				t.Errorf("MinP(%d, %d) = %.4f, the U test gives %.4f", n, m, got, p)
			}
		}
	}
	if MinP(3, 3) != 0.1 || MinP(1, 1) != 1 || MinP(0, 5) != 1 {
		t.Errorf("MinP(3, 3) = %v, MinP(1, 1) = %v, MinP(0, 5) = %v; want 0.1, 1 and 1", MinP(3, 3), MinP(1, 1), MinP(0, 5))
	}
	if r := MinRepetitions; !(MinP(r, r) < DefaultAlpha && MinP(r-1, r-1) >= DefaultAlpha) {
		t.Errorf("MinRepetitions %d: MinP %v at %d a side, %v at %d", r, MinP(r, r), r, MinP(r-1, r-1), r-1)
	}
}

// TestCompare: at 3+3 a change however clear is unjudged (an Unjudged
// warning, not significant); at 4+4 it is significant; a change within
// the spread and under 1 % is noise; the inputs keep their order.
func TestCompare(t *testing.T) {
	base, head := []float64{3, 1, 2}, []float64{12, 10, 11}
	c := Compare(base, head, DefaultAlpha)
	var u *Unjudged
	if c.Significant || !c.Unjudged || c.MinP != 0.1 || c.Delta != 9 || c.N1 != 3 || c.N2 != 3 ||
		len(c.Warnings) != 1 || !errors.As(c.Warnings[0], &u) || u.MinP != 0.1 || u.Alpha != DefaultAlpha {
		t.Errorf("3+3: %+v, want unjudged, min p 0.1, delta 9, one Unjudged warning", c)
	}
	if got := c.Warnings[0].Error(); got != "n=3+3: the U test cannot reach p<0.05 (smallest p 0.100)" {
		t.Errorf("Unjudged reads %q", got)
	}
	if !slices.Equal(base, []float64{3, 1, 2}) || !slices.Equal(head, []float64{12, 10, 11}) {
		t.Errorf("Compare reordered its inputs: %v, %v", base, head)
	}

	c = Compare([]float64{1, 2, 3, 4}, []float64{10, 11, 12, 13}, 0)
	if !c.Significant || c.Unjudged || c.Alpha != DefaultAlpha || c.P >= DefaultAlpha || c.Warnings != nil {
		t.Errorf("4+4: %+v, want significant at the default alpha, no warnings", c)
	}

	c = Compare([]float64{1000, 1004, 1002}, []float64{1003, 1005, 1004}, DefaultAlpha)
	if !c.Noise {
		t.Errorf("a change of 2 within a spread of 4, 0.2 %% of 1002: %+v, want noise", c)
	}
	if c = Compare([]float64{1000}, []float64{1002}, DefaultAlpha); c.Noise {
		t.Errorf("one value a side claims noise it has not shown: %+v", c)
	}
}

// TestWithinNoise: zero is noise; otherwise a change must be both within
// the spread and under NoiseFraction of the reference.
func TestWithinNoise(t *testing.T) {
	for _, c := range []struct {
		delta, ref, spread float64
		want               bool
	}{
		{0, 100, 0, true},
		{0.5, 100, 1, true},
		{-0.5, 100, 1, true},
		{0.5, 100, 0.4, false}, // past the spread
		{2, 100, 10, false},    // past 1 %
		{1, 100, 10, false},    // 1 % is not under 1 %
	} {
		if got := WithinNoise(c.delta, c.ref, c.spread); got != c.want {
			t.Errorf("WithinNoise(%v, %v, %v) = %v, want %v", c.delta, c.ref, c.spread, got, c.want)
		}
	}
}

// TestApart: every head value past every base value, in the direction
// asked; overlap, touching ranges and a single value a side establish
// nothing.
func TestApart(t *testing.T) {
	for _, c := range []struct {
		base, head []float64
		dir, want  float64
	}{
		{[]float64{1, 2, 3}, []float64{5, 4, 6}, 1, 1},
		{[]float64{1, 2, 3}, []float64{5, 4, 6}, -1, -5},
		{[]float64{5, 4, 6}, []float64{1, 2, 3}, -1, 1},
		{[]float64{1, 2, 3}, []float64{3, 4, 5}, 1, 0},
		{[]float64{1, 2, 4}, []float64{3, 5, 6}, 1, -1},
		{[]float64{1}, []float64{9}, 1, 0},
		{nil, []float64{9, 10}, 1, 0},
	} {
		if got := Apart(c.base, c.head, c.dir); got != c.want {
			t.Errorf("Apart(%v, %v, %v) = %v, want %v", c.base, c.head, c.dir, got, c.want)
		}
	}
}

// TestEstablished: at 3+3 only ranges apart by more than their spread
// establish a change; at 5+5 the U test's verdict. Of 1000 pairs drawn
// from one normal distribution at 3+3, about 10 % are apart (2 of the 20
// orderings) but under 1 % by more than their spread.
func TestEstablished(t *testing.T) {
	if c := Compare([]float64{10, 11, 12}, []float64{14.5, 15, 16}, 0); !c.Unjudged || !c.Established {
		t.Errorf("3+3 apart: %+v, want unjudged and established", c)
	}
	if c := Compare([]float64{10, 11, 12}, []float64{12.5, 13, 14}, 0); c.Established {
		t.Errorf("3+3 apart by less than their spread: %+v, want not established", c)
	}
	if c := Compare([]float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10}, 0); c.Unjudged || !c.Established {
		t.Errorf("5+5 apart: %+v, want judged and established", c)
	}
	if c := Compare([]float64{1, 2, 3, 6, 7}, []float64{4, 5, 8, 9, 10}, 0); c.Established {
		t.Errorf("5+5 mixed (p %.3f): established", c.P)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	n := 0
	for range 1000 {
		a, b := make([]float64, 3), make([]float64, 3)
		for i := range a {
			a[i], b[i] = 100+rng.NormFloat64(), 100+rng.NormFloat64()
		}
		if Compare(a, b, 0).Established {
			n++
		}
	}
	if n > 20 {
		t.Errorf("3+3 of one distribution: %d in 1000 established, want under 2 %%", n)
	}
}

// TestRepetitions: a change small against the spread needs more
// repetitions; one far past it, or values with no spread, the fewest the
// U test can decide with.
func TestRepetitions(t *testing.T) {
	base, head := []float64{100, 102, 104}, []float64{101, 103, 105}
	small, large := Repetitions(base, head, 1, 0), Repetitions(base, head, 20, 0)
	if small <= large || large != MinRepetitions {
		t.Errorf("Repetitions: a change of 1 needs %d, of 20 %d; want more for 1, %d for 20", small, large, MinRepetitions)
	}
	// σ = 2, δ = 1: 2·(1.96+0.84)²·4/1/(3/π) ≈ 65.7.
	if small < 60 || small > 70 {
		t.Errorf("Repetitions(σ 2, δ 1) = %d, want about 66", small)
	}
	if got := Repetitions([]float64{5, 5, 5}, []float64{6, 6, 6}, 1, 0); got != MinRepetitions {
		t.Errorf("Repetitions with no spread = %d, want %d", got, MinRepetitions)
	}
}
