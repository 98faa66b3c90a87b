// Package stats is memprobe's statistics, in one place, over
// golang.org/x/perf/benchmath (benchstat's, distribution-free):
//
//  1. Median and Summarize condense one configuration's repetitions: the
//     median and its confidence interval from order statistics, clamped
//     to [min, max] where benchmath's is infinite (too few values);
//  2. Compare compares two configurations' repetitions: the Mann-Whitney
//     U test, the smallest p it can give at the sizes given (MinP: where
//     that is not below alpha, the change is unjudged), and the noise
//     floor (WithinNoise);
//  3. a change is established by the U test where it can decide, else
//     only by ranges apart (Apart, as asv's continuous asks); Repetitions
//     estimates how many a side would decide one that is not.
//
// Caveats travel beside results as Warnings, as benchmath's do, typed
// (ClampedInterval, WideSpread, Unjudged) so that the packages printing
// them (run/runner, report) word them. No other package of the module
// computes a median (TestOneMedian).
package stats

import (
	"fmt"
	"math"
	"slices"

	"golang.org/x/perf/benchmath"
)

// Confidence is the level of the median's confidence interval, as
// benchstat reports it.
const Confidence = 0.95

// SpreadWarn is the spread (max − min) / |median| above which a summary
// warns (WideSpread): the machine was busy, or the repetitions differ.
const SpreadWarn = 0.25

// Median is the median of vals, the mean of the middle two for an even
// count, as benchmath computes it (its AssumeNothing summary's center);
// 0 for none. vals is not modified.
func Median(vals []float64) float64 {
	if len(vals) == 0 {
		return 0
	}
	return summary(vals).Center
}

// summary is benchmath's distribution-free summary of a sorted copy of
// vals (len(vals) > 0) at Confidence: benchmath sorts the slice it is
// given.
func summary(vals []float64) benchmath.Summary {
	return benchmath.AssumeNothing.Summary(benchmath.NewSample(slices.Clone(vals), &benchmath.DefaultThresholds), Confidence)
}

// Summary condenses a set of values (one metric over a configuration's
// repetitions).
type Summary struct {
	// N is the number of values; the other figures are 0 when it is 0.
	N int
	// Median is Median(values); Lo and Hi bound it at Confidence (a
	// distribution-free interval from order statistics), clamped to
	// [Min, Max] where benchmath leaves them infinite (fewer than
	// MinForCI values), so that JSON holds numbers.
	Median, Lo, Hi float64
	Min, Max       float64
	// Confidence is the interval's actual level (≥ the level asked).
	Confidence float64
	// Warnings are caveats about the figures, not failures: a
	// *ClampedInterval, a *WideSpread; nil when there are none.
	Warnings []error
}

// Summarize summarises vals (not modified) as benchstat does, the
// interval clamped to [min, max] where it would be infinite.
func Summarize(vals []float64) Summary {
	if len(vals) == 0 {
		return Summary{}
	}
	sm := summary(vals)
	s := Summary{N: len(vals), Median: sm.Center, Lo: sm.Lo, Hi: sm.Hi,
		Min: slices.Min(vals), Max: slices.Max(vals), Confidence: sm.Confidence}
	clamped := false
	if math.IsInf(s.Lo, 0) || math.IsNaN(s.Lo) {
		s.Lo, clamped = s.Min, true
	}
	if math.IsInf(s.Hi, 0) || math.IsNaN(s.Hi) {
		s.Hi, clamped = s.Max, true
	}
	if clamped {
		s.Warnings = append(s.Warnings, &ClampedInterval{N: s.N, Need: MinForCI(Confidence), Confidence: Confidence})
	}
	if s.N > 1 && s.Median != 0 && (s.Max-s.Min)/math.Abs(s.Median) > SpreadWarn {
		s.Warnings = append(s.Warnings, &WideSpread{Min: s.Min, Max: s.Max, Median: s.Median})
	}
	return s
}

// Spread is the range of vals (max − min), 0 for fewer than two.
func Spread(vals []float64) float64 {
	if len(vals) < 2 {
		return 0
	}
	return slices.Max(vals) - slices.Min(vals)
}

// MinForCI is the fewest values with a finite interval of the median at
// confidence (6 at 95 %); 51 when 50 are not enough.
func MinForCI(confidence float64) int {
	for n := 2; n <= 50; n++ {
		vals := make([]float64, n)
		for i := range vals {
			vals[i] = float64(i)
		}
		sm := benchmath.AssumeNothing.Summary(benchmath.NewSample(vals, &benchmath.DefaultThresholds), confidence)
		if !math.IsInf(sm.Lo, 0) && !math.IsInf(sm.Hi, 0) {
			return n
		}
	}
	return 51
}

// ClampedInterval warns that N values are too few for a finite interval
// of the median at Confidence (Need are): the interval given is
// [min, max], narrower than the level claims.
type ClampedInterval struct {
	N, Need    int
	Confidence float64
}

func (w *ClampedInterval) Error() string {
	return fmt.Sprintf("%d values: the interval is [min, max] (a %.0f %% interval of the median needs %d)", w.N, 100*w.Confidence, w.Need)
}

// WideSpread warns that the values spread more than SpreadWarn of their
// median.
type WideSpread struct {
	Min, Max, Median float64
}

// Percent is the spread in percent of the median.
func (w *WideSpread) Percent() float64 { return 100 * (w.Max - w.Min) / math.Abs(w.Median) }

func (w *WideSpread) Error() string {
	return fmt.Sprintf("spreads %.0f %% of its median (min %.4g, max %.4g)", w.Percent(), w.Min, w.Max)
}
