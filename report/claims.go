package report

import (
	"fmt"
	"math"
	"strconv"

	"memprobe/internal/table"
	"memprobe/metric"
	"memprobe/schema"
	"memprobe/stats"
)

// Verdicts: whether a measurement agrees with a note's claim.
const (
	AgreeYes       = "yes"            // the direction, and the magnitude within a factor of 2
	AgreeDirection = "direction only" // the direction, not the magnitude
	AgreeNo        = "no"             // the other direction (or no change the runs establish, or an absolute value off by more than 2x)
	AgreeUnchecked = "—"              // no checkable claim, or nothing to check it with
)

// Tolerance is the factor within which a measured magnitude agrees with a
// claimed one.
const Tolerance = 2.0

// check is one expectation judged against a run.
type check struct {
	e       schema.Expectation
	verdict string
	// measured is the measured counterpart of the claim: the change, the
	// ratio or the value (meaningful when verdict is not AgreeUnchecked).
	measured float64
	// ref names what the run was compared with ("P4 (previous)"); why
	// says why the claim could not be checked.
	ref, why string
	// noise says the change is no measurable change (stats.WithinNoise: no
	// larger than the repetitions' spread and under 1 % of the
	// reference), which refutes a claimed change.
	noise bool
	// unsettled, when set, says why the runs do not establish the change
	// (stats.Comparison.Established: the U test where it can decide, else
	// ranges apart by more than their spread): no measurable change
	// either, which confirms a claim neither in size nor in direction.
	unsettled string
}

// judge checks e against run v of group g: the medians of the metric in v
// and in the reference phase.
func judge(g *group, v *runView, e schema.Expectation) check {
	c := check{e: e, verdict: AgreeUnchecked}
	if !v.ok() {
		c.why = fmt.Sprintf("%s %s", v.label(), v.Status)
		return c
	}
	cur := v.metric(e.Metric)
	if !cur.exists {
		c.why = fmt.Sprintf("no %s in %s's results", e.Metric, v.label())
		return c
	}
	if e.Versus == "absolute" {
		c.measured = cur.median
		c.verdict = AgreeNo
		if within(cur.median, e.Delta) {
			c.verdict = AgreeYes
		}
		return c
	}
	var ref *runView
	switch e.Versus {
	case "previous":
		ref = g.phase(v.index - 1)
		c.ref = "previous phase"
		if v.index > 0 {
			c.ref = fmt.Sprintf("P%d", v.index-1)
			if v.index == 1 {
				c.ref = "before"
			}
		}
	case "before":
		ref = g.phase(0)
		c.ref = "before"
	default:
		c.why = fmt.Sprintf("versus %q is not previous, before or absolute", e.Versus)
		return c
	}
	if ref != nil && ref.PhaseIndex != nil {
		c.ref = ref.label() // a plan file's phase, by its own name
	}
	switch {
	case ref == nil:
		c.why = c.ref + " is not in the report"
		return c
	case !ref.ok():
		c.why = fmt.Sprintf("%s %s", c.ref, ref.Status)
		return c
	}
	old := ref.metric(e.Metric)
	if !old.exists {
		c.why = fmt.Sprintf("no %s in %s's results", e.Metric, c.ref)
		return c
	}
	// A change within the noise floor is no change: -256 KiB of 4.53 GiB
	// does not agree, even in direction, with a claimed -455 MB. Nor is
	// one the runs do not establish: -72 KiB of 1.2 MiB with ranges that
	// overlap, as a plan of one program run in every phase gives.
	c.noise = stats.WithinNoise(cur.median-old.median, old.median, max(cur.max-cur.min, old.max-old.min))
	if !c.noise {
		c.unsettled = unsettled(e.Metric, old.values, cur.values)
	}
	switch {
	case e.Ratio != 0:
		if old.median == 0 {
			c.why = fmt.Sprintf("%s of %s is 0: no ratio", metricLabel(e.Metric), c.ref)
			return c
		}
		r := cur.median / old.median
		c.measured = r
		switch {
		case c.noise || c.unsettled != "" || (r > 1) != (e.Ratio > 1):
			c.verdict = AgreeNo
		case within(r, e.Ratio):
			c.verdict = AgreeYes
		default:
			c.verdict = AgreeDirection
		}
	default:
		d := cur.median - old.median
		c.measured = d
		switch {
		case c.noise || c.unsettled != "" || (d > 0) != (e.Delta > 0):
			c.verdict = AgreeNo
		case within(math.Abs(d), math.Abs(e.Delta)):
			c.verdict = AgreeYes
		default:
			c.verdict = AgreeDirection
		}
	}
	return c
}

// unsettled says why the runs do not establish a change of metric m from
// ref's values to cur's (stats.Compare's Established), "" where they do.
func unsettled(m string, ref, cur []float64) string {
	cmp := stats.Compare(ref, cur, 0)
	switch {
	case cmp.Established:
		return ""
	case !cmp.Unjudged:
		return fmt.Sprintf("p %.3f, not below %g", cmp.P, cmp.Alpha)
	case len(ref) < stats.MinApart || len(cur) < stats.MinApart:
		return fmt.Sprintf("%d+%d repetitions measure no spread", len(ref), len(cur))
	}
	gap := stats.Apart(ref, cur, cmp.Delta)
	if gap <= 0 {
		return fmt.Sprintf("at %d+%d the repetitions' ranges overlap", len(ref), len(cur))
	}
	return fmt.Sprintf("at %d+%d the ranges are %s apart, within their spread of %s", len(ref), len(cur),
		formatMetric(m, gap, false), formatMetric(m, max(stats.Spread(ref), stats.Spread(cur)), false))
}

