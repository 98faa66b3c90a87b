package htmlreport

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"memprobe/internal/table"
	"memprobe/metric"
	"memprobe/report/memplot"
	"memprobe/schema"
)

// Chart is one gonum/plot chart, rendered as SVG to be inlined in the page.
// vgsvg escapes every string it draws, so a run's or a component's name
// from the report never becomes markup.
type Chart struct {
	Kind    string // timeline, ledger, reconcile, sweep, history
	Title   string
	Caption string
	SVG     template.HTML
}

// palette holds distinct colours for charts with many series: the 20
// named parts of the resident set each get their own (plotutil's default
// has seven). Tableau's 20 without its greys, and four of d3's category20b;
// the greys are the unexplained rest's and the small parts' (grey, other).
var palette = []color.NRGBA{
	{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0xd6, 0x27, 0x28, 0xff},
	{0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff}, {0xe3, 0x77, 0xc2, 0xff}, {0xbc, 0xbd, 0x22, 0xff},
	{0x17, 0xbe, 0xcf, 0xff}, {0xae, 0xc7, 0xe8, 0xff}, {0xff, 0xbb, 0x78, 0xff}, {0x98, 0xdf, 0x8a, 0xff},
	{0xff, 0x98, 0x96, 0xff}, {0xc5, 0xb0, 0xd5, 0xff}, {0xc4, 0x9c, 0x94, 0xff}, {0xf7, 0xb6, 0xd2, 0xff},
	{0xdb, 0xdb, 0x8d, 0xff}, {0x9e, 0xda, 0xe5, 0xff}, {0x39, 0x3b, 0x79, 0xff}, {0x8c, 0x6d, 0x31, 0xff},
	{0xe7, 0xba, 0x52, 0xff}, {0x84, 0x3c, 0x39, 0xff}, {0x63, 0x79, 0x39, 0xff}, {0x7b, 0x41, 0x73, 0xff},
}

var (
	grey      = color.NRGBA{0x55, 0x55, 0x55, 0xff}
	lightGrey = color.NRGBA{0xbd, 0xbd, 0xbd, 0xff}
)

func colour(i int) color.NRGBA { return palette[i%len(palette)] }

// newPlot is plot.New with the charts' font and round ticks on both axes:
// binary steps for bytes, 1-2-5 for other numbers.
func newPlot(xBytes, yBytes bool) *plot.Plot {
	p := plot.New()
	memplot.Style(p)
	tick := func(bytes bool) plot.Ticker {
		if bytes {
			return memplot.ByteTicks{}
		}
		return memplot.CountTicks{}
	}
	p.X.Tick.Marker, p.Y.Tick.Marker = tick(xBytes), tick(yBytes)
	return p
}

// renderSVG draws p as SVG of w × h, without the XML prolog (the page
// inlines it).
func renderSVG(p *plot.Plot, w, h vg.Length) (template.HTML, error) {
	c := vgsvg.New(w, h)
	p.Draw(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return "", err
	}
	s := b.String()
	i := strings.Index(s, "<svg")
	if i < 0 {
		return "", fmt.Errorf("vgsvg wrote no <svg> element")
	}
	// The SVG is gonum's drawing of our numbers and escaped labels.
	return template.HTML(s[i:]), nil
}

