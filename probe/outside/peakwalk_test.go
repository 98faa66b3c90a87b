package outside

import (
	"testing"

	"memprobe/schema"
)

// TestBetterPeak: which walk is the peak view. Each case is a walk taken
// after the peak view's; whole is a walk whose status and smaps agree.
func TestBetterPeak(t *testing.T) {
	whole := func(rss int64) *schema.Reconciliation {
		return &schema.Reconciliation{RSSBytes: rss, SmapsRSSBytes: rss, VSZBytes: 1 << 30, SmapsSizeBytes: 1 << 30}
	}
	// Status read mid-exit, after smaps: pages freed, mappings still there
	// (TestThreads63 under load: VmRSS 56 MiB below smaps).
	exiting := &schema.Reconciliation{RSSBytes: 10 << 20, SmapsRSSBytes: 66 << 20, VSZBytes: 1 << 30, SmapsSizeBytes: 1 << 30}
	// smaps read in pieces as mappings went: a mapping listed twice.
	unmapping := &schema.Reconciliation{RSSBytes: 66 << 20, SmapsRSSBytes: 106 << 20, VSZBytes: 1 << 30, SmapsSizeBytes: 1<<30 + 40<<20}
	// Read while the program still mapped its stacks: smaps saw part,
	// status (after) all.
	growing := &schema.Reconciliation{RSSBytes: 66 << 20, SmapsRSSBytes: 50 << 20, VSZBytes: 1 << 30, SmapsSizeBytes: 1<<30 - 300<<20}
	// Status within the per-CPU batching of smaps: not shrunk.
	batched := &schema.Reconciliation{RSSBytes: 66<<20 - 256<<10, SmapsRSSBytes: 66 << 20, VSZBytes: 1 << 30, SmapsSizeBytes: 1 << 30}
	for _, c := range []struct {
		name    string
		w, peak *schema.Reconciliation
		want    bool
	}{
		{"more seen", whole(70 << 20), whole(66 << 20), true},
		{"less seen", whole(60 << 20), whole(66 << 20), false},
		{"equal: the later", whole(66 << 20), whole(66 << 20), true},
		{"exiting after a whole walk", exiting, whole(66 << 20), false},
		{"unmapping after a whole walk, more seen", unmapping, whole(66 << 20), false},
		{"a whole walk after an exiting one, less seen", whole(60 << 20), exiting, true},
		{"a whole walk after an unmapping one, less seen", whole(66 << 20), unmapping, true},
		{"equal seen: whole over growing", whole(50 << 20), growing, true},
		{"equal seen: growing not over whole", growing, whole(50 << 20), false},
		{"growing, more seen", growing, whole(40 << 20), true},
		{"batched VmRSS is no shrinking", batched, whole(60 << 20), true},
	} {
		if got := betterPeak(c.w, c.peak); got != c.want {
			t.Errorf("%s: betterPeak %v, want %v", c.name, got, c.want)
		}
	}
}
