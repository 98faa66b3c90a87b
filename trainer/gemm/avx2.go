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
// Coverage: NN, TN and NT products of at least SmallProduct multiply-adds
// run in the kernel on whole 4×8 tiles (NT ones when k is a multiple of 8).
// Everything else goes to Fallback, the fastest other backend compiled in
// (openblas, else gonum): smaller products whole (OpenBLAS's unpacked
// small-matrix kernels beat the tiles on the attention's per-head blocks),
// TT products, NT products with k not a multiple of 8, and the edges the
// tiles leave (the last m mod 4 rows, the last n mod 8 columns). Each C
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

// SmallProduct is the size (m·n·k multiply-adds) under which AVX2 hands a
// whole product to its fallback. The trainer's attention blocks (32×32×128
// and smaller) fall under it, its dense layers (128×256×128 and larger)
// over it.
const SmallProduct = 1 << 20

// fallbackAfter is the first backend compiled in that comes after name in
// the preference list: what a kernel backend hands its leftovers to.
func fallbackAfter(name string) string {
	after := false
	for _, n := range preference {
		if _, ok := registry[n]; ok && after {
			return n
		}
		after = after || n == name
	}
	return "naive"
}

// Name implements Backend.
func (AVX2) Name() string { return "avx2" }

// Sgemm implements Backend.
func (x AVX2) Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if prologue("avx2", transA, transB, m, n, k, a, lda, b, ldb, beta, c, ldc) {
		return
	}
	var mc, nc int
	if float64(m)*float64(n)*float64(k) >= SmallProduct {
		mc, nc = avx2.AxpyForm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	}
	if mc == 0 || nc == 0 {
		x.Fallback.Sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	if mc < m { // the rows below the tiles, every column
		x.Fallback.Sgemm(transA, transB, m-mc, n, k, alpha, a[aOffset(transA, mc, lda):], lda, b, ldb, beta, c[mc*ldc:], ldc)
	}
	if nc < n { // the columns right of the tiles, the tiles' rows
		x.Fallback.Sgemm(transA, transB, mc, n-nc, k, alpha, a, lda, b[bOffset(transB, nc, ldb):], ldb, beta, c[nc:], ldc)
	}
}

// aOffset is the index in a of row i of op(A); bOffset of column j of op(B).
func aOffset(transA bool, i, lda int) int {
	if transA {
		return i
	}
	return i * lda
}

func bOffset(transB bool, j, ldb int) int {
	if transB {
		return j * ldb
	}
	return j
}
