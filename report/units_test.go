package report

import "testing"

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
