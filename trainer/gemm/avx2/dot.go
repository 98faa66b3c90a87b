package avx2

// DotRows is the number of rows under which an NT product is better done
// as dot products than in the 4-row tiles: the tiles need whole groups of
// 4 rows of C, so fewer rows than that (one position's logits against the
// LM head while decoding a token, the last m mod 4 rows of a larger
// product) would otherwise go to the fallback backend whole.
const DotRows = 4

// DotForm computes C = alpha·A·Bᵀ + beta·C for row-major A (m×k), B (n×k)
// and C (m×n): the NT product, each element one dot product of two
// contiguous rows, so nothing is packed and every row of B is read once
// from memory for all m rows of A (B's rows are taken in chunks that stay
// in the second-level cache while each row of A passes over them). It is the form for few rows: a 1 × 50257 × 768 product (a
// token's logits at GPT-2's head) reads the 147 MiB of B once and is bound
// by memory bandwidth, where a tile kernel would be idle and gonum's
// parallel Sgemm starts goroutines and allocates on every call.
//
// Any m, n, k > 0 (the slices must hold the matrices: gemm's prologue
// checks them). Summation order: each element is the kernel's sum over the
// first k &^ 7 terms (two 8-lane accumulators, then the lanes pairwise),
// then the last k mod 8 terms in order, then alpha times that plus beta·C;
// it is fixed by k alone. beta = 0 never reads C. It needs Available and
// allocates nothing.
func DotForm(m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	k8, n4 := k&^7, n&^3
	// Columns of C per dot4 call, a multiple of 4: their rows of B (at
	// most 256 KiB) stay in the second-level cache while each row of A
	// passes over them; the sums wait in buf for the epilogue.
	chunk := min(dotChunk, max(4, (1<<16)/k&^3))
	var buf [dotChunk]float32
	for j0 := 0; j0 < n4; j0 += chunk {
		w := min(chunk, n4-j0)
		_ = b[(j0+w-1)*ldb+k-1] // the rows lie inside b
		for i := 0; i < m; i++ {
			ar := a[i*lda : i*lda+k]
			sums := buf[:w]
			if k8 > 0 {
				dot4(&ar[0], &b[j0*ldb], ldb, k8, w/4, &sums[0])
			} else {
				clear(sums)
			}
			if k8 < k {
				for r := range sums {
					br := b[(j0+r)*ldb+k8 : (j0+r)*ldb+k]
					for p, x := range ar[k8:] {
						sums[r] += x * br[p]
					}
				}
			}
			cr := c[i*ldc+j0 : i*ldc+j0+w]
			for r, v := range sums {
				cr[r] = update(alpha, v, beta, cr[r])
			}
		}
	}
	// The last n mod 4 columns: dot4 over four copies of the row (a
	// stride of 0), so the sum is the blocks' to the bit.
	var one [4]float32
	for j := n4; j < n; j++ {
		br := b[j*ldb : j*ldb+k]
		for i := 0; i < m; i++ {
			ar := a[i*lda : i*lda+k]
			one[0] = 0
			if k8 > 0 {
				dot4(&ar[0], &br[0], 0, k8, 1, &one[0])
			}
			v := one[0]
			for p := k8; p < k; p++ {
				v += ar[p] * br[p]
			}
			c[i*ldc+j] = update(alpha, v, beta, c[i*ldc+j])
		}
	}
}

// dotChunk is the most columns of C DotForm computes per dot4 call.
const dotChunk = 256

// update is alpha·sum + beta·c, not reading c when beta is 0 (BLAS's rule:
// NaN in an output that is overwritten does not survive).
func update(alpha, sum, beta, c float32) float32 {
	if beta == 0 {
		return alpha * sum
	}
	return alpha*sum + beta*c
}
