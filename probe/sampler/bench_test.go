package sampler

import (
	"context"
	"testing"
	"time"
)

// BenchmarkSample is the cost of one sample of the calling process with the
// default cadences (statm every sample, status every tenth, smaps_rollup
// within its budget): at the default 10 ms interval the sampler costs 100 ×
// this per second of one core. The calling process is small; on a large
// one the smaps_rollup part grows, and the budget caps it.
func BenchmarkSample(b *testing.B) {
	s, err := New(Options{Interval: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer s.Stop()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := s.sample(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
