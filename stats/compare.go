package stats

import (
	"fmt"
	"math"
	"slices"

	"golang.org/x/perf/benchmath"
)

// DefaultAlpha is the significance level of the U test, as benchstat's.
const DefaultAlpha = 0.05

// MinRepetitions is the fewest values on each side with which the U test
// can find a change at DefaultAlpha (4+4 gives p ≥ 0.029; 3+3 only
// p ≥ 0.100, see MinP).
const MinRepetitions = 4

// NoiseFraction is the part of a value below which a change no larger
// than the values' spread is no measurable change (WithinNoise).
const NoiseFraction = 0.01

// Comparison is two sets of values (one metric of a configuration, base
// and head) compared as benchstat does.
type Comparison struct {
	// N1 and N2 are the sizes of base and head.
	N1, N2 int
	// Delta is head's median − base's.
	Delta float64
	// P is the Mann-Whitney U test's two-sided p-value: 1 where it cannot
	// run (an empty side, or every value equal: nothing to find); Alpha
	// the level.
	P, Alpha float64
	// Significant says the change is real: P < Alpha and Delta ≠ 0.
	Significant bool
	// MinP is MinP(N1, N2); Unjudged says it is not below Alpha: no data
	// could make a change significant at these sizes, so only ranges
	// apart (Apart) establish a change.
	MinP     float64
	Unjudged bool
	// Noise says Delta is no measurable change: WithinNoise of base's
	// median, the spread the larger of the two sides' ranges.
	Noise bool
	// Established says the runs establish a change of Delta's sign: where
	// the U test can decide, Significant; where it cannot (Unjudged),
	// every head value past every base value by more than the larger
	// side's spread (Apart): with no limit given, a change must pass the
	// noise the runs measured.
	Established bool
	// Warnings are caveats beside the result (an *Unjudged); nil when
	// there are none.
	Warnings []error
}

// Compare compares head against base (neither modified) at level alpha
// (0 means DefaultAlpha): the U test (benchmath.AssumeNothing), the
// smallest p it can give at these sizes, and the noise floor.
func Compare(base, head []float64, alpha float64) Comparison {
	if alpha == 0 {
		alpha = DefaultAlpha
	}
	ref := Median(base)
	c := Comparison{N1: len(base), N2: len(head), Alpha: alpha, Delta: Median(head) - ref}
	th := benchmath.DefaultThresholds
	th.CompareAlpha = alpha
	// benchmath sorts the slices it is given: give it copies.
	cmp := benchmath.AssumeNothing.Compare(benchmath.NewSample(slices.Clone(base), &th), benchmath.NewSample(slices.Clone(head), &th))
	// benchmath's own warning ("need >= 4 samples") is Unjudged's, for
	// equal sizes only; MinP answers for any.
	c.P = cmp.P
	c.Significant = c.P < alpha && c.Delta != 0
	c.MinP = MinP(len(base), len(head))
	c.Unjudged = c.MinP >= alpha
	c.Noise = WithinNoise(c.Delta, ref, max(Spread(base), Spread(head)))
	c.Established = c.Significant
	if c.Unjudged && c.Delta != 0 {
		c.Established = Apart(base, head, c.Delta) > max(Spread(base), Spread(head))
	}
	if c.Unjudged {
		c.Warnings = append(c.Warnings, &Unjudged{N1: c.N1, N2: c.N2, Alpha: alpha, MinP: c.MinP})
	}
	return c
}

// MinP is the smallest two-sided p-value the Mann-Whitney U test can give
// with n and m values a side, 2/C(n+m, n) (at most 1): all of one side
// below all of the other. Where it is not below alpha no data can make a
// change significant: the test cannot decide at those sizes.
func MinP(n, m int) float64 {
	if n < 1 || m < 1 {
		return 1
	}
	// C(n+m, n) as a product, in floating point: exact enough far past
	// any count of repetitions, and no overflow.
	c := 1.0
	for i := 1; i <= min(n, m); i++ {
		c = c * float64(max(n, m)+i) / float64(i)
	}
	return min(1, 2/c)
}

// WithinNoise says whether a change delta of a value ref is no measurable
// change: zero, or no larger than spread (the range of one build's
// values) and smaller than NoiseFraction of ref. Both bounds, so that a
// single value a side (spread 0) claims no noise it has not shown, and a
// wide spread does not hide a change of more than 1 %.
func WithinNoise(delta, ref, spread float64) bool {
	d := math.Abs(delta)
	return d == 0 || (d <= spread && d < NoiseFraction*math.Abs(ref))
}

// Unjudged warns that at N1+N2 values the U test cannot reach p < Alpha
// (its smallest p is MinP): a change is the medians', not judged.
type Unjudged struct {
	N1, N2      int
	Alpha, MinP float64
}

func (w *Unjudged) Error() string {
	return fmt.Sprintf("n=%d+%d: the U test cannot reach p<%g (smallest p %.3f)", w.N1, w.N2, w.Alpha, w.MinP)
}

// MinApart is the fewest values a side with which ranges apart establish
// a change where the U test cannot decide: one value a side has no
// measured spread, and two single runs differ by their noise.
const MinApart = 2

// Apart is how far every value of head lies past every value of base in
// dir's direction (dir > 0: above, else below): min(head) − max(base), or
// min(base) − max(head). It is ≤ 0 where the ranges touch or overlap, and
// 0 where a side has fewer than MinApart values. It is the rule of asv's
// continuous for sizes at which the U test cannot decide (MinP not below
// alpha): a change is established only where the two builds' results do
// not overlap, and a limit is passed only where they are apart by more
// than the limit.
func Apart(base, head []float64, dir float64) float64 {
	if len(base) < MinApart || len(head) < MinApart {
		return 0
	}
	if dir > 0 {
		return slices.Min(head) - slices.Max(base)
	}
	return slices.Min(base) - slices.Max(head)
}

// Repetitions estimates the repetitions a side at which the U test would
// establish a change of delta between base and head, given their spread:
// the normal approximation n = 2 (z(1−alpha/2) + z(0.8))² σ² / δ² for
// power 0.8, σ the pooled standard deviation, divided by the U test's
// efficiency against the t test (3/π); never fewer than MinRepetitions
// (0 alpha means DefaultAlpha). A rough guide for the next run, not a
// promise: σ from 3 values is itself uncertain.
func Repetitions(base, head []float64, delta, alpha float64) int {
	if alpha == 0 {
		alpha = DefaultAlpha
	}
	sd := pooledSD(base, head)
	if delta == 0 || sd == 0 {
		return MinRepetitions
	}
	z := math.Sqrt2*math.Erfinv(1-alpha) + 0.8416
	n := 2 * z * z * sd * sd / (delta * delta) / (3 / math.Pi)
	if n > 1e6 {
		return 1e6
	}
	return max(MinRepetitions, int(math.Ceil(n)))
}

// pooledSD is the standard deviation of base and head, each about its
// own mean; 0 with fewer than three values in all.
func pooledSD(a, b []float64) float64 {
	ss, df := 0.0, 0
	for _, v := range [][]float64{a, b} {
		if len(v) < 2 {
			continue
		}
		m := 0.0
		for _, x := range v {
			m += x
		}
		m /= float64(len(v))
		for _, x := range v {
			ss += (x - m) * (x - m)
		}
		df += len(v) - 1
	}
	if df == 0 {
		return 0
	}
	return math.Sqrt(ss / float64(df))
}
