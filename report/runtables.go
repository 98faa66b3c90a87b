package report

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat"

	"memprobe/internal/table"
	"memprobe/schema"
)

// WriteRunTables renders a run report (`probe run`) for people, plan by
// plan in the order the plans ran:
//
//  1. a phase table per sweep point: each phase's peak RSS (median and
//     min–max over the repetitions), its change from the previous phase
//     and from before, VSZ, peak Go heap, allocations per step, tokens/s
//     and the speedup over before, the note's claim and whether the
//     measurement agrees with it (AgreeYes, AgreeDirection, AgreeNo,
//     AgreeUnchecked), with a numbered footnote for each disagreement,
//     each unchecked claim and each configuration that did not run;
//  2. expected against measured bytes by component (the ledger against
//     the analytical model) for the first and last phase;
//  3. the resident set at its peak in named parts for the same two;
//  4. for each swept axis, the metrics per value, and for the threads
//     axis the least-squares slope of peak RSS in MB (10^6 B) per thread.
//
// The detail tables (2, 3) come from the sweep point with the most phases,
// and from the repetition whose peak RSS is nearest its run's median.
// Every table goes through internal/table in format f; in CSV the tables
// follow one another, separated by an empty line, without titles or notes.
// Text fits TextWidth columns: a wider table is folded into parts that
// repeat the phase, long notes wrap (fitBlocks).
// Blocks gives the same tables and paragraphs, unrendered.
func WriteRunTables(w io.Writer, rep *schema.Report, f table.Format) error {
	if _, err := table.ParseFormat(string(f)); err != nil {
		return err
	}
	return writeBlocks(w, fitBlocks(runBlocks(rep, f), f, TextWidth), f)
}

// WritePlanTables renders one plan's tables of WriteRunTables, without the
// report's heading and warnings.
func WritePlanTables(w io.Writer, rep *schema.Report, planName string, f table.Format) error {
	if _, err := table.ParseFormat(string(f)); err != nil {
		return err
	}
	blocks, err := planBlocks(rep, planName, f)
	if err != nil {
		return err
	}
	return writeBlocks(w, fitBlocks(blocks, f, TextWidth), f)
}

// provenance is the line that says where the figures come from.
func provenance(rep *schema.Report) string {
	return fmt.Sprintf("%d configurations run from %s to %s", len(rep.Runs), rep.StartTime, rep.EndTime) + machine(rep.Environment)
}

// machine says what the figures ran on: " on CPU (N logical cores), Go
// version, commit C", each part where known.
func machine(e schema.Environment) string {
	var s string
	if e.CPUModel != "" {
		s += fmt.Sprintf(" on %s (%d logical cores)", e.CPUModel, e.LogicalCores)
	}
	if e.GoVersion != "" {
		s += ", " + e.GoVersion
	}
	if c := e.VCSRevision; c != "" {
		s += ", commit " + c[:min(len(c), 12)]
		if e.VCSModified {
			s += " (modified)"
		}
	}
	return s
}

// notes numbers a table's footnotes and writes the references in cells
// ("no [1]"); in CSV, which has no notes, a reference is left out.
type notes struct {
	t    *table.Table
	refs bool
	n    int
}

// add appends a footnote and returns its reference, " [k]".
func (n *notes) add(text string) string {
	n.n++
	n.t.Note("[%d] %s", n.n, text)
	if !n.refs {
		return ""
	}
	return fmt.Sprintf(" [%d]", n.n)
}

func writePlan(out *tableWriter, p *plan) {
	for _, g := range p.groups {
		out.table(phaseTable(g, out.f))
	}
	g := p.main()
	ends := g.ends()
	var ran []*runView
	var missing []string
	for _, v := range ends {
		if v.ok() {
			ran = append(ran, v)
		} else {
			missing = append(missing, fmt.Sprintf("%s %s", v.label(), v.Status))
		}
	}
	if len(ran) == 0 {
		out.line(fmt.Sprintf("%s: no component or RSS tables: %s", g.title(), strings.Join(missing, ", ")))
	} else {
		// Processes watched from outside (probe exec) have no ledger:
		// their resident set in parts is all there is to show.
		if !allProcesses(ends) {
			out.table(ledgerTable(g, ends))
		}
		out.table(reconcileTable(g, ends))
	}
	for _, axis := range sweptAxes(p) {
		out.table(sweepTable(p, axis, out.f))
		if axis == "threads" {
			if t := threadsFit(p); t != nil {
				out.table(t)
			}
		}
	}
}