// within says whether x is within a factor Tolerance of claimed (both
// positive).
func within(x, claimed float64) bool {
	return x > 0 && claimed > 0 && x >= claimed/Tolerance && x <= claimed*Tolerance
}

// combine is one verdict for a run's checks: no if any is no, direction
// only if any is, yes if every checked one agrees, unchecked when none was
// checked.
func combine(cs []check) string {
	out := AgreeUnchecked
	for _, c := range cs {
		switch {
		case c.verdict == AgreeNo:
			return AgreeNo
		case c.verdict == AgreeDirection:
			out = AgreeDirection
		case c.verdict == AgreeYes && out == AgreeUnchecked:
			out = AgreeYes
		}
	}
	return out
}

// footnote says what a check measured against what the note claimed, or
// why it could not be checked; "" for a check that agrees.
func (c check) footnote(run string) string {
	label := metricLabel(c.e.Metric)
	claimed := c.e.Delta
	switch c.verdict {
	case AgreeYes:
		return ""
	case AgreeUnchecked:
		return fmt.Sprintf("%s: %s not checked: %s", run, label, c.why)
	}
	switch {
	case c.e.Versus == "absolute":
		return fmt.Sprintf("%s, %s: %s %s; the note claims %s",
			run, c.verdict, label, formatMetric(c.e.Metric, c.measured, false), formatClaim(c.e.Metric, claimed, false))
	case c.e.Ratio != 0 && c.unsettled != "":
		return fmt.Sprintf("%s, %s: %s %s of %s, no measurable change (the runs do not establish it: %s); the note claims %s",
			run, c.verdict, label, formatRatio(c.measured), c.ref, c.unsettled, formatRatio(c.e.Ratio))
	case c.e.Ratio != 0:
		return fmt.Sprintf("%s, %s: %s %s of %s; the note claims %s",
			run, c.verdict, label, formatRatio(c.measured), c.ref, formatRatio(c.e.Ratio))
	case c.unsettled != "":
		return fmt.Sprintf("%s, %s: %s changed by %s from %s, no measurable change (the runs do not establish it: %s); the note claims %s",
			run, c.verdict, label, formatMetric(c.e.Metric, c.measured, true), c.ref, c.unsettled, formatClaim(c.e.Metric, claimed, true))
	}
	if c.noise {
		return fmt.Sprintf("%s, %s: %s changed by %s from %s, no measurable change (within the repetitions' spread and under 1 %%); the note claims %s",
			run, c.verdict, label, formatMetric(c.e.Metric, c.measured, true), c.ref, formatClaim(c.e.Metric, claimed, true))
	}
	return fmt.Sprintf("%s, %s: %s changed by %s from %s; the note claims %s",
		run, c.verdict, label, formatMetric(c.e.Metric, c.measured, true), c.ref, formatClaim(c.e.Metric, claimed, true))
}

// isBytes says whether a metric counts bytes (its name says so).
func isBytes(name string) bool {
	u := unitOf(name)
	return u == metric.Bytes || u == metric.BytesPerStep
}

// unitOf is a metric's registered unit (metric.Def.Unit); "" for a name
// the registry does not have.
func unitOf(name string) string {
	d, err := metric.Lookup(name)
	if err != nil {
		return ""
	}
	return d.Unit
}

// formatClaim is formatMetric, and for bytes also the figure in the notes'
// decimal units: "-433.9 MiB (-455 MB)".
func formatClaim(name string, x float64, signed bool) string {
	s := formatMetric(name, x, signed)
	if !isBytes(name) {
		return s
	}
	unit, div := "kB", 1e3
	switch a := math.Abs(x); {
	case a >= 1e9:
		unit, div = "GB", 1e9
	case a >= 1e6:
		unit, div = "MB", 1e6
	}
	d := strconv.FormatFloat(x/div, 'g', 3, 64) + " " + unit
	if signed && x > 0 {
		d = "+" + d
	}
	return s + " (" + d + ")"
}

// formatMetric writes a value in its metric's unit (the unit is in the
// name): bytes in IEC units, nanoseconds as a duration, else a number;
// signed puts "+" before a positive change.
func formatMetric(name string, x float64, signed bool) string {
	var s string
	switch {
	case isBytes(name):
		s = table.FormatBytes(math.Round(x))
	case unitOf(name) == metric.Nanoseconds || unitOf(name) == metric.NsPerToken:
		s = table.FormatDuration(math.Abs(x))
		if x < 0 {
			s = "-" + s
		}
	default:
		s = formatNumber(x)
	}
	if signed && x > 0 {
		s = "+" + s
	}
	return s
}

// formatNumber writes x with three significant digits, or whole from 100
// on.
func formatNumber(x float64) string {
	if math.Abs(x) >= 100 {
		return strconv.FormatFloat(math.Round(x), 'f', 0, 64)
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}

// formatRatio writes a factor: "63x", "1.28x", "0.0317x".
func formatRatio(r float64) string { return formatNumber(r) + "x" }