// timelineChart draws the RSS timelines of the plan's first and last phase
// (its main sweep point's, the representative repetition of each) on one
// chart; "" and a reason when none has a timeline.
func timelineChart(p *planRuns) (*Chart, string) {
	var series []memplot.Series
	var missing []string
	for _, r := range p.ends() {
		res := representative(r)
		switch {
		case res == nil:
			missing = append(missing, fmt.Sprintf("%s %s", label(r), r.Status))
		case res.Sampler == nil || len(res.Sampler.Timeline) == 0:
			missing = append(missing, label(r)+" has no sampler timeline")
		default:
			series = append(series, memplot.Series{Name: label(r), Points: res.Sampler.Timeline})
		}
	}
	if len(series) == 0 {
		return nil, "no RSS timeline: " + strings.Join(missing, ", ")
	}
	title := planTitle(p.name) + ": RSS over time"
	c, err := memplot.New(title, series, []string{"rss"})
	if err != nil {
		return nil, "no RSS timeline: " + err.Error()
	}
	svg, err := renderSVG(c.Plot, 8*vg.Inch, 4*vg.Inch)
	if err != nil {
		return nil, "no RSS timeline: " + err.Error()
	}
	// A plan file's phases are watched from outside (probe exec's
	// sampler, reading /proc/PID/status); the built-in plans' children
	// sample themselves.
	by := "the child itself"
	if p.outside() {
		by = "the probe from outside (/proc/PID/status)"
	}
	caption := "VmRSS sampled by " + by + " (instrument/sampler) for " + names(p.ends()) +
		", the repetition nearest the median peak; rings mark each peak."
	if len(missing) > 0 {
		caption += " Not drawn: " + strings.Join(missing, ", ") + "."
	}
	return &Chart{Kind: "timeline", Title: title, Caption: caption, SVG: svg}, ""
}

func planTitle(name string) string {
	if name == "" {
		return "runs outside a plan"
	}
	return "plan " + name
}

func names(runs []*schema.Run) string {
	var s []string
	for _, r := range runs {
		s = append(s, label(r))
	}
	return strings.Join(s, " and ")
}

// ledgerChart draws, for the plan's first and last phase, each ledger
// component's expected bytes (the analytical model, light) beside its
// measured bytes (the ledger, solid), as horizontal bars.
func ledgerChart(p *planRuns) (*Chart, string) {
	type state struct {
		name string
		rows map[string]schema.LedgerRow
	}
	var states []state
	var comps []string
	for _, r := range p.ends() {
		res := representative(r)
		if res == nil || len(res.Ledger) == 0 {
			continue
		}
		st := state{name: label(r), rows: map[string]schema.LedgerRow{}}
		for _, l := range res.Ledger {
			if !slices.Contains(comps, l.Component) {
				comps = append(comps, l.Component)
			}
			st.rows[l.Component] = l
		}
		states = append(states, st)
	}
	if len(states) == 0 {
		return nil, "no ledger chart: no finished phase with a ledger"
	}
	pl := newPlot(true, false)
	title := planTitle(p.name) + ": expected vs measured bytes by component"
	pl.Title.Text = title
	pl.X.Label.Text = "bytes"
	pl.X.Min = 0
	pl.Legend.Top = true
	pl.Add(plotter.NewGrid())
	// Components top to bottom in the ledger's order.
	order := slices.Clone(comps)
	slices.Reverse(order)
	bars := 2 * len(states)
	bw := vg.Points(5)
	top := 0.0
	for i, st := range states {
		for j, kind := range []string{"expected", "measured"} {
			vals := make(plotter.Values, len(order))
			for k, c := range order {
				l := st.rows[c]
				if j == 0 {
					vals[k] = float64(l.ExpectedBytes)
				} else {
					vals[k] = float64(l.MeasuredBytes)
				}
			}
			top = max(top, slices.Max(vals))
			b, err := plotter.NewBarChart(vals, bw)
			if err != nil {
				return nil, "no ledger chart: " + err.Error()
			}
			b.Horizontal = true
			col := colour(i)
			if j == 0 {
				col.A = 0x70
			}
			b.Color, b.LineStyle.Width = col, 0
			b.Offset = vg.Length(float64(2*i+j)-float64(bars-1)/2) * bw
			pl.Add(b)
			pl.Legend.Add(st.name+" "+kind, b)
		}
	}
	pl.NominalY(order...)
	pl.X.Max = memplot.ByteAxisMax(top)
	h := max(3*vg.Inch, vg.Length(len(order))*(vg.Length(bars)*bw+vg.Points(8))+vg.Inch)
	svg, err := renderSVG(pl, 8*vg.Inch, h)
	if err != nil {
		return nil, "no ledger chart: " + err.Error()
	}
	return &Chart{Kind: "ledger", Title: title, SVG: svg,
		Caption: "The bytes of every buffer the trainer made (ledger, at the end of the run) against what the analytical model (instrument/memmodel) says the configuration should hold."}, ""
}

// smallShare is the share of VmRSS under which a part of the resident
// set, in every bar of a chart, is drawn in "other" rather than alone.
const smallShare = 0.01

