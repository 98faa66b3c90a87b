package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"memprobe/internal/table"
	"memprobe/schema"
)

// DiffFormats are the formats WriteDiff writes.
var DiffFormats = []string{"text", "markdown", "json"}

// WriteDiff renders d: in text or markdown a heading that names both
// sides, one table per plan (a row per configuration and metric: base and
// head medians with their 95 % intervals, the change, the p-value, the
// repetitions and the numbers of the row's warnings, each warning said
// once under the table), the configurations only one side ran and the
// diff's warnings; in json, d itself. Text fits TextWidth columns
// (fitBlocks). Markdown is ready to paste into a pull request.
func WriteDiff(w io.Writer, d *Diff, format string) error {
	switch format {
	case "json":
		b, err := schema.Marshal(d)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	case "text", "markdown":
	default:
		return fmt.Errorf("format %q: not one of %s", format, strings.Join(DiffFormats, ", "))
	}
	f := table.Format(format)
	out := &tableWriter{f: f}
	md := f == table.Markdown
	head := fmt.Sprintf("base %s, head %s; ~ is no change the runs establish (Mann-Whitney U test, alpha %g; where it cannot decide, ranges apart by more than their spread); = marks a deterministic metric, compared exactly",
		describeSource(d.Base, md), describeSource(d.Head, md), d.Alpha)
	if md {
		head = "**probe diff**: " + head
	}
	out.line(head)
	var plans []string
	byPlan := map[string][]ConfigDiff{}
	for _, c := range d.Configs {
		if _, ok := byPlan[c.Plan]; !ok {
			plans = append(plans, c.Plan)
		}
		byPlan[c.Plan] = append(byPlan[c.Plan], c)
	}
	for _, p := range plans {
		out.table(diffTable(p, byPlan[p]))
	}
	if len(d.OnlyBase) > 0 {
		out.line("only in base: " + listKeys(d.OnlyBase, md))
	}
	if len(d.OnlyHead) > 0 {
		out.line("only in head: " + listKeys(d.OnlyHead, md))
	}
	for _, s := range d.Warnings {
		out.line("warning: " + s)
	}
	return writeBlocks(w, fitBlocks(out.blocks, f, TextWidth), f)
}

func describeSource(s DiffSource, md bool) string {
	c := s.Commit[:min(len(s.Commit), 12)]
	if c == "" {
		c = "unknown commit"
	}
	if md {
		c = "`" + c + "`"
	}
	if s.Modified {
		c += " (modified)"
	}
	name := s.Name
	if md && name != "" {
		name = "`" + name + "`"
	}
	return fmt.Sprintf("%s (%s, %s)", name, c, s.StartTime)
}

func listKeys(keys []string, md bool) string {
	if !md {
		return strings.Join(keys, ", ")
	}
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = "`" + k + "`"
	}
	return strings.Join(q, ", ")
}

var (
	colDiffConfig = table.Column{Name: "configuration"}
	colDiffMetric = table.Column{Name: "metric"}
	colDiffBase   = table.Column{Name: "base", Align: table.Right}
	colDiffHead   = table.Column{Name: "head", Align: table.Right}
	colDiffChange = table.Column{Name: "change", Align: table.Right}
	colDiffP      = table.Column{Name: "p", Align: table.Right}
	colDiffN      = table.Column{Name: "n", Align: table.Right}
	colDiffNote   = table.Column{Name: "note"}
)

