package gemm

// The common part of the kernel backends (AVX2, AVX512): each kernel
// package's AxpyForm computes whole tiles, avx2's DotForm NT products of
// fewer rows than a tile, the backend's fallback the rest.

import "memprobe/trainer/gemm/avx2"

// form is a kernel package's AxpyForm: it computes the part of C =
// alpha·op(A)·op(B) + beta·C made of whole tiles and returns its extent,
// rows [0, mc) and columns [0, nc); 0, 0 when it takes none of it.
type form func(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) (mc, nc int)

// tiled is the Sgemm of the kernel backend name: an NT product of fewer
// than avx2.DotRows rows goes to avx2's dot form; any other product of at
// least SmallProduct multiply-adds to the kernel's tiles, the rows below
// them to the dot form or fallback (as a product of their own), the
// columns right of them to fallback; a smaller product, or one the form
// takes none of, to fallback whole.
func tiled(name string, tiles form, fallback Backend, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if prologue(name, transA, transB, m, n, k, a, lda, b, ldb, beta, c, ldc) {
		return
	}
	if dotRows(transA, transB, m) {
		avx2.DotForm(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	var mc, nc int
	if float64(m)*float64(n)*float64(k) >= SmallProduct {
		mc, nc = tiles(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	}
	if mc == 0 || nc == 0 {
		fallback.Sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	if mc < m { // the rows below the tiles, every column
		if rows, a, c := m-mc, a[aOffset(transA, mc, lda):], c[mc*ldc:]; dotRows(transA, transB, rows) {
			avx2.DotForm(rows, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		} else {
			fallback.Sgemm(transA, transB, rows, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		}
	}
	if nc < n { // the columns right of the tiles, the tiles' rows
		fallback.Sgemm(transA, transB, mc, n-nc, k, alpha, a, lda, b[bOffset(transB, nc, ldb):], ldb, beta, c[nc:], ldc)
	}
}

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

// dotRows reports whether an m-row product goes to avx2's dot form: NT
// with fewer rows than the tiles take (one token's logits against the LM
// head while decoding; the last rows of a product whose m is not a
// multiple of 4). Both kernel backends need AVX2, so it is there.
func dotRows(transA, transB bool, m int) bool {
	return !transA && transB && m < avx2.DotRows
}