// otherName is the stack of the parts under smallShare.
const otherName = "other (<1 %)"

// reconParts are the named parts a reconciliation chart draws, in the
// reconciliations' order: each with its colour (by its index among all
// the parts, so a part keeps its colour whichever are grouped), and
// small, the names under smallShare of VmRSS in every bar, for "other".
func reconParts(recs []*schema.RSSReconciliation) (parts []string, colours map[string]color.Color, small []string) {
	var all []string
	for _, rec := range recs {
		for _, pt := range rec.AtPeak.Parts {
			if !slices.Contains(all, pt.Name) {
				all = append(all, pt.Name)
			}
		}
	}
	colours = map[string]color.Color{}
	for k, name := range all {
		large := false
		for _, rec := range recs {
			for _, pt := range rec.AtPeak.Parts {
				if pt.Name == name && float64(pt.Bytes) >= smallShare*float64(rec.AtPeak.RSSBytes) {
					large = true
				}
			}
		}
		if large {
			parts = append(parts, name)
			colours[name] = colour(k)
		} else {
			small = append(small, name)
		}
	}
	return parts, colours, small
}

// reconcileChart stacks, for the plan's first and last phase, the named
// parts of the resident set at its peak, each in its own colour, the
// parts under 1 % of VmRSS together as "other", the unexplained rest on
// top.
func reconcileChart(p *planRuns) (*Chart, string) {
	var states []string
	var recs []*schema.RSSReconciliation
	for _, r := range p.ends() {
		res := representative(r)
		if res == nil || res.RSSReconciliation == nil {
			continue
		}
		states = append(states, label(r))
		recs = append(recs, res.RSSReconciliation)
	}
	if len(recs) == 0 {
		return nil, "no RSS reconciliation chart: no finished phase with a reconciliation"
	}
	parts, colours, small := reconParts(recs)
	pl := newPlot(false, true)
	title := planTitle(p.name) + ": RSS at its peak in named parts"
	pl.Title.Text = title
	pl.Y.Label.Text = "resident"
	pl.Y.Min = 0
	pl.Legend.Top = true
	pl.Add(plotter.NewGrid())
	var below *plotter.BarChart
	// Drawn bottom up; the legend lists them top down, as stacked.
	type entry struct {
		name  string
		thumb plot.Thumbnailer
	}
	var legend []entry
	sum := func(rec *schema.RSSReconciliation, names []string) int64 {
		var n int64
		for _, pt := range rec.AtPeak.Parts {
			if slices.Contains(names, pt.Name) {
				n += pt.Bytes
			}
		}
		return n
	}
	stacked := make([]float64, len(recs)) // each bar's height so far
	add := func(name string, col color.Color, get func(rec *schema.RSSReconciliation) int64) error {
		vals := make(plotter.Values, len(recs))
		for i, rec := range recs {
			vals[i] = max(0, float64(get(rec)))
			stacked[i] += vals[i]
		}
		b, err := plotter.NewBarChart(vals, vg.Points(48))
		if err != nil {
			return err
		}
		b.Color, b.LineStyle.Width = col, 0
		if below != nil {
			b.StackOn(below)
		}
		below = b
		pl.Add(b)
		legend = append(legend, entry{name, b})
		return nil
	}
	for _, name := range parts {
		err := add(name, colours[name], func(rec *schema.RSSReconciliation) int64 { return sum(rec, []string{name}) })
		if err != nil {
			return nil, "no RSS reconciliation chart: " + err.Error()
		}
	}
	if len(small) > 0 {
		if err := add(otherName, lightGrey, func(rec *schema.RSSReconciliation) int64 { return sum(rec, small) }); err != nil {
			return nil, "no RSS reconciliation chart: " + err.Error()
		}
	}
	err := add("unexplained", grey, func(rec *schema.RSSReconciliation) int64 {
		return rec.AtPeak.UnexplainedBytes
	})
	if err != nil {
		return nil, "no RSS reconciliation chart: " + err.Error()
	}
	for i := len(legend) - 1; i >= 0; i-- {
		pl.Legend.Add(legend[i].name, legend[i].thumb)
	}
	negative := overclaims(states, recs)
	pl.NominalX(states...)
	// Room on the right for the legend.
	pl.X.Max = float64(len(states)) + 1.2
	pl.Y.Max = memplot.ByteAxisMax(slices.Max(stacked))
	svg, err := renderSVG(pl, 8*vg.Inch, 4.5*vg.Inch)
	if err != nil {
		return nil, "no RSS reconciliation chart: " + err.Error()
	}
	return &Chart{Kind: "reconcile", Title: title, Caption: reconcileCaption(p.outside(), small, negative), SVG: svg}, ""
}