// Columns of a figure, named by the registry's labels: bytes and rates
// as the other report tables write them.
var (
	colN      = table.Column{Name: "n", Kind: table.Int}
	colRSS    = metricColumn(metricPeakRSS)
	colVSZ    = metricColumn(metricVSZ)
	colHeap   = metricColumn(metricGoHeap)
	colAllocs = func() table.Column { c := metricColumn(metricAllocs); c.Decimals = 1; return c }()
	colTokens = metricColumn(metricTokens)
)

// median is the cell of the metric's median (runView.metric: the
// Summary's, or stats.Median of the repetitions' values; it computes
// none), nil when no repetition has it; bytes are whole.
func median(v *runView, name string, bytes bool) any {
	s := v.metric(name)
	if !s.exists {
		return nil
	}
	if bytes {
		return int64(math.Round(s.median))
	}
	return s.median
}

// failed is the cell that stands for a run's figures when it did not run:
// its status, with a footnote giving the reason.
func failed(n *notes, v *runView) string {
	reason := v.Reason
	if reason == "" {
		reason = "no reason given"
	}
	return string(v.Status) + n.add(fmt.Sprintf("%s %s: %s", v.label(), v.Status, reason))
}

// phaseTable is a group's phases, a row each. The verdict (claim,
// agrees) comes right after the change, before the figures, and the long
// texts wrap in text, so that the verdicts and peak RSS stay in the first
// part when text folds the table to fit a terminal (fitBlocks) and in
// view on a page.
func phaseTable(g *group, f table.Format) *table.Table {
	figures := phaseFigures(g)
	speedups := slices.ContainsFunc(figures, func(f figure) bool { return f.name == metricTokens })
	t := table.New(g.title()+": phases", phaseColumns(figures, speedups)...)
	n := &notes{t: t, refs: f != table.CSV}
	var warnings []string
	for _, v := range g.runs {
		for _, s := range v.Summary.Warnings {
			warnings = append(warnings, v.label()+": "+s)
		}
		t.Add(phaseRow(g, v, n, f, figures, speedups)...)
	}
	for _, s := range warnings {
		t.Note("%s", s)
	}
	scaleNotes(t, g)
	t.Note("peak RSS: the median of the n repetitions' VmHWM; agrees: %s when the change has the claimed direction and is within a factor of %g of the claimed size", AgreeYes, Tolerance)
	return t
}

// figure is a phase table's column of a metric after VSZ: its median, in
// whole bytes where bytes.
type figure struct {
	col   table.Column
	name  string
	bytes bool
}

// phaseFigures are the figures after VSZ, those some phase has: a plan
// file's programs, watched from outside, have thread stacks and glibc
// arenas (reserved against resident) at their peak walk and no Go heap or
// tokens; the trainer's phases the other way round.
func phaseFigures(g *group) []figure {
	has := func(name string) bool {
		return slices.ContainsFunc(g.runs, func(v *runView) bool { return v.ok() && v.metric(name).exists })
	}
	var figures []figure
	for _, f := range []figure{
		{metricColumn(metricStacksReserved), metricStacksReserved, true},
		{metricColumn(metricStacksResident), metricStacksResident, true},
		{metricColumn(metricArenasReserved), metricArenasReserved, true},
		{metricColumn(metricArenasResident), metricArenasResident, true},
	} {
		if has(f.name) {
			figures = append(figures, f)
		}
	}
	// The trainer's figures, unless every phase that ran is a program
	// watched from outside.
	if !outsideOnly(g.runs) {
		figures = append(figures,
			figure{colHeap, metricGoHeap, true},
			figure{colAllocs, metricAllocs, false},
			figure{metricColumn(metricAllocBytes), metricAllocBytes, true},
			figure{colTokens, metricTokens, false})
	}
	return figures
}

// phaseColumns are the phase table's columns: the phase, its change and
// claim (wrapped in text: with the phase and the verdict about 84
// columns), the verdict, then the figures.
func phaseColumns(figures []figure, speedups bool) []table.Column {
	const phaseTextWidth = 24
	cols := []table.Column{
		{Name: "phase"},
		{Name: "change", MaxWidth: phaseTextWidth},
		{Name: "claim", MaxWidth: phaseTextWidth},
		{Name: "agrees"},
		colN,
		colRSS,
		{Name: "RSS min–max", Align: table.Right},
		{Name: "Δ previous", Kind: table.Bytes},
		{Name: "Δ before", Kind: table.Bytes},
		colVSZ,
	}
	for _, f := range figures {
		cols = append(cols, f.col)
	}
	if speedups {
		cols = append(cols, table.Column{Name: "vs before", Kind: table.Float, Decimals: 2, Unit: "x"})
	}
	return cols
}

