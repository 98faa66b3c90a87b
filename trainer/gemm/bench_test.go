package gemm

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchShapes are the model's products and a square reference.
var benchShapes = []shape{
	{128, 768, 256}, {128, 1024, 256}, {128, 256, 1024}, {128, 788, 256}, {128, 128, 32},
	{512, 512, 512},
}

// naiveMaxFlops keeps the triple loop (about 1 GFLOPS) to shapes that take
// well under a second per call.
const naiveMaxFlops = 1e8

// BenchmarkSgemm times C = A*Bᵀ + 0*C, the trainer's forward product
// (out = inp · weightᵀ), for every backend compiled in, reporting GFLOPS
// (2·m·n·k per call) and allocations per call.
func BenchmarkSgemm(b *testing.B) {
	for _, be := range backends(b) {
		for _, s := range benchShapes {
			flops := 2 * float64(s.m) * float64(s.n) * float64(s.k)
			if be.Name() == "naive" && flops > naiveMaxFlops {
				continue
			}
			b.Run(fmt.Sprintf("%s/%v", be.Name(), s), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, 2))
				a, w, c := randSlice(rng, s.m*s.k), randSlice(rng, s.n*s.k), randSlice(rng, s.m*s.n)
				b.ReportAllocs()
				for b.Loop() {
					be.Sgemm(false, true, s.m, s.n, s.k, 1, a, s.k, w, s.k, 0, c, s.n)
				}
				b.ReportMetric(flops*float64(b.N)/float64(b.Elapsed().Nanoseconds()), "GFLOPS")
			})
		}
	}
}

func randSlice(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = 2*rng.Float32() - 1
	}
	return x
}
