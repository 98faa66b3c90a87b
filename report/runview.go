package report

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"memprobe/internal/table"
	"memprobe/metric"
	"memprobe/schema"
	"memprobe/stats"
)

// The metrics the run tables show, by their registered names (package
// metric): the names a Summary's metrics and an Expectation use.
const (
	metricPeakRSS = "peak_rss_bytes"
	metricVSZ     = "final_vsz_bytes"

	metricStacksReserved = "process.at_peak.stacks_reserved_bytes"
	metricStacksResident = "process.at_peak.stacks_resident_bytes"
	metricArenasReserved = "process.at_peak.malloc_arenas_reserved_bytes"
	metricArenasResident = "process.at_peak.malloc_arenas_resident_bytes"
	metricGoHeap         = "runtime.peak.heap_live_bytes"
	metricAllocs         = "go_heap_allocs_per_step"
	metricAllocBytes     = "go_heap_alloc_bytes_per_step"
	metricTokens         = "tokens_per_sec"
)

// metricLabel is how a sentence (a claim's footnote) names a metric: its
// registered label (metric.Def.Title), its name where it has none or is
// not registered.
func metricLabel(name string) string {
	d, err := metric.Lookup(name)
	if err != nil {
		return name
	}
	return d.Title()
}

// labelled is column c headed by metric name's registered label
// (metricLabel); c says how its cells are written.
func labelled(name string, c table.Column) table.Column {
	c.Name = metricLabel(name)
	return c
}

// metricColumn is a table column of a metric's figure, named by its
// registered label (metricLabel): bytes in IEC units where its unit is
// bytes, a rate otherwise.
func metricColumn(name string) table.Column {
	if isBytes(name) {
		return table.Column{Name: metricLabel(name), Kind: table.Bytes}
	}
	return table.Column{Name: metricLabel(name), Kind: table.Rate}
}

// runView is a Run with its position in its plan.
type runView struct {
	*schema.Run
	// index is the phase's position in the plan: 0 for before, k for Pk,
	// -1 for a name of another form.
	index int
}

func newRunView(r *schema.Run) *runView {
	if r.PhaseIndex != nil { // a plan file's phase: its place in the file
		return &runView{Run: r, index: *r.PhaseIndex}
	}
	return &runView{Run: r, index: phaseIndex(r.Phase)}
}

// phaseIndex is 0 for "before", k for "Pk", and -1 otherwise.
func phaseIndex(phase string) int {
	if phase == "before" {
		return 0
	}
	if k, err := strconv.Atoi(strings.TrimPrefix(phase, "P")); err == nil && strings.HasPrefix(phase, "P") && k > 0 {
		return k
	}
	return -1
}

// label is how tables name the run: its phase, or its name outside a plan.
func (v *runView) label() string {
	if v.Phase != "" {
		return v.Phase
	}
	return v.Name
}

// ok says whether the run has figures: every repetition finished.
func (v *runView) ok() bool { return v.Status == schema.StatusOK && len(v.Repetitions) > 0 }

// summary is a metric over a run's completed repetitions.
type summary struct {
	values              []float64
	median, min, max    float64
	fromSummary, exists bool
}

// metric summarises the named metric: the Summary's figures when the run's
// summary holds it, else the repetitions' values (read through the
// registry, memprobe/metric). exists is false when no repetition has the
// metric, or no run report can (a name the registry does not know).
func (v *runView) metric(name string) summary {
	for _, m := range v.Summary.Metrics {
		if m.Name == name && m.N > 0 {
			return summary{values: m.Values, median: m.Median, min: m.Min, max: m.Max, fromSummary: true, exists: true}
		}
	}
	vals := v.values(name)
	if len(vals) == 0 {
		return summary{}
	}
	return summary{values: vals, median: stats.Median(vals), min: slices.Min(vals), max: slices.Max(vals), exists: true}
}

// values is the named metric in each repetition that measures it.
func (v *runView) values(name string) []float64 {
	d, err := metric.Lookup(name)
	if err != nil || d.Run == nil {
		return nil
	}
	var out []float64
	for i := range v.Repetitions {
		r := &v.Repetitions[i]
		if !r.Measures(name) {
			continue
		}
		if x, ok := d.Run(r); ok {
			out = append(out, x)
		}
	}
	return out
}

// RunMedian is metric name's median over a run's repetitions as the
// tables show it (runView.metric: the run's summary's where it holds the
// metric, else stats.Median of the repetitions' values, read through the
// registry); ok is false where no repetition has it.
func RunMedian(r *schema.Run, name string) (median float64, ok bool) {
	s := newRunView(r).metric(name)
	return s.median, s.exists
}

// Representative is the index of the run's repetition whose peak RSS is
// nearest its median (the first of equals): the one whose detail the
// tables show, and the HTML page's charts and flame graphs with them; -1
// when the run has no repetition.
func Representative(r *schema.Run) int { return newRunView(r).representative() }

