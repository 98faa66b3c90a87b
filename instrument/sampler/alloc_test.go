package sampler

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// TestSampleNoAllocs checks that a sample of the calling process allocates
// nothing on Linux, smaps_rollup readings included: the job runs the sampler
// beside the training loop and derives allocations per step from the
// process-wide counters.
func TestSampleNoAllocs(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("gopsutil allocates; only the Linux path is allocation-free")
	}
	s, err := New(Options{Interval: time.Hour, SmapsEvery: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if n := testing.AllocsPerRun(200, func() { s.sample(ctx) }); n != 0 {
		t.Errorf("a sample allocates %v times, want 0", n)
	}
	r, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, r, DefaultMaxPoints)
}

// TestSmapsBudget checks the cap on smaps_rollup reads: with a budget no
// read can meet, only the first sample reads it; without a cap, every
// SmapsEvery-th sample does.
func TestSmapsBudget(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("smaps_rollup is Linux only")
	}
	for _, tc := range []struct {
		budget float64
		every  int
		want   func(samples int) int
	}{
		{1e-12, 1, func(int) int { return 1 }},
		{-1, 1, func(n int) int { return n }},
		{-1, 3, func(n int) int { return (n + 2) / 3 }},
	} {
		s, err := New(Options{Interval: time.Hour, SmapsEvery: tc.every, SmapsBudget: tc.budget})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		for range 9 {
			s.sample(context.Background())
		}
		r, err := s.Stop() // 1 + 9 + 1 samples
		if err != nil {
			t.Fatal(err)
		}
		if r.Samples != 11 || r.SmapsSamples != tc.want(r.Samples) {
			t.Errorf("budget %g every %d: %d smaps reads in %d samples, want %d", tc.budget, tc.every, r.SmapsSamples, r.Samples, tc.want(r.Samples))
		}
	}
}
