package report

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"time"

	"memprobe/internal/table"
	"memprobe/metric"
	"memprobe/schema"
	"memprobe/stats"
)

// HistoryEntry is one file of a history (`probe history DIR`): a run
// report (or a job result read as one), or a decode result.
type HistoryEntry struct {
	// Name labels the entry's row (its file name); ModTime is the file's
	// time, the order of last resort.
	Name    string
	ModTime time.Time
	// Report is the run report; Decode, when Report is nil, the records
	// of a decode result (probe decode --json, one per mode).
	Report *schema.Report
	Decode []schema.DecodeRecord
}

// environment is the build and machine the entry measured.
func (e *HistoryEntry) environment() schema.Environment {
	if e.Report == nil && len(e.Decode) > 0 {
		return e.Decode[0].Environment
	}
	if e.Report == nil {
		return schema.Environment{}
	}
	return e.Report.Environment
}

// startTime is when the entry's run began (RFC 3339), "" unknown.
func (e *HistoryEntry) startTime() string {
	if e.Report == nil && len(e.Decode) > 0 {
		return e.Decode[0].StartTime
	}
	if e.Report == nil {
		return ""
	}
	return e.Report.StartTime
}

// When is the time that orders e: its environment's commit time when
// recorded, else its start time, else the file's time.
func (e *HistoryEntry) When() time.Time {
	for _, s := range []string{e.environment().VCSTime, e.startTime()} {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			return t
		}
	}
	return e.ModTime
}

// Commit is the entry's commit as the history labels it: the first 12
// digits, "+" when the tree was modified; "" unknown.
func (e *HistoryEntry) Commit() string {
	env := e.environment()
	c := env.VCSRevision
	c = c[:min(len(c), 12)]
	if env.VCSModified {
		c += "+"
	}
	return c
}

