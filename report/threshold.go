package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"memprobe/stats"
)

// Threshold is one --fail-on limit: how far a metric may move in its bad
// direction before the diff fails.
type Threshold struct {
	Metric string
	// Increase says an increase is a regression ("+"); otherwise a
	// decrease is ("-").
	Increase bool
	// Limit is how much change is tolerated, ≥ 0: in percent of the
	// base's median when Percent, else in the metric's unit. "+0" fails
	// on any increase.
	Limit   float64
	Percent bool
}

// String writes t as ParseThresholds reads it.
func (t Threshold) String() string {
	sign := "-"
	if t.Increase {
		sign = "+"
	}
	s := t.Metric + ":" + sign + strconv.FormatFloat(t.Limit, 'g', -1, 64)
	if t.Percent {
		s += "%"
	}
	return s
}

// Breached says whether r's medians' change passes t (its direction and
// size only; Diff.Breaches also asks that the runs establish it,
// Established). A percent limit against a
// base of 0 is passed by any change in the bad direction.
func (t Threshold) Breached(r MetricDiff) bool {
	change := r.Delta
	if t.Percent {
		switch {
		case r.Pct != nil:
			change = *r.Pct
		case r.Delta != 0:
			change = math.Copysign(math.Inf(1), r.Delta)
		}
	}
	if !t.Increase {
		change = -change
	}
	return change > t.Limit
}

// Established says whether the runs establish r's change past t, given
// that its medians' change is (Breached): an exact metric's any change;
// where the U test can decide (not r.Undecided), its verdict
// (r.Significant); where it cannot, ranges apart by the limit (Apart).
func (t Threshold) Established(r MetricDiff) bool {
	if r.Exact || !r.Undecided {
		return r.Significant
	}
	return t.Apart(r)
}

// Apart says whether every head repetition of r is past every base
// repetition, in t's bad direction, by more than t's limit (asv's
// continuous: the results do not overlap), with at least stats.MinApart
// a side: the gap between the ranges (stats.Apart), in percent of the
// nearer base value when t.Percent (a nearer value of 0: any gap passes).
// The limit takes the place of the spread that establishes a change
// without one (stats.Comparison.Established): a gate's user has said what
// change matters.
func (t Threshold) Apart(r MetricDiff) bool {
	dir := -1.0
	if t.Increase {
		dir = 1
	}
	b, h := r.Base.Values, r.Head.Values
	gap := stats.Apart(b, h, dir)
	if gap <= 0 {
		return false
	}
	if !t.Percent {
		return gap > t.Limit
	}
	near := slices.Max(b)
	if !t.Increase {
		near = slices.Min(b)
	}
	if near == 0 {
		return true
	}
	return 100*gap/math.Abs(near) > t.Limit
}

// ParseThresholds reads a comma-separated list of thresholds,
// "METRIC:+LIMIT[%]" or "METRIC:-LIMIT[%]" ("peak_rss_bytes:+5%,
// go_heap_allocs_per_step:+0"). Spaces around entries are ignored; an
// empty list is none.
func ParseThresholds(s string) ([]Threshold, error) {
	var out []Threshold
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		name, lim, ok := strings.Cut(e, ":")
		name, lim = strings.TrimSpace(name), strings.TrimSpace(lim)
		if !ok || name == "" || lim == "" {
			return nil, fmt.Errorf("threshold %q: want METRIC:+LIMIT or METRIC:-LIMIT, LIMIT a number or a percentage", e)
		}
		if strings.ContainsAny(name, " \t:%") {
			return nil, fmt.Errorf("threshold %q: metric name %q has a space, colon or percent sign", e, name)
		}
		t := Threshold{Metric: name}
		switch lim[0] {
		case '+':
			t.Increase = true
		case '-':
		default:
			return nil, fmt.Errorf("threshold %q: the limit must start with + (an increase is a regression) or - (a decrease is)", e)
		}
		lim = lim[1:]
		if strings.HasSuffix(lim, "%") {
			t.Percent = true
			lim = strings.TrimSuffix(lim, "%")
		}
		x, err := strconv.ParseFloat(lim, 64)
		if err != nil || lim == "" || lim[0] == '+' || lim[0] == '-' || math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("threshold %q: limit %q is not a non-negative number", e, lim)
		}
		t.Limit = x
		out = append(out, t)
	}
	return out, nil
}