// phaseRow is v's row of the phase table; its footnotes go to n.
func phaseRow(g *group, v *runView, n *notes, f table.Format, figures []figure, speedups bool) []any {
	prev := g.phase(v.index - 1)
	var change, claim any
	if v.Description != "" {
		change = v.Description
	} else if d := configDiff(prev, v); d != "" {
		change = d
	}
	if v.Claim != "" {
		claim = v.Claim
	}
	if !v.ok() {
		return []any{v.label(), change, claim, AgreeUnchecked, len(v.Repetitions), failed(n, v)}
	}
	spread, dPrev, dBefore, speedup := phaseChanges(g, v, f)
	var checks []check
	var refs string
	for _, e := range v.Expect {
		c := judge(g, v, e)
		checks = append(checks, c)
		if s := c.footnote(v.label()); s != "" {
			refs += n.add(s)
		}
	}
	row := []any{v.label(), change, claim, combine(checks) + refs, len(v.Repetitions), median(v, metricPeakRSS, true), spread, dPrev, dBefore,
		median(v, metricVSZ, true)}
	for _, f := range figures {
		row = append(row, median(v, f.name, f.bytes))
	}
	if speedups {
		row = append(row, speedup)
	}
	return row
}

// phaseChanges are v's cells of peak RSS's min–max (where the repetitions
// differ), its change from the previous phase and from before, and its
// tokens/s over before's.
func phaseChanges(g *group, v *runView, f table.Format) (spread, dPrev, dBefore, speedup any) {
	before := g.phase(0)
	rssOf := func(v *runView) (float64, bool) {
		if v == nil || !v.ok() {
			return 0, false
		}
		s := v.metric(metricPeakRSS)
		return s.median, s.exists
	}
	rss := v.metric(metricPeakRSS)
	if len(rss.values) > 1 || (rss.fromSummary && rss.min != rss.max) {
		spread = table.FormatBytes(math.Round(rss.min)) + "–" + table.FormatBytes(math.Round(rss.max))
		if f == table.CSV {
			spread = fmt.Sprintf("%.0f–%.0f", rss.min, rss.max)
		}
	}
	if x, ok := rssOf(g.phase(v.index - 1)); ok && rss.exists {
		dPrev = int64(math.Round(rss.median - x))
	}
	if x, ok := rssOf(before); ok && rss.exists && v != before {
		dBefore = int64(math.Round(rss.median - x))
	}
	if before != nil && before.ok() && v != before {
		if b := before.metric(metricTokens); b.exists && b.median > 0 {
			if x := v.metric(metricTokens); x.exists {
				speedup = x.median / b.median
			}
		}
	}
	return spread, dPrev, dBefore, speedup
}

// scaleNotes says at what scale the phases ran: once when all ran at one
// scale, else per scale with the phases that ran at it.
func scaleNotes(t *table.Table, g *group) {
	scales := map[string][]string{}
	var order []string
	for _, v := range g.runs {
		if v.Scale == "" {
			continue
		}
		if scales[v.Scale] == nil {
			order = append(order, v.Scale)
		}
		scales[v.Scale] = append(scales[v.Scale], v.label())
	}
	for _, s := range order {
		if len(scales[s]) == len(g.runs) {
			t.Note("scale: %s", s)
		} else {
			t.Note("scale of %s: %s", strings.Join(scales[s], ", "), s)
		}
	}
}

// detail is the repetition a detail table shows for each of the states:
// nil for a state that did not run.
func detail(states []*runView) []*schema.Result {
	out := make([]*schema.Result, len(states))
	for i, v := range states {
		if k := v.representative(); v.ok() && k >= 0 {
			out[i] = &v.Repetitions[k]
		}
	}
	return out
}

// missingNotes says which states have no figures.
func missingNotes(t *table.Table, states []*runView, res []*schema.Result) {
	for i, v := range states {
		if res[i] == nil {
			t.Note("%s %s: no figures", v.label(), v.Status)
		}
	}
}

func stateNames(states []*runView) string {
	var names []string
	for _, v := range states {
		names = append(names, v.label())
	}
	return strings.Join(names, " and ")
}

