package gemm

import "memprobe/trainer/gemm/avx512"

// AVX512 is the backend of package avx512's kernel: 8×48 tiles of 16-lane
// AVX-512F multiply-adds over operands read where they lie (op(A)) or
// copied into a stack panel (op(B)), chosen at run time where the CPU has
// AVX-512F. BenchmarkSeedProducts compares it with avx2 and openblas on the
// trainer's products, docs/benchmarks.md ("GEMM backends on the seed
// step's products") has the figures.
//
// Coverage: NT products of fewer than 4 rows, whole or as the rows below
// the tiles, run in avx2's dot form (avx2.DotForm; 16 lanes would not read
// memory faster). NN, TN and NT products of at least SmallProduct
// multiply-adds run in the kernel on whole 8×16 tiles (NT ones when k is a
// multiple of 8). Everything else goes to Fallback, the avx2 backend (which
// hands its own leftovers to openblas, else gonum): smaller products whole,
// TT products, NT products with k not a multiple of 8, and the edges the
// tiles leave (the last m mod 8 rows, unless an NT product leaves fewer
// than 4; the last n mod 16 columns). Each C element
// is computed by one of them in an order fixed by the shapes, so the
// backend is deterministic. It runs on the calling goroutine and allocates
// nothing (unless Fallback does).
//
// It is registered only where the CPU has AVX-512F (and AVX2 and FMA).
type AVX512 struct {
	Fallback Backend
}

func init() {
	if avx512.Available() {
		Register("avx512", func() Backend {
			fb, _ := Get(fallbackAfter("avx512"))
			return AVX512{Fallback: fb}
		})
	}
}

// Name implements Backend.
func (AVX512) Name() string { return "avx512" }

// Sgemm implements Backend.
func (x AVX512) Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	tiled("avx512", avx512.AxpyForm, x.Fallback, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}
