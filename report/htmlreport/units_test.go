package htmlreport

import (
	"testing"

	"memprobe/report"
	"memprobe/report/memplot"
	"memprobe/schema"
)

// TestChartAxesFromRegistry: a chart ticks a metric's axis by its
// registered unit (binary steps for bytes, 1-2-5 for the rest) and names
// it by its registered label; a name the registry lacks is ticked as a
// count whatever its suffix.
func TestChartAxesFromRegistry(t *testing.T) {
	var entries []report.HistoryEntry
	for _, f := range []string{"../testdata/diff-base.json", "../testdata/diff-regressed.json"} {
		rep, err := schema.ReadReport(f)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, report.HistoryEntry{Name: f, Report: rep})
	}
	for _, c := range []struct {
		metric string
		bytes  bool
	}{{"peak_rss_bytes", true}, {"go_heap_alloc_bytes_per_step", true}, {"tokens_per_sec", false}, {"step_ns_median", false}} {
		p, err := HistoryChart(entries, c.metric, "threads")
		if err != nil {
			t.Fatal(err)
		}
		_, isBytes := p.Y.Tick.Marker.(memplot.ByteTicks)
		_, isCount := p.Y.Tick.Marker.(memplot.CountTicks)
		if isBytes != c.bytes || isCount == c.bytes {
			t.Errorf("history chart of %s: y ticks %T, want bytes %v", c.metric, p.Y.Tick.Marker, c.bytes)
		}
	}
	for name, want := range map[string]struct {
		label string
		bytes bool
	}{
		"peak_rss_bytes": {"peak RSS", true},
		"tokens_per_sec": {"tokens/s", false},
		"floor_bytes":    {"floor_bytes", true},
		"made_up_bytes":  {"made_up_bytes", false},
	} {
		if l, b := metricAxis(name); l != want.label || b != want.bytes {
			t.Errorf("metricAxis(%s) = %q, %v; want %q, %v", name, l, b, want.label, want.bytes)
		}
	}
}