// fromOutside reports whether v's program is watched from outside: a
// plan file's phase (the report keeps its command and place whether or
// not it ran), or a process result read as a report. The plan's kind,
// not whether a phase succeeded, picks the tables' columns.
func fromOutside(v *runView) bool {
	if len(v.Command) > 0 || v.PhaseIndex != nil {
		return true
	}
	return v.ok() && v.Repetitions[0].Kind == schema.KindProcess
}

// outsideOnly reports whether there are runs and every one measures a
// program from outside (fromOutside), finished or not.
func outsideOnly(runs []*runView) bool {
	return len(runs) > 0 && !slices.ContainsFunc(runs, func(v *runView) bool { return !fromOutside(v) })
}

// allProcesses reports whether every state is a program watched from
// outside (outsideOnly), which has no ledger.
func allProcesses(states []*runView) bool { return outsideOnly(states) }

// ledgerTable puts the model against the ledger for each state, side by
// side: one row per component, in the order the states list them.
func ledgerTable(g *group, states []*runView) *table.Table {
	res := detail(states)
	var names []string
	rows := make([]map[string]schema.LedgerRow, len(states))
	for i, r := range res {
		rows[i] = map[string]schema.LedgerRow{}
		if r == nil {
			continue
		}
		for _, l := range r.Ledger {
			if _, seen := rows[i][l.Component]; !seen && !slices.Contains(names, l.Component) {
				names = append(names, l.Component)
			}
			rows[i][l.Component] = l
		}
	}
	// A component only one side knows is marked in its row (the model
	// column, there only when some row needs it) and kept out of the
	// total, so that the total compares what the model predicts with what
	// the ledger holds of it: the arena and embedding plans' tape engine
	// holds its buffers in accounts the model has no formula for
	// (instrument/memmodel models the step engine) and registers no
	// activations, and a total over both would read as a 1,000 % error.
	totals := make([][2]int64, len(states))
	var outside []string
	var body [][]any
	for _, name := range names {
		cells := []any{name, ""}
		for i, r := range res {
			l, ok := rows[i][name]
			if r == nil || !ok {
				cells = append(cells, nil, nil, nil)
				continue
			}
			switch {
			case l.ExpectedBytes == 0 && (l.MeasuredBytes != 0 || l.PeakBytes != 0):
				cells[1] = "outside the model"
			case l.ExpectedBytes != 0 && l.MeasuredBytes == 0 && l.PeakBytes == 0:
				cells[1] = cmp.Or(cells[1].(string), "not in the ledger")
			default:
				totals[i][0] += l.ExpectedBytes
				totals[i][1] += l.MeasuredBytes
			}
			cells = append(cells, l.ExpectedBytes, l.MeasuredBytes, l.DiffPct)
		}
		if cells[1] != "" {
			outside = append(outside, name)
		}
		body = append(body, cells)
	}
	cells := []any{"total", ""}
	if len(outside) > 0 {
		cells[0] = "total in both"
	}
	for i, r := range res {
		if r == nil {
			cells = append(cells, nil, nil, nil)
			continue
		}
		var diff any
		if e := totals[i][0]; e != 0 {
			diff = 100 * float64(totals[i][1]-e) / float64(e)
		}
		cells = append(cells, totals[i][0], totals[i][1], diff)
	}
	body = append(body, cells)

	cols := []table.Column{{Name: "component"}, {Name: "model"}}
	for _, v := range states {
		cols = append(cols,
			table.Column{Name: v.label() + " expected", Kind: table.Bytes},
			table.Column{Name: v.label() + " measured", Kind: table.Bytes},
			table.Column{Name: v.label() + " diff", Kind: table.Percent, Decimals: 1})
	}
	if len(outside) == 0 {
		cols = slices.Delete(cols, 1, 2)
	}
	t := table.New(fmt.Sprintf("%s: expected vs measured by component, %s", g.title(), stateNames(states)), cols...)
	for _, c := range body {
		if len(outside) == 0 {
			c = slices.Delete(c, 1, 2)
		}
		t.Add(c...)
	}
	for i, r := range res {
		if r != nil && len(r.Ledger) == 0 {
			t.Note("%s: no ledger (instruments off)", states[i].label())
		}
	}
	missingNotes(t, states, res)
	t.Note("the ledger at the end of the run against the analytical model (instrument/memmodel); diff is (measured − expected) / expected")
	if len(outside) > 0 {
		t.Note("%s: only one of the model and the ledger knows %s (model column), so the total leaves %s out",
			strings.Join(outside, ", "), plural(len(outside), "it", "them"), plural(len(outside), "it", "them"))
	}
	return t
}