// reconcileCaption says where the parts come from (outside: a program
// watched from outside, walked at its peak; else the trainer, at a step
// boundary), which are "other" and which bars claim more than VmRSS.
func reconcileCaption(outside bool, small, negative []string) string {
	caption := "VmRSS at the step boundary where it was highest, split into parts each from its own source (instrument/reconcile: Go's classes, thread stacks, glibc arenas, files); unexplained is what no source claims."
	if outside {
		caption = "VmRSS at the peak walk (the probe's walk of /proc/PID/smaps, from outside, at the program's highest RSS), split into parts each from its own source (thread stacks, glibc arenas, files, the mappings' kinds); unexplained is what no source claims."
	}
	if len(small) > 0 {
		caption += " " + otherName + ": " + strings.Join(small, ", ") + ", each under 1 % of VmRSS."
	}
	if len(negative) > 0 {
		caption += " " + strings.Join(negative, "; ") + " (drawn as 0)."
	}
	return caption
}

// overclaims names the states whose parts claim more than VmRSS, and by
// how much.
func overclaims(states []string, recs []*schema.RSSReconciliation) []string {
	var negative []string
	for i, rec := range recs {
		if rec.AtPeak.UnexplainedBytes < 0 {
			negative = append(negative, fmt.Sprintf("%s: the parts claim %s more than VmRSS", states[i],
				table.FormatBytes(float64(-rec.AtPeak.UnexplainedBytes))))
		}
	}
	return negative
}

// sweepAxes are the axes of the plan's runs that take two values or more,
// in name order.
func sweepAxes(p *planRuns) []string {
	values := map[string]map[string]bool{}
	for _, r := range p.runs {
		for k, v := range r.Sweep {
			if values[k] == nil {
				values[k] = map[string]bool{}
			}
			values[k][v] = true
		}
	}
	var axes []string
	for k, vs := range values {
		if len(vs) > 1 {
			axes = append(axes, k)
		}
	}
	slices.Sort(axes)
	return axes
}

// sweepChart draws peak RSS against a swept axis: every repetition a
// point, one series per phase (and point of the other axes). On a numeric
// axis each series gets its least-squares line, its intercept and slope
// in the legend in IEC units, as the axis; the values of another axis are
// spread evenly.
func sweepChart(p *planRuns, axis string) (*Chart, string) {
	peakRSS, err := metric.Lookup("peak_rss_bytes")
	if err != nil {
		return nil, err.Error()
	}
	all, labels, numeric := sweepSeries(p, axis, peakRSS)
	if len(all) == 0 {
		return nil, "no sweep chart of " + axis + ": no finished run"
	}
	rss, bytes := metricAxis("peak_rss_bytes")
	pl := newPlot(false, bytes)
	title := planTitle(p.name) + ": " + rss + " by " + axis
	pl.Title.Text = title
	pl.X.Label.Text = axis
	pl.Y.Label.Text = rss
	pl.Y.Min = 0
	pl.Legend.Top = true
	pl.Legend.Left = true
	pl.Add(plotter.NewGrid())
	top := 0.0
	for i, s := range all {
		xy := make(plotter.XYs, len(s.xs))
		for k := range s.xs {
			xy[k] = plotter.XY{X: s.xs[k], Y: s.ys[k]}
			top = max(top, s.ys[k])
		}
		sc, err := plotter.NewScatter(xy)
		if err != nil {
			return nil, "no sweep chart of " + axis + ": " + err.Error()
		}
		col := colour(i)
		sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(3), Shape: draw.CircleGlyph{}}
		pl.Add(sc)
		name := s.name
		if numeric {
			fit, err := fitLine(pl, s, col, axis)
			if err != nil {
				return nil, "no sweep chart of " + axis + ": " + err.Error()
			}
			name += fit
		}
		pl.Legend.Add(name, sc)
	}
	if !numeric {
		pl.NominalX(labels...)
	}
	pl.Y.Max = top * (1.2 + 0.08*float64(len(all)))
	svg, err := renderSVG(pl, 8*vg.Inch, 4*vg.Inch)
	if err != nil {
		return nil, "no sweep chart of " + axis + ": " + err.Error()
	}
	caption := "Every repetition's peak RSS (VmHWM)."
	if numeric {
		caption += " Dashed: the least-squares line of each phase; its slope is what one more unit of " + axis + " adds to the peak."
	}
	return &Chart{Kind: "sweep", Title: title, Caption: caption, SVG: svg}, ""
}

