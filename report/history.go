package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"time"

	"memprobe/internal/table"
	"memprobe/schema"
)

// HistoryEntry is one run report of a history (`probe history DIR`).
type HistoryEntry struct {
	// Name labels the report's row (its file name); ModTime is the file's
	// time, the order of last resort.
	Name    string
	ModTime time.Time
	Report  *schema.Report
}

// When is the time that orders e: its environment's commit time when
// recorded, else its start time, else the file's time.
func (e *HistoryEntry) When() time.Time {
	for _, s := range []string{e.Report.Environment.VCSTime, e.Report.StartTime} {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			return t
		}
	}
	return e.ModTime
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
		if a.Report.StartTime != b.Report.StartTime {
			return cmp.Compare(a.Report.StartTime, b.Report.StartTime)
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return es
}

// WriteHistory renders one row per report, oldest first (SortedHistory): its commit and time and, for each configuration of
// plan (all when ""), the metric's median with an arrow where it changed
// significantly from the previous report that ran the configuration (↑
// up, ↓ down; the test and alpha of Compare, exact for deterministic
// metrics), "~" where it did not.
func WriteHistory(w io.Writer, entries []HistoryEntry, metric, plan string, f table.Format) error {
	if _, err := table.ParseFormat(string(f)); err != nil {
		return err
	}
	es := SortedHistory(entries)
	var keys []string
	for _, e := range es {
		for i := range e.Report.Runs {
			r := &e.Report.Runs[i]
			if k := ConfigKey(r); (plan == "" || r.Plan == plan) && !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	if len(keys) == 0 {
		return fmt.Errorf("history: no configuration of plan %q in %d reports", plan, len(es))
	}
	cols := []table.Column{{Name: "report"}, {Name: "commit"}, {Name: "time"}}
	for _, k := range keys {
		cols = append(cols, table.Column{Name: k, Align: table.Right})
	}
	t := table.New(metric+" by report, oldest first; ↑ ↓ a significant change from the report before, ~ none", cols...)
	prev := map[string][]float64{}
	for _, e := range es {
		commit := e.Report.Environment.VCSRevision
		commit = commit[:min(len(commit), 12)]
		if e.Report.Environment.VCSModified {
			commit += "+"
		}
		row := []any{e.Name, commit, e.When().UTC().Format(time.RFC3339)}
		runs, _ := index(e.Report)
		for _, k := range keys {
			v := find(runs, k)
			if v == nil || !v.ok() {
				row = append(row, nil)
				continue
			}
			s := v.metric(metric)
			if !s.exists {
				row = append(row, nil)
				continue
			}
			cell := formatValue(metric, sideOf(s.values).Median)
			if p, ok := prev[k]; ok {
				d := diffValues(metric, p, s.values, DeterministicMetrics[metric], DefaultAlpha, nil)
				switch {
				case !d.Significant:
					cell += " ~"
				case d.Delta > 0:
					cell += " ↑"
				default:
					cell += " ↓"
				}
			}
			prev[k] = s.values
			row = append(row, cell)
		}
		t.Add(row...)
	}
	return t.Render(w, f)
}