// reconcileTable puts each state's resident set at its peak in named
// parts side by side: resident and reserved bytes per part, then the
// unexplained rest and the totals.
func reconcileTable(g *group, states []*runView) *table.Table {
	cols := []table.Column{{Name: "part"}}
	for _, v := range states {
		cols = append(cols,
			table.Column{Name: v.label() + " resident", Kind: table.Bytes},
			table.Column{Name: v.label() + " reserved", Kind: table.Bytes})
	}
	t := table.New(fmt.Sprintf("%s: RSS at its peak in named parts, %s", g.title(), stateNames(states)), cols...)
	res := detail(states)
	var names []string
	parts := make([]map[string][2]int64, len(states))
	for i, r := range res {
		parts[i] = map[string][2]int64{}
		if r == nil || r.RSSReconciliation == nil {
			continue
		}
		for _, p := range r.RSSReconciliation.AtPeak.Parts {
			if !slices.Contains(names, p.Name) {
				names = append(names, p.Name)
			}
			parts[i][p.Name] = [2]int64{p.Bytes, p.ReservedBytes}
		}
	}
	has := func(i int) bool { return res[i] != nil && res[i].RSSReconciliation != nil }
	row := func(name string, get func(rec *schema.RSSReconciliation, i int) (any, any)) {
		cells := []any{name}
		for i := range states {
			if !has(i) {
				cells = append(cells, nil, nil)
				continue
			}
			a, b := get(res[i].RSSReconciliation, i)
			cells = append(cells, a, b)
		}
		t.Add(cells...)
	}
	for _, name := range names {
		row(name, func(_ *schema.RSSReconciliation, i int) (any, any) {
			p, ok := parts[i][name]
			if !ok {
				return nil, nil
			}
			return p[0], p[1]
		})
	}
	row("unexplained", func(rec *schema.RSSReconciliation, _ int) (any, any) {
		return rec.AtPeak.UnexplainedBytes, rec.AtPeak.UnexplainedReservedBytes
	})
	row("= total (VmRSS, VmSize)", func(rec *schema.RSSReconciliation, _ int) (any, any) {
		return rec.AtPeak.RSSBytes, rec.AtPeak.VSZBytes
	})
	for i, v := range states {
		switch {
		case has(i):
			rec := res[i].RSSReconciliation
			at := fmt.Sprintf("at step %d", rec.AtPeakStep)
			if p := res[i].Process; p != nil && p.AtPeak != nil {
				at = fmt.Sprintf("at the peak walk, %.2f s", p.AtPeak.TMs/1000)
			}
			t.Note("%s: %s; named parts explain %s of VmHWM %s, residual %s (%.1f%%)", v.label(), at,
				table.FormatBytes(float64(rec.ExplainedBytes)), table.FormatBytes(float64(rec.VmHWMBytes)),
				table.FormatBytes(float64(rec.ResidualBytes)), rec.ResidualPct)
		case res[i] != nil && res[i].Kind == schema.KindProcess:
			t.Note("%s: no RSS reconciliation (the process exited before a walk of its smaps)", v.label())
		case res[i] != nil:
			t.Note("%s: no RSS reconciliation (instruments off)", v.label())
		}
	}
	missingNotes(t, states, res)
	return t
}

// sweptAxes are the axes of a plan's sweep that take two values or more,
// in name order.
func sweptAxes(p *plan) []string {
	values := map[string]map[string]bool{}
	for _, v := range p.runs {
		for k, x := range v.Sweep {
			if values[k] == nil {
				values[k] = map[string]bool{}
			}
			values[k][x] = true
		}
	}
	var axes []string
	for _, k := range sortedKeys(values) {
		if len(values[k]) > 1 {
			axes = append(axes, k)
		}
	}
	return axes
}

// sweepRuns are the runs of the phases that the axis sweeps (two values
// or more), ordered by phase, the other axes' values, then the axis value
// (numerically when both are numbers).
func sweepRuns(p *plan, axis string) []*runView {
	values := map[string]map[string]bool{}
	for _, v := range p.runs {
		if x, ok := v.Sweep[axis]; ok {
			if values[v.Phase] == nil {
				values[v.Phase] = map[string]bool{}
			}
			values[v.Phase][x] = true
		}
	}
	var runs []*runView
	for _, v := range p.runs {
		if _, ok := v.Sweep[axis]; ok && len(values[v.Phase]) > 1 {
			runs = append(runs, v)
		}
	}
	slices.SortStableFunc(runs, func(a, b *runView) int {
		if d := orderIndex(a.index) - orderIndex(b.index); d != 0 {
			return d
		}
		if c := strings.Compare(sweepPoint(a.Sweep, axis), sweepPoint(b.Sweep, axis)); c != 0 {
			return c
		}
		return compareValues(a.Sweep[axis], b.Sweep[axis])
	})
	return runs
}

