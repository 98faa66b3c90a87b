package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
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

// Breached says whether r's change passes t (its direction and size only;
// Diff.Breaches also asks for significance). A percent limit against a
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