// series is a sweep chart's points of one phase (and point of the other
// axes): every repetition's peak RSS at its value of the axis.
type series struct {
	name   string
	xs, ys []float64
}

// sweepSeries are the plan's finished runs on axis as series, phases in
// order; on an axis whose values are not all numbers (numeric false),
// each value is its place in labels, in order of appearance.
func sweepSeries(p *planRuns, axis string, peakRSS metric.Def) (all []*series, labels []string, numeric bool) {
	numeric = true
	for _, r := range p.runs {
		if _, err := strconv.ParseFloat(r.Sweep[axis], 64); r.Sweep[axis] != "" && err != nil {
			numeric = false
		}
	}
	var runs []*schema.Run
	for _, r := range p.runs {
		if _, okAxis := r.Sweep[axis]; okAxis && ok(r) {
			runs = append(runs, r)
		}
	}
	if !numeric {
		var vals []string
		for _, r := range runs {
			if !slices.Contains(vals, r.Sweep[axis]) {
				vals = append(vals, r.Sweep[axis])
			}
		}
		labels = vals
	}
	slices.SortStableFunc(runs, func(a, b *schema.Run) int { return phaseOrder(a.Phase) - phaseOrder(b.Phase) })
	for _, r := range runs {
		others := map[string]string{}
		for k, v := range r.Sweep {
			if k != axis {
				others[k] = v
			}
		}
		name := r.Phase
		if o := point(others); o != "" {
			name += " (" + o + ")"
		}
		k := slices.IndexFunc(all, func(s *series) bool { return s.name == name })
		if k < 0 {
			all = append(all, &series{name: name})
			k = len(all) - 1
		}
		x, _ := strconv.ParseFloat(r.Sweep[axis], 64)
		if !numeric {
			x = float64(slices.Index(labels, r.Sweep[axis]))
		}
		for i := range r.Repetitions {
			if y, ok := peakRSS.Run(&r.Repetitions[i]); ok {
				all[k].xs = append(all[k].xs, x)
				all[k].ys = append(all[k].ys, y)
			}
		}
	}
	return all, labels, numeric
}

// fitLine draws s's least-squares line in col, dashed, where s has two
// values of the axis or more, and returns what the legend adds: the
// intercept and slope in IEC units and R².
func fitLine(pl *plot.Plot, s *series, col color.Color, axis string) (string, error) {
	distinct := map[float64]bool{}
	for _, x := range s.xs {
		distinct[x] = true
	}
	if len(distinct) < 2 {
		return "", nil
	}
	a, b := stat.LinearRegression(s.xs, s.ys, nil, false)
	lo, hi := slices.Min(s.xs), slices.Max(s.xs)
	line, err := plotter.NewLine(plotter.XYs{{X: lo, Y: a + b*lo}, {X: hi, Y: a + b*hi}})
	if err != nil {
		return "", err
	}
	line.Color, line.Width = col, vg.Points(1)
	line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	pl.Add(line)
	name := fmt.Sprintf(": %s + %s per %s", table.FormatBytes(math.Round(a)), table.FormatBytes(math.Round(b)), axis)
	if r := stat.RSquared(s.xs, s.ys, nil, a, b); !math.IsNaN(r) {
		name += fmt.Sprintf(", R² %.3f", r)
	}
	return name, nil
}
