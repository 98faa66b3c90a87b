package report

import (
	"slices"
	"testing"

	"memprobe/internal/table"
	"memprobe/metric"
)

// TestUnitsFromRegistry: how a value is written follows the metric's
// registered unit, not its name: a name the registry lacks is a plain
// number even where it ends in _bytes or _ns.
func TestUnitsFromRegistry(t *testing.T) {
	for _, c := range []struct {
		name string
		x    float64
		want string
	}{
		{"peak_rss_bytes", 3 << 20, "3 MiB"},
		{"go_heap_alloc_bytes_per_step", 2048, "2 KiB"},
		{"tokens_per_sec", 12345, "12,345"},
		{"made_up_bytes", 2048, "2,048"},
	} {
		if got := formatValue(c.name, c.x); got != c.want {
			t.Errorf("formatValue(%s, %v) = %q, want %q", c.name, c.x, got, c.want)
		}
	}
	if got, want := formatMetric("step_ns_median", 1.5e9, false), "1.50 s"; got != want {
		t.Errorf("step_ns_median: %q, want %q", got, want)
	}
	if got, want := formatMetric("made_up_ns", 1.5e9, false), "1500000000"; got != want {
		t.Errorf("an unregistered _ns name: %q, want %q (no unit known)", got, want)
	}
}

// TestLabelsFromRegistry: sentences and column headers name a metric by
// its registered label (metric.Def.Label): a labelled metric by its
// label, a registered one without a label and an unregistered name by
// the name itself; the phase table's figure columns are headed by their
// metrics' labels.
func TestLabelsFromRegistry(t *testing.T) {
	for name, want := range map[string]string{
		"peak_rss_bytes":               "peak RSS",
		"runtime.peak.heap_live_bytes": "peak Go heap",
		"step_ns_median":               "step time",
		"max_rss_bytes":                "max_rss_bytes",
		"made_up_bytes":                "made_up_bytes",
	} {
		if got := metricLabel(name); got != want {
			t.Errorf("metricLabel(%s) = %q, want %q", name, got, want)
		}
	}
	for _, c := range []struct {
		col  table.Column
		name string
		kind table.Kind
	}{
		{colRSS, metricPeakRSS, table.Bytes}, {colVSZ, metricVSZ, table.Bytes}, {colHeap, metricGoHeap, table.Bytes},
		{colAllocs, metricAllocs, table.Rate}, {colTokens, metricTokens, table.Rate},
	} {
		d, err := metric.Lookup(c.name)
		if err != nil || d.Label == "" || c.col.Name != d.Label || c.col.Kind != c.kind {
			t.Errorf("column of %s: %q (%v), want its label %q (%v)", c.name, c.col.Name, c.col.Kind, d.Label, c.kind)
		}
	}
}

// TestDecodeColumnsFromRegistry: the decode modes table heads a metric's
// column with its registered label.
func TestDecodeColumnsFromRegistry(t *testing.T) {
	tb, err := decodeModesTable(fakeDecodeRecords(true))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range tb.Columns {
		names = append(names, c.Name)
	}
	for _, m := range []string{"tokens_per_sec", "syncs_per_token", "launches_per_token", "host_wait_ns_per_token", "device_busy_pct", "host_allocs_per_token", "device_peak_bytes"} {
		d, err := metric.Lookup(m)
		if err != nil || d.Label == "" || !slices.Contains(names, d.Label) {
			t.Errorf("%s: label %q, not among the columns %q", m, d.Label, names)
		}
	}
}