// SortedHistory returns a copy of entries oldest first: by When, then
// start time, then name. WriteHistory's rows and htmlreport's history
// chart are in this order.
func SortedHistory(entries []HistoryEntry) []HistoryEntry {
	es := slices.Clone(entries)
	slices.SortStableFunc(es, func(a, b HistoryEntry) int {
		if c := a.When().Compare(b.When()); c != 0 {
			return c
		}
		if a.startTime() != b.startTime() {
			return cmp.Compare(a.startTime(), b.startTime())
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return es
}

// rows are the entry's configurations: its runs or its decode records.
func (e *HistoryEntry) rows() *Rows {
	if e.Report != nil {
		return ReportRows(e.Report)
	}
	return DecodeRows(e.Decode)
}

// historyCell is one configuration's metric in one entry.
type historyCell struct {
	// shown is the figure the history prints and draws: a run's median
	// over its repetitions, a decode record's own figure (tokens/s over
	// all its passes, or the median of its pooled runs).
	shown float64
	// row is the configuration the cell is of: compareCells compares two.
	row *Row
}

// historyColumns are the columns of a history of metric name over es,
// sorted: each configuration's key (of plan, "" for all) in order of
// first appearance, and per entry, per key, its cell (absent: the entry
// did not run the configuration, it did not finish, or it has no such
// metric). The
// entries are rows of one kind: run reports or decode results, which the
// history does not mix.
func historyColumns(es []HistoryEntry, name, plan string) (keys []string, cells []map[string]historyCell, err error) {
	decode := slices.ContainsFunc(es, func(e HistoryEntry) bool { return e.Report == nil })
	if decode && slices.ContainsFunc(es, func(e HistoryEntry) bool { return e.Report != nil }) {
		return nil, nil, fmt.Errorf("history: %d of %d files are decode results, the rest run reports: a history follows one kind", countDecode(es), len(es))
	}
	kind := metric.Run
	if decode {
		kind = metric.Decode
		if plan != "" && plan != "decode" {
			return nil, nil, fmt.Errorf("history: --plan %s: decode results are of plan decode", plan)
		}
	}
	short := decode && oneDecodeSetting(es)
	cells = make([]map[string]historyCell, len(es))
	var all []*Row
	for i := range es {
		cells[i] = map[string]historyCell{}
		for _, r := range es[i].rows().All {
			if plan != "" && r.Plan != plan {
				continue
			}
			all = append(all, r)
			k := r.Key
			if short {
				k = r.Mode
			}
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
			c, ok := cellOf(r, name)
			if _, seen := cells[i][k]; ok && !seen {
				cells[i][k] = c // the first of a key that repeats, as Compare takes
			}
		}
	}
	measured := func(m string) bool {
		return slices.ContainsFunc(all, func(r *Row) bool { return r.measures(m) })
	}
	if err := checkHistoryMetric(keys, name, kind.String(), metric.Defaults(kind), measured); err != nil {
		return nil, nil, err
	}
	return keys, cells, nil
}

// checkHistoryMetric refuses a metric that no configuration (of keys,
// finished or not) measured: a history of it would be a table of dashes.
// No configurations is WriteHistory's error, not this one.
func checkHistoryMetric(keys []string, metric, kind string, defaults []string, measured func(string) bool) error {
	if len(keys) == 0 {
		return nil
	}
	err := checkMeasured(DiffOptions{Metrics: []string{metric}}, kind, defaults, measured)
	if ue, ok := errors.AsType[*UnmeasuredError](err); ok {
		ue.Inputs = "the history"
	}
	return err
}

func countDecode(es []HistoryEntry) int {
	n := 0
	for _, e := range es {
		if e.Report == nil {
			n++
		}
	}
	return n
}

// oneDecodeSetting says whether every decode record of es has the same
// device, shape and probs, and each mode one value of pinned_host (which
// follows the mode within a run: mixedPinned), so that its mode alone
// names its column.
func oneDecodeSetting(es []HistoryEntry) bool {
	var first map[string]string
	var recs []*schema.DecodeRecord
	for _, e := range es {
		for i := range e.Decode {
			recs = append(recs, &e.Decode[i])
			s := decodeSetting(&e.Decode[i])
			delete(s, "pinned_host")
			if first == nil {
				first = s
			} else if !maps.Equal(first, s) {
				return false
			}
		}
	}
	return !mixedPinned(recs)
}

// cellOf is a row's metric m: a finished run's median over its
// repetitions; a decode record's own figure (the median of its samples
// where it has no figure of that name).
func cellOf(r *Row, m string) (historyCell, bool) {
	if r.rec == nil {
		vals, _, ok := r.values(m, false)
		return historyCell{shown: sideOf(vals).Median, row: r}, ok && r.ok()
	}
	shown, ok := r.rec.figure(m)
	if !ok {
		vals, _, ok := r.values(m, true)
		if !ok {
			return historyCell{}, false
		}
		shown = stats.Median(vals)
	}
	return historyCell{shown: shown, row: r}, true
}

// compareCells is the change from prev to cur, as probe diff compares
// two rows (compareMetric): a run's repetitions by the U test, or exactly
// for a deterministic metric where two or more a side agree; two decode
// records over their runs or passes.
func compareCells(m string, prev, cur historyCell) MetricDiff {
	r, _, _ := compareMetric(m, prev.row, cur.row, DefaultAlpha)
	return r
}

// HistoryMedians is what `probe history --chart` draws: the entries oldest
// first (SortedHistory), the configurations' keys (of plan, "" for all)
// and, per key, per entry, the figure the history prints (NaN where the
// entry has none).
func HistoryMedians(entries []HistoryEntry, metric, plan string) (sorted []HistoryEntry, keys []string, values map[string][]float64, err error) {
	es := SortedHistory(entries)
	keys, cells, err := historyColumns(es, metric, plan)
	if err != nil {
		return nil, nil, nil, err
	}
	values = map[string][]float64{}
	for _, k := range keys {
		values[k] = make([]float64, len(es))
		for i := range es {
			values[k][i] = math.NaN()
			if c, ok := cells[i][k]; ok {
				values[k][i] = c.shown
			}
		}
	}
	return es, keys, values, nil
}

// WriteHistory renders one row per entry, oldest first (SortedHistory):
// its commit and time and, for each configuration of plan (all when ""),
// the metric's figure with an arrow where it changed significantly from
// the previous entry that has the configuration (↑ up, ↓ down: what
// probe diff of the two entries calls significant, compareMetric), "~"
// where it did not, a change the U test cannot judge at the repetitions
// given included. Run reports' configurations are their plans' phases,
// compared over their repetitions, exactly for a deterministic metric
// where two or more a side agree; decode results' are their modes,
// compared over their runs where both pooled several, else over their
// passes.
func WriteHistory(w io.Writer, entries []HistoryEntry, metric, plan string, f table.Format) error {
	if _, err := table.ParseFormat(string(f)); err != nil {
		return err
	}
	es := SortedHistory(entries)
	keys, cells, err := historyColumns(es, metric, plan)
	if err != nil {
		return err
	}
	if len(keys) == 0 {
		return fmt.Errorf("history: no configuration of plan %q in %d %s", plan, len(es), plural(len(es), "report", "reports"))
	}
	// Text and markdown show a value and its trend in one cell; CSV, for
	// programs, the exact value (bytes as integers, no digit groups) in
	// one column and the trend in the next.
	csv := f == table.CSV
	cols := []table.Column{{Name: "report"}, {Name: "commit"}, {Name: "time"}}
	for _, k := range keys {
		if csv {
			// Decimals -1: the shortest exact form, so bytes are
			// integers and a median between two runs keeps its half.
			cols = append(cols, table.Column{Name: k, Kind: table.Float, Decimals: -1}, table.Column{Name: k + " change"})
			continue
		}
		cols = append(cols, table.Column{Name: k, Align: table.Right})
	}
	t := table.New(metric+" by report, oldest first; ↑ ↓ a significant change from the report before, ~ none", cols...)
	prev := map[string]historyCell{}
	for i, e := range es {
		row := []any{e.Name, e.Commit(), e.When().UTC().Format(time.RFC3339)}
		for _, k := range keys {
			c, ok := cells[i][k]
			if !ok {
				row = append(row, nil)
				if csv {
					row = append(row, nil)
				}
				continue
			}
			trend := ""
			if p, ok := prev[k]; ok {
				d := compareCells(metric, p, c)
				switch {
				case !d.Significant:
					trend = "~"
				case d.Delta > 0:
					trend = "↑"
				default:
					trend = "↓"
				}
			}
			prev[k] = c
			switch {
			case csv:
				row = append(row, c.shown, trend)
			case trend != "":
				row = append(row, formatValue(metric, c.shown)+" "+trend)
			default:
				row = append(row, formatValue(metric, c.shown))
			}
		}
		t.Add(row...)
	}
	return t.Render(w, f)
}