func compareValues(a, b string) int {
	x, errA := strconv.ParseFloat(a, 64)
	y, errB := strconv.ParseFloat(b, 64)
	if errA == nil && errB == nil {
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	}
	return strings.Compare(a, b)
}

// otherAxes says whether the plan's runs sweep axes beside axis.
func otherAxes(runs []*runView, axis string) bool {
	for _, v := range runs {
		if sweepPoint(v.Sweep, axis) != "" {
			return true
		}
	}
	return false
}

func sweepTable(p *plan, axis string, f table.Format) *table.Table {
	runs := sweepRuns(p, axis)
	others := otherAxes(runs, axis)
	cols := []table.Column{{Name: "phase"}, {Name: axis, Align: table.Right}}
	if others {
		cols = append(cols, table.Column{Name: "other axes"})
	}
	cols = append(cols, colN, colRSS, colVSZ, colHeap, colAllocs, colTokens)
	t := table.New(fmt.Sprintf("plan %s: sweep of %s", p.name, axis), cols...)
	n := &notes{t: t, refs: f != table.CSV}
	for _, v := range runs {
		cells := []any{v.label(), v.Sweep[axis]}
		if others {
			cells = append(cells, sweepPoint(v.Sweep, axis))
		}
		if !v.ok() {
			t.Add(append(cells, len(v.Repetitions), failed(n, v))...)
			continue
		}
		t.Add(append(cells, len(v.Repetitions), median(v, metricPeakRSS, true), median(v, metricVSZ, true),
			median(v, metricGoHeap, true), median(v, metricAllocs, false), median(v, metricTokens, false))...)
	}
	return t
}

// threadsFit fits peak RSS = a + b × threads by least squares, over every
// repetition of the first and the last phase the threads axis sweeps (one
// fit per point of the other axes); nil when neither has two thread
// counts with figures.
func threadsFit(p *plan) *table.Table {
	const axis = "threads"
	runs := sweepRuns(p, axis)
	if len(runs) == 0 {
		return nil
	}
	first, last := runs[0].index, runs[len(runs)-1].index
	others := otherAxes(runs, axis)
	cols := []table.Column{{Name: "phase"}}
	if others {
		cols = append(cols, table.Column{Name: "other axes"})
	}
	cols = append(cols,
		table.Column{Name: "points", Kind: table.Int},
		table.Column{Name: "a", Kind: table.Float, Decimals: 1, Unit: "MB"},
		table.Column{Name: "b", Kind: table.Float, Decimals: 3, Unit: "MB/thread"},
		table.Column{Name: "R²", Kind: table.Float, Decimals: 3})
	t := table.New(fmt.Sprintf("plan %s: peak RSS = a + b × threads (least squares over every repetition)", p.name), cols...)
	type key struct {
		phase string
		point string
	}
	var keys []key
	xs, ys := map[key][]float64{}, map[key][]float64{}
	for _, v := range runs {
		if (v.index != first && v.index != last) || !v.ok() {
			continue
		}
		x, err := strconv.ParseFloat(v.Sweep[axis], 64)
		if err != nil {
			continue
		}
		k := key{v.label(), sweepPoint(v.Sweep, axis)}
		if _, seen := xs[k]; !seen {
			keys = append(keys, k)
		}
		for _, y := range v.metric(metricPeakRSS).values {
			xs[k] = append(xs[k], x)
			ys[k] = append(ys[k], y/1e6)
		}
	}
	for _, k := range keys {
		x, y := xs[k], ys[k]
		distinct := map[float64]bool{}
		for _, v := range x {
			distinct[v] = true
		}
		if len(distinct) < 2 {
			continue
		}
		a, b := stat.LinearRegression(x, y, nil, false)
		var r2 any
		if r := stat.RSquared(x, y, nil, a, b); !math.IsNaN(r) && !math.IsInf(r, 0) {
			r2 = r
		}
		cells := []any{k.phase}
		if others {
			cells = append(cells, k.point)
		}
		t.Add(append(cells, len(x), a, b, r2)...)
	}
	if len(t.Rows) == 0 {
		return nil
	}
	t.Note("MB is 10^6 B; b is what one more thread adds to the peak")
	return t
}