// representative is the repetition whose peak RSS is nearest the run's
// median (the first of equals), for the tables that show one repetition's
// detail; -1 when none finished.
func (v *runView) representative() int {
	if len(v.Repetitions) == 0 {
		return -1
	}
	med := v.metric(metricPeakRSS).median
	best := 0
	for i := range v.Repetitions {
		d := math.Abs(float64(v.Repetitions[i].PeakRSSBytes) - med)
		if d < math.Abs(float64(v.Repetitions[best].PeakRSSBytes)-med) {
			best = i
		}
	}
	return best
}

// group is the runs of one plan at one sweep point, in phase order.
type group struct {
	plan  string
	point string // the sweep values, "threads=7" ("" without a sweep)
	runs  []*runView
}

// title names the group: "plan threads (threads=7)".
func (g *group) title() string {
	s := "plan " + g.plan
	if g.plan == "" {
		s = "runs outside a plan"
	}
	if g.point != "" {
		s += " (" + g.point + ")"
	}
	return s
}

// phase returns the group's run of phase index k, nil when there is none.
func (g *group) phase(k int) *runView {
	if k < 0 {
		return nil
	}
	for _, r := range g.runs {
		if r.index == k {
			return r
		}
	}
	return nil
}

// ends are the first and the last phase of the group (before and after
// when the plan ran whole); one run when the group has one.
func (g *group) ends() []*runView {
	if len(g.runs) == 0 {
		return nil
	}
	first, last := g.runs[0], g.runs[len(g.runs)-1]
	if first == last {
		return []*runView{first}
	}
	return []*runView{first, last}
}

// sweepPoint writes a run's sweep values as "a=1, b=2", axes in order.
func sweepPoint(sweep map[string]string, skip string) string {
	var parts []string
	for _, k := range sortedKeys(sweep) {
		if k != skip {
			parts = append(parts, k+"="+sweep[k])
		}
	}
	return strings.Join(parts, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// plan is a plan's runs: its groups (one per sweep point, in the order
// they first ran) and every run.
type plan struct {
	name   string
	groups []*group
	runs   []*runView
}

// main is the group the before/after detail tables are drawn from: the
// one with the most runs, the first of equals.
func (p *plan) main() *group {
	var best *group
	for _, g := range p.groups {
		if best == nil || len(g.runs) > len(best.runs) {
			best = g
		}
	}
	return best
}

// plans groups a report's runs by plan, in the order plans first ran.
func plans(rep *schema.Report) []*plan {
	var out []*plan
	byName := map[string]*plan{}
	for i := range rep.Runs {
		v := newRunView(&rep.Runs[i])
		p := byName[v.Plan]
		if p == nil {
			p = &plan{name: v.Plan}
			byName[v.Plan] = p
			out = append(out, p)
		}
		p.runs = append(p.runs, v)
		point := sweepPoint(v.Sweep, "")
		var g *group
		for _, h := range p.groups {
			if h.point == point {
				g = h
			}
		}
		if g == nil {
			g = &group{plan: v.Plan, point: point}
			p.groups = append(p.groups, g)
		}
		g.runs = append(g.runs, v)
	}
	for _, p := range out {
		for _, g := range p.groups {
			slices.SortStableFunc(g.runs, func(a, b *runView) int { return orderIndex(a.index) - orderIndex(b.index) })
		}
	}
	return out
}

// orderIndex puts phases of unknown form after the numbered ones.
func orderIndex(k int) int {
	if k < 0 {
		return math.MaxInt32
	}
	return k
}

// Plans lists the plans of a report's runs, in the order they first ran
// ("" for runs outside a plan).
func Plans(rep *schema.Report) []string {
	var names []string
	for _, p := range plans(rep) {
		names = append(names, p.name)
	}
	return names
}

// configDiff says how cur's configuration differs from prev's, field by
// field ("pathology.model_lock: true -> false"), at most two fields and a
// count of the rest; "" when they do not differ or prev is nil.
func configDiff(prev, cur *runView) string {
	if prev == nil {
		return ""
	}
	a, b := flatten(prev.Config), flatten(cur.Config)
	var diffs []string
	for _, k := range sortedKeys(b) {
		if k == "phase" || k == "plan" || a[k] == b[k] {
			continue
		}
		diffs = append(diffs, fmt.Sprintf("%s: %s -> %s", k, a[k], b[k]))
	}
	if len(diffs) > 2 {
		diffs = append(diffs[:2], fmt.Sprintf("%d more", len(diffs)-2))
	}
	return strings.Join(diffs, "; ")
}

// flatten writes a value's JSON leaves as dotted paths.
func flatten(v any) map[string]string {
	out := map[string]string{}
	b, err := json.Marshal(v)
	if err != nil {
		return out
	}
	var m any
	json.Unmarshal(b, &m)
	var walk func(prefix string, x any)
	walk = func(prefix string, x any) {
		if obj, ok := x.(map[string]any); ok {
			for k, y := range obj {
				if prefix != "" {
					k = prefix + "." + k
				}
				walk(k, y)
			}
			return
		}
		c, _ := json.Marshal(x)
		out[prefix] = string(c)
	}
	walk("", m)
	return out
}
