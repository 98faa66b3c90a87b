package outside

import (
	"io"
	"slices"
	"testing"
	"time"

	"memprobe/schema"
)

// The tests of this file come from a new user's first runs of probe exec
// and probe attach (issue 28): each is a fault they met.

// finding is the diagnosis line of a topic; nil when there is none.
func finding(p *schema.Process, topic string) *schema.Finding {
	i := slices.IndexFunc(p.Diagnosis, func(d schema.Finding) bool { return d.Topic == topic })
	if i < 0 {
		return nil
	}
	return &p.Diagnosis[i]
}

// peakWalkRun runs testdata/cprogs/peak.c (256 MiB, keeping 16 MiB)
// under Exec: it grows only once the first walk is taken, and frees most
// of its peak once the test lets it. With the walks at new highs, the
// test waits for one at the peak (the 20 s of waitFor bound a failure
// only); without them (planted), the program is let go after five loop
// ticks at its peak, and no walk of the session's own sees the peak
// (SmapsEvery is an hour). Then the end walk, at 16 MiB.
func peakWalkRun(t *testing.T, planted bool) *schema.Result {
	t.Helper()
	o := Options{SmapsEvery: time.Hour, noHighWalks: planted}
	h := execHeld(t, o, nil, cprog(t, "peak"), "256", "16")
	h.waitLine(t, "ready")
	walks := func() int { h.s.mu.Lock(); defer h.s.mu.Unlock(); return h.s.walks }
	waitFor(t, "the first walk", func() bool { return walks() >= 1 })
	io.WriteString(h.stdin, "grow\n")
	h.waitLine(t, "peak")
	waitFor(t, "the sampler to see the peak", func() bool { return h.s.smp.Peek().Peaks.RSSBytes >= 256<<20 })
	if planted {
		time.Sleep(5 * h.s.tick())
	} else {
		waitFor(t, "a walk at the peak", func() bool {
			h.s.mu.Lock()
			defer h.s.mu.Unlock()
			return h.s.peak != nil && h.s.peak.Reconciliation.RSSBytes >= 240<<20
		})
	}
	io.WriteString(h.stdin, "free\n")
	h.waitLine(t, "freed")
	waitFor(t, "the sampler to see the release", func() bool {
		r := h.s.smp.Peek()
		n := len(r.Timeline)
		return n > 0 && r.Timeline[n-1].RSSBytes < 64<<20
	})
	return h.release(t)
}

// TestWalkAtPeak: a short program's breakdown was taken at 1.50 s during
// its teardown (RSS 193.8 MiB, 95 % unexplained) while it had peaked at
// 314.4 MiB at 0.50 s. With the walks at new highs, the breakdown's RSS
// is within 10 % of the peak and the diagnosis says nothing of a gap;
// without them (the old behaviour, planted), the breakdown is the first
// walk's, far below the peak, and the diagnosis says by how much.
func TestWalkAtPeak(t *testing.T) {
	r := peakWalkRun(t, false)
	p := r.Process
	peak := float64(p.Timeline.PeakRSSBytes)
	walked := float64(p.AtPeak.Reconciliation.RSSBytes)
	if walked < 0.9*peak {
		t.Errorf("breakdown at RSS %.0f MiB, peak %.0f MiB: want within 10 %%\n%s", walked/(1<<20), peak/(1<<20), render(t, r))
	}
	if f := finding(p, "peak-walk"); f != nil {
		t.Errorf("a walk at the peak, yet the diagnosis says %q", f.Text)
	}

	r = peakWalkRun(t, true)
	p = r.Process
	walked = float64(p.AtPeak.Reconciliation.RSSBytes)
	if walked > 0.5*float64(p.Timeline.PeakRSSBytes) {
		t.Errorf("planted (no walks at new highs): breakdown at RSS %.0f MiB of a %.0f MiB peak, want the early walk's, below half",
			walked/(1<<20), float64(p.Timeline.PeakRSSBytes)/(1<<20))
	}
	f := finding(p, "peak-walk")
	if f == nil {
		t.Fatalf("planted: the breakdown is far from the peak and the diagnosis says nothing\n%s", render(t, r))
	}
	gap := float64(max(p.VmHWMBytes, p.Timeline.PeakRSSBytes)) - walked
	if f.Metric != "peak_walk_gap_bytes" || f.Value != gap || f.Value < 200<<20 {
		t.Errorf("planted: finding %+v, want peak_walk_gap_bytes = %.0f (over 200 MiB)", f, gap)
	}
	t.Logf("planted: %s", f.Text)
}
