package runner

import (
	"fmt"
	"math"
	"slices"

	"golang.org/x/perf/benchmath"

	"memprobe/schema"
)

// Confidence is the level of the median's confidence interval, as
// benchstat reports it.
const Confidence = 0.95

// spreadWarn is the spread (max − min) / median above which a metric gets
// a warning: the machine was busy, or the repetitions differ.
const spreadWarn = 0.25

// metric is one summarised field: its name (the JSON field, unit in the
// name) and how to read it from a repetition.
type metric struct {
	name string
	// result reads a Result field; outside an Outside one (the parent's).
	result  func(*schema.Result) float64
	outside func(*schema.Outside) float64
}

// metrics are the fields Summary.Metrics holds, in this order.
// max_rss_bytes is the parent's: wait4's rusage of the child.
var metrics = []metric{
	{name: "peak_rss_bytes", result: func(r *schema.Result) float64 { return float64(r.PeakRSSBytes) }},
	{name: "max_rss_bytes", outside: func(o *schema.Outside) float64 { return float64(o.MaxRSSBytes) }},
	{name: "final_vsz_bytes", result: func(r *schema.Result) float64 { return float64(r.FinalVSZBytes) }},
	{name: "go_heap_allocs_per_step", result: func(r *schema.Result) float64 { return r.HeapAllocsPerStep }},
	{name: "go_heap_alloc_bytes_per_step", result: func(r *schema.Result) float64 { return r.HeapAllocBytesPerStep }},
	{name: "tokens_per_sec", result: func(r *schema.Result) float64 { return r.TokensPerSec }},
	{name: "step_ns_median", result: func(r *schema.Result) float64 { return float64(r.StepNsMedian) }},
}

// MetricNames lists the names of Summary.Metrics, in order.
func MetricNames() []string {
	var out []string
	for _, m := range metrics {
		out = append(out, m.name)
	}
	return out
}

// Summarize fills run.Summary from its repetitions: for each metric the
// values of the completed repetitions, their median and its confidence
// interval (benchmath.AssumeNothing: distribution-free, from order
// statistics), min and max, and the warnings benchstat would give.
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
	for _, m := range metrics {
		var vals []float64
		switch {
		case m.result != nil:
			for i := range run.Repetitions {
				if r := &run.Repetitions[i]; r.Measures(m.name) {
					vals = append(vals, m.result(r))
				}
			}
		default:
			for _, o := range okOutside {
				vals = append(vals, m.outside(o))
			}
		}
		if len(vals) == 0 {
			continue // no repetition measures it (a process result's training figures)
		}
		mt := summarizeValues(m.name, vals)
		if mt.N > 1 && mt.Median != 0 && (mt.Max-mt.Min)/math.Abs(mt.Median) > spreadWarn {
			wide = append(wide, fmt.Sprintf("%s spreads %.0f %% of its median (min %.4g, max %.4g)", m.name, 100*(mt.Max-mt.Min)/math.Abs(mt.Median), mt.Min, mt.Max))
		}
		s.Metrics = append(s.Metrics, mt)
	}
	if !exactCI(s.Completed) {
		s.Warnings = append(s.Warnings, fmt.Sprintf("%d repetitions: the interval is [min, max] (a %.0f %% interval of the median needs %d)",
			s.Completed, 100*Confidence, minForCI()))
	}
	s.Warnings = append(s.Warnings, wide...)
	run.Summary = s
}

// summarizeValues is one Metric over vals. An interval benchmath leaves
// infinite (too few values) is clamped to [min, max] so that the JSON
// holds numbers; Summarize warns.
func summarizeValues(name string, vals []float64) schema.Metric {
	m := schema.Metric{Name: name, Values: []float64{}}
	if len(vals) == 0 {
		return m
	}
	m.Values = append(m.Values, vals...)
	m.N = len(vals)
	m.Min, m.Max = slices.Min(vals), slices.Max(vals)
	sm := benchmath.AssumeNothing.Summary(benchmath.NewSample(vals, &benchmath.DefaultThresholds), Confidence)
	m.Median, m.Confidence = sm.Center, sm.Confidence
	m.CILow, m.CIHigh = sm.Lo, sm.Hi
	if math.IsInf(m.CILow, 0) || math.IsNaN(m.CILow) {
		m.CILow = m.Min
	}
	if math.IsInf(m.CIHigh, 0) || math.IsNaN(m.CIHigh) {
		m.CIHigh = m.Max
	}
	return m
}

// exactCI reports whether n values give a finite interval at Confidence.
func exactCI(n int) bool { return n >= minForCI() }

// minForCI is the fewest values with a finite interval of the median at
// Confidence (6 at 95 %).
func minForCI() int {
	for n := 2; n <= 50; n++ {
		vals := make([]float64, n)
		for i := range vals {
			vals[i] = float64(i)
		}
		sm := benchmath.AssumeNothing.Summary(benchmath.NewSample(vals, &benchmath.DefaultThresholds), Confidence)
		if !math.IsInf(sm.Lo, 0) && !math.IsInf(sm.Hi, 0) {
			return n
		}
	}
	return 51
}
