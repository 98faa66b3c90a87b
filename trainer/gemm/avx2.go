package gemm

import "memprobe/trainer/gemm/avx2"

// AVX2 is the backend of package avx2's kernel: hand-written AVX2+FMA tiles
// that read the weight matrices where they lie instead of repacking them
// for every call, as OpenBLAS does. At the trainer's seed-preset products
// it takes about 4.5% less CPU time per step than openblas on the machine
// it was tuned on (an AMD EPYC with AVX-512, where OpenBLAS runs its
// Cooperlake kernels); BenchmarkSeedProducts and BenchmarkStep in package
// trainer compare the two.
//
// Coverage: NT products of fewer than 4 rows, whole or as the last m mod 4
// rows of a larger one, run in the package's dot form (avx2.DotForm: a
// token's logits against the LM head while decoding). NN, TN and NT
// products of at least SmallProduct multiply-adds run in the kernel on
// whole 4×8 tiles (NT ones when k is a multiple of 8). Everything else
// goes to Fallback, the fastest other backend compiled in (openblas, else
// gonum): smaller products whole (OpenBLAS's unpacked small-matrix kernels
// beat the tiles on the attention's per-head blocks), TT products, NT
// products with k not a multiple of 8, and the edges the tiles leave (the
// last m mod 4 rows of NN and TN products, the last n mod 8 columns). Each C
// element is computed by one of the two in an order fixed by the shapes, so
// the backend is deterministic. It runs on the calling goroutine and
// allocates nothing (unless Fallback does).
//
// It is registered only where the CPU has AVX2 and FMA.
type AVX2 struct {
	Fallback Backend
}

func init() {
	if avx2.Available() {
		Register("avx2", func() Backend {
			fb, _ := Get(fallbackAfter("avx2"))
			return AVX2{Fallback: fb}
		})
	}
}

// SmallProduct is the size (m·n·k multiply-adds) under which AVX2 and
// AVX512 hand a whole product to their fallback. The trainer's attention
// blocks (32×32×128 and smaller) fall under it, its dense layers
// (128×256×128 and larger) over it.
const SmallProduct = 1 << 20

// Name implements Backend.
func (AVX2) Name() string { return "avx2" }

// Sgemm implements Backend.
func (x AVX2) Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	tiled("avx2", avx2.AxpyForm, x.Fallback, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}