func diffTable(plan string, cs []ConfigDiff) *table.Table {
	title := "plan " + plan
	if plan == "" {
		title = "outside a plan"
	}
	t := table.New(title, colDiffConfig, colDiffMetric, colDiffBase, colDiffHead, colDiffChange, colDiffP, colDiffN, colDiffNote)
	n := &diffNotes{t: t, num: map[string]int{}}
	for _, c := range cs {
		name := c.Phase
		if name == "" {
			name = c.Key
		}
		if p := sweepPoint(c.Sweep, ""); p != "" {
			name += " " + strings.ReplaceAll(p, ", ", " ")
		}
		if len(c.Rows) == 0 {
			note := fmt.Sprintf("not compared: base %s, head %s", c.BaseStatus, c.HeadStatus)
			if c.BaseStatus == schema.StatusOK && c.HeadStatus == schema.StatusOK {
				note = "not compared: no metric asked for is measured on both sides"
			}
			t.Add(name, "not compared", nil, nil, nil, nil, nil, n.ref([]string{note}))
			continue
		}
		for i, r := range c.Rows {
			label := ""
			if i == 0 {
				label = name
			}
			metric := r.Metric
			base, head := formatSide(r.Metric, r.Base, r.Exact), formatSide(r.Metric, r.Head, r.Exact)
			p := "="
			if r.P != nil {
				p = strconv.FormatFloat(*r.P, 'f', 3, 64)
			}
			t.Add(label, metric, base, head, formatChange(r), p, fmt.Sprintf("%d+%d", r.Base.N, r.Head.N), n.ref(r.Warnings))
		}
	}
	return t
}

// diffNotes numbers a diff table's notes: each text is said once, under
// the table, and the rows it applies to carry its number ("[1]"), so that
// a caveat of every row (n=3+3: the U test cannot reach p<0.05...) does
// not fill the note column row after row.
type diffNotes struct {
	t   *table.Table
	num map[string]int
}

// ref is the note cell of a row with the warnings ws: their numbers,
// each new text added under the table.
func (n *diffNotes) ref(ws []string) string {
	var refs []string
	for _, w := range ws {
		k, ok := n.num[w]
		if !ok {
			k = len(n.num) + 1
			n.num[w] = k
			n.t.Note("[%d] %s", k, w)
		}
		refs = append(refs, fmt.Sprintf("[%d]", k))
	}
	return strings.Join(refs, " ")
}

// formatSide is a median and, for a measured metric with more than one
// value, its interval as "± x%" of the median, as benchstat writes it.
func formatSide(metric string, s DiffSide, exact bool) string {
	v := formatValue(metric, s.Median)
	if exact || s.N < 2 {
		return v
	}
	if s.Lo == s.Hi {
		return v + " ± 0%"
	}
	if s.Median == 0 {
		return v + " ± ?"
	}
	pct := 100 * math.Max(s.Hi/s.Median-1, 1-s.Lo/s.Median)
	return fmt.Sprintf("%s ± %.0f%%", v, math.Abs(pct))
}

// formatChange is "~" for a change the runs do not establish (neither
// significant nor, where the U test cannot decide, ranges apart by more
// than their spread), else the change in percent (and, for an exact
// metric, in the metric's unit). A change the U test cannot decide at
// these sizes (Undecided), beyond the noise floor and not established, is
// the medians' change marked "undecided".
func formatChange(r MetricDiff) string {
	if !r.Significant && !r.Established {
		switch {
		case r.Exact:
			return "0"
		case r.Undecided && !r.Noise:
			return formatPct(r) + " undecided"
		}
		return "~"
	}
	pct := formatPct(r)
	if r.Exact {
		sign := "+"
		if r.Delta < 0 {
			sign = "-"
		}
		abs := sign + formatValue(r.Metric, math.Abs(r.Delta))
		if r.Pct == nil {
			return abs + " (from 0)"
		}
		return abs + " (" + pct + ")"
	}
	return pct
}

// formatPct is the medians' change in percent, "?" from 0.
func formatPct(r MetricDiff) string {
	if r.Pct == nil {
		return "?"
	}
	return fmt.Sprintf("%+.2f%%", *r.Pct)
}

// formatValue writes a metric's value by its registered unit: bytes in
// IEC units, counts and rates with digit groups.
func formatValue(metric string, x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return table.Absent
	}
	if isBytes(metric) {
		if x == math.Trunc(x) {
			return table.FormatBytes(x)
		}
		return table.FormatBytes(math.Round(x))
	}
	dec := 0
	if math.Abs(x) < 100 && x != math.Trunc(x) {
		dec = 2
	}
	s := strconv.FormatFloat(x, 'f', dec, 64)
	return table.GroupDigits(s)
}
