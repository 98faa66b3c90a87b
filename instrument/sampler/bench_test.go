package sampler

import (
	"context"
	"testing"
	"time"
)

// BenchmarkSample is the cost of one sample of the calling process with the
// default cadences (status every sample, smaps_rollup within its budget):
// at the default 10 ms interval the sampler costs 100 × this per second of
// one core. statusEvery10 is the cheaper cadence Options.StatusEvery
// allows (statm between status reads, whose points then have no status
// fields). The calling process is small; on a large one the smaps_rollup
// part grows, and the budget caps it.
func BenchmarkSample(b *testing.B) {
	for _, c := range []struct {
		name        string
		statusEvery int
	}{{"default", 0}, {"statusEvery10", 10}} {
		b.Run(c.name, func(b *testing.B) {
			s, err := New(Options{Interval: time.Hour, StatusEvery: c.statusEvery})
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
		})
	}
}
