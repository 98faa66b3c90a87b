package runner

import (
	"errors"
	"fmt"

	"memprobe/metric"
	"memprobe/schema"
	"memprobe/stats"
)

// Confidence is the level of the median's confidence interval, as
// benchstat reports it.
const Confidence = stats.Confidence

// summaryMetrics are the metrics Summary.Metrics holds, in this order,
// read through the registry. max_rss_bytes is the parent's: wait4's
// rusage of the child.
var summaryMetrics = func() []metric.Def {
	var out []metric.Def
	for _, name := range []string{
		"peak_rss_bytes", "max_rss_bytes", "final_vsz_bytes", "go_heap_allocs_per_step",
		"go_heap_alloc_bytes_per_step", "tokens_per_sec", "step_ns_median",
	} {
		d, err := metric.Lookup(name)
		if err != nil {
			panic(err)
		}
		out = append(out, d)
	}
	return out
}()

// MetricNames lists the names of Summary.Metrics, in order.
func MetricNames() []string {
	var out []string
	for _, m := range summaryMetrics {
		out = append(out, m.Name)
	}
	return out
}

// Summarize fills run.Summary from its repetitions: for each metric the
// values of the completed repetitions, their median and its confidence
// interval, min and max (stats.Summarize), and the warnings, worded here.
// count is the number of repetitions asked for.
func Summarize(run *schema.Run, count int) {
	s := schema.Summary{Repetitions: count, Completed: len(run.Repetitions), Metrics: []schema.Metric{}, Warnings: []string{}}
	var okOutside []*schema.Outside
	for i := range run.Outside {
		if run.Outside[i].Status == schema.StatusOK {
			okOutside = append(okOutside, &run.Outside[i])
		}
	}
	if s.Completed == 0 {
		run.Summary = s
		return
	}
	if s.Completed < count {
		s.Warnings = append(s.Warnings, fmt.Sprintf("%d of %d repetitions completed", s.Completed, count))
	}
	var wide []string
	for _, m := range summaryMetrics {
		var vals []float64
		switch {
		case m.Run != nil:
			for i := range run.Repetitions {
				if r := &run.Repetitions[i]; r.Measures(m.Name) {
					if x, ok := m.Run(r); ok {
						vals = append(vals, x)
					}
				}
			}
		default:
			for _, o := range okOutside {
				if x, ok := m.Outside(o); ok {
					vals = append(vals, x)
				}
			}
		}
		if len(vals) == 0 {
			continue // no repetition measures it (a process result's training figures)
		}
		mt, sum := summarizeValues(m.Name, vals)
		for _, w := range sum.Warnings {
			if ws := (*stats.WideSpread)(nil); errors.As(w, &ws) {
				wide = append(wide, m.Name+" "+ws.Error())
			}
		}
		s.Metrics = append(s.Metrics, mt)
	}
	if need := stats.MinForCI(Confidence); s.Completed < need {
		// Once for the run, by the repetitions that completed (a metric
		// of the parent's may have fewer values: its own interval is
		// clamped too).
		s.Warnings = append(s.Warnings, fmt.Sprintf("%d repetitions: the interval is [min, max] (a %.0f %% interval of the median needs %d)",
			s.Completed, 100*Confidence, need))
	}
	s.Warnings = append(s.Warnings, wide...)
	run.Summary = s
}

// summarizeValues is one Metric over vals, and the stats.Summary it
// copies (its warnings for Summarize to word).
func summarizeValues(name string, vals []float64) (schema.Metric, stats.Summary) {
	m := schema.Metric{Name: name, Values: []float64{}}
	if len(vals) == 0 {
		return m, stats.Summary{}
	}
	sm := stats.Summarize(vals)
	m.Values = append(m.Values, vals...)
	m.N = sm.N
	m.Min, m.Max = sm.Min, sm.Max
	m.Median, m.Confidence = sm.Median, sm.Confidence
	m.CILow, m.CIHigh = sm.Lo, sm.Hi
	return m, sm
}
