package gemm

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
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

// BenchmarkDecodeHead times one token's logits: a row of activations
// against the LM head, C(1×V) = h · wteᵀ, the product the per-token decode
// modes make for every position; at the seed (V 788, C 256) and at GPT-2
// small's head (V 50257, C 768: 147 MiB of weights read per call, so
// memory bandwidth bounds it). GB/s counts the head's bytes read per
// second.
func BenchmarkDecodeHead(b *testing.B) {
	for _, s := range []shape{{1, 788, 256}, {1, 50257, 768}} {
		for _, be := range backends(b) {
			if be.Name() == "naive" && s.n > 1000 {
				continue
			}
			b.Run(fmt.Sprintf("%s/%v", be.Name(), s), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, 2))
				h, wte, logits := randSlice(rng, s.k), randSlice(rng, s.n*s.k), make([]float32, s.n)
				b.ReportAllocs()
				for b.Loop() {
					be.Sgemm(false, true, 1, s.n, s.k, 1, h, s.k, wte, s.k, 0, logits, s.n)
				}
				b.ReportMetric(4*float64(s.n)*float64(s.k)*float64(b.N)/float64(b.Elapsed().Nanoseconds()), "GB/s")
			})
		}
	}
}

// BenchmarkSgemmParallel is the machine's sgemm ceiling: GOMAXPROCS
// goroutines (set it with -cpu) each compute their own square C = A*Bᵀ +
// 0*C at once, every backend single-threaded inside a call as the trainer
// uses it; GFLOPS is their sum over the wall time. At -cpu 2 with openblas
// it is the "2-thread sgemm GFLOPS" that scripts/bench-trainer.sh sets the
// trainer's whole step against.
func BenchmarkSgemmParallel(b *testing.B) {
	for _, be := range backends(b) {
		if be.Name() == "naive" || be.Name() == "gonum" {
			continue // the triple loop is far off; gonum starts goroutines of its own
		}
		for _, n := range []int{512, 1024} {
			b.Run(fmt.Sprintf("%s/%v", be.Name(), shape{n, n, n}), func(b *testing.B) {
				flops := 2 * float64(n) * float64(n) * float64(n)
				var seed atomic.Uint64
				b.RunParallel(func(pb *testing.PB) {
					rng := rand.New(rand.NewPCG(seed.Add(1), 2))
					a, w, c := randSlice(rng, n*n), randSlice(rng, n*n), randSlice(rng, n*n)
					for pb.Next() {
						be.Sgemm(false, true, n, n, n, 1, a, n, w, n, 0, c, n)
					}
				})
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

// product is one Sgemm call of the seed model's forward or backward pass,
// with its operand layout: lda, ldb, ldc as the trainer passes them.
type product struct {
	name           string
	transA, transB bool
	m, n, k        int
	lda, ldb, ldc  int
	beta           float32
	perSeq         int // calls per sequence (layers × heads where it applies)
}

func (p product) flops() float64 { return 2 * float64(p.m) * float64(p.n) * float64(p.k) }

// seedProducts are the dense products of one seed-preset sequence (T=128,
// C=256, FF=1024, V=788, L=6), with the layouts the trainer passes.
var seedProducts = []product{
	{"fwd/qkv", false, true, 128, 768, 256, 256, 256, 768, 1, 6},
	{"fwd/attproj", false, true, 128, 256, 256, 256, 256, 256, 1, 6},
	{"fwd/fc", false, true, 128, 1024, 256, 256, 256, 1024, 1, 6},
	{"fwd/fcproj", false, true, 128, 256, 1024, 1024, 1024, 256, 1, 6},
	{"fwd/head", false, true, 128, 788, 256, 256, 256, 788, 0, 1},
	{"bwd/head.dinp", false, false, 128, 256, 788, 788, 256, 256, 0, 1},
	{"bwd/head.dw", true, false, 788, 256, 128, 788, 256, 256, 0, 1},
	{"bwd/fcproj.dinp", false, false, 128, 1024, 256, 256, 1024, 1024, 0, 6},
	{"bwd/fcproj.dw", true, false, 256, 1024, 128, 256, 1024, 1024, 1, 6},
	{"bwd/fc.dinp", false, false, 128, 256, 1024, 1024, 256, 256, 0, 6},
	{"bwd/fc.dw", true, false, 1024, 256, 128, 1024, 256, 256, 1, 6},
	{"bwd/attproj.dinp", false, false, 128, 256, 256, 256, 256, 256, 0, 6},
	{"bwd/attproj.dw", true, false, 256, 256, 128, 256, 256, 256, 1, 6},
	{"bwd/qkv.dinp", false, false, 128, 256, 768, 768, 256, 256, 0, 6},
	{"bwd/qkv.dw", true, false, 768, 256, 128, 768, 256, 256, 1, 6},
}

// seedAttentionProducts are the attention products of one seed sequence
// (NH=8 heads of hs=32, L=6) as nn's causal kernels call them with blocks of
// bs rows: per block, forward preatt (NT) and att·V (NN); backward datt (NT)
// and dQ (NN) by row block, dV and dK (TN) by column block. bs = T gives the
// full T×T square.
func seedAttentionProducts(bs int) []product {
	const T, C, hs, calls = 128, 256, 32, 6 * 8
	var ps []product
	for r0 := 0; r0 < T; r0 += bs {
		r1 := min(r0+bs, T)
		m := r1 - r0
		ps = append(ps,
			product{"fwd/att.qk", false, true, m, r1, hs, 3 * C, 3 * C, T, 0, calls},
			product{"fwd/att.v", false, false, m, hs, r1, T, 3 * C, C, 0, calls},
			product{"bwd/att.datt", false, true, m, r1, hs, C, 3 * C, T, 0, calls},
			product{"bwd/att.dq", false, false, m, hs, r1, T, 3 * C, 3 * C, 0, calls},
			product{"bwd/att.dv", true, false, m, hs, T - r0, T, C, 3 * C, 0, calls},
			product{"bwd/att.dk", true, false, m, hs, T - r0, T, 3 * C, 3 * C, 0, calls},
		)
	}
	return ps
}

func (p product) operands(rng *rand.Rand) (a, b, c []float32) {
	ar, br := p.m, p.k
	if p.transA {
		ar = p.k
	}
	if p.transB {
		br = p.n
	}
	return randSlice(rng, ar*p.lda), randSlice(rng, br*p.ldb), randSlice(rng, p.m*p.ldc)
}

// BenchmarkSeedProducts times each dense product of a seed-preset sequence
// on one core (GFLOPS over the wall time, cpu-GFLOPS over the process's CPU
// time, which a busy machine disturbs less), then "sequence/block=bs": all the products of one sequence's
// forward and backward (perSeq calls each, attention in causal blocks of bs
// rows; 32 is what nn uses, 128 the full square). It reports GFLOPS of the
// products computed and "ceiling-tokens/s": 2·T/(time per sequence), the
// tokens/s of two cores that did nothing but these products, and
// "cpu-ms/seq", the CPU time per sequence (getrusage), which other processes
// on a shared machine inflate less than the wall time. That is the
// GEMM ceiling the trainer's achieved figure is compared with. Run with
// -tags openblas.
func BenchmarkSeedProducts(b *testing.B) {
	for _, be := range backends(b) {
		if be.Name() == "naive" {
			continue
		}
		for _, p := range seedProducts {
			b.Run(be.Name()+"/"+p.name+"/"+transName(p.transA, p.transB)+"/"+shape{p.m, p.n, p.k}.String(), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, 2))
				x, y, z := p.operands(rng)
				cpu0 := cpuTime()
				for b.Loop() {
					be.Sgemm(p.transA, p.transB, p.m, p.n, p.k, 1, x, p.lda, y, p.ldb, p.beta, z, p.ldc)
				}
				b.ReportMetric(p.flops()*float64(b.N)/float64(b.Elapsed().Nanoseconds()), "GFLOPS")
				b.ReportMetric(p.flops()*float64(b.N)/float64((cpuTime()-cpu0).Nanoseconds()), "cpu-GFLOPS")
			})
		}
		for _, bs := range []int{32, 128} {
			if testing.Short() && bs != 32 {
				continue
			}
			b.Run(fmt.Sprintf("%s/sequence/block=%d", be.Name(), bs), func(b *testing.B) {
				ps := append(append([]product(nil), seedProducts...), seedAttentionProducts(bs)...)
				rng := rand.New(rand.NewPCG(1, 2))
				ops := make([][3][]float32, len(ps))
				var flops float64
				for i, p := range ps {
					x, y, z := p.operands(rng)
					ops[i] = [3][]float32{x, y, z}
					flops += p.flops() * float64(p.perSeq)
				}
				cpu0 := cpuTime()
				for b.Loop() {
					for i, p := range ps {
						for range p.perSeq {
							be.Sgemm(p.transA, p.transB, p.m, p.n, p.k, 1, ops[i][0], p.lda, ops[i][1], p.ldb, p.beta, ops[i][2], p.ldc)
						}
					}
				}
				ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
				cpuNs := float64((cpuTime() - cpu0).Nanoseconds()) / float64(b.N)
				b.ReportMetric(flops/ns, "GFLOPS")
				b.ReportMetric(2*128/(ns*1e-9), "ceiling-tokens/s")
				b.ReportMetric(cpuNs/1e6, "cpu-ms/seq")
				b.ReportMetric(flops/cpuNs, "cpu-GFLOPS")
			})
		}
	}
}

// cpuTime is the user plus system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
