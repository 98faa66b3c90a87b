// Package avx2 holds the trainer's hand-written single-precision GEMM
// kernel for x86-64 with AVX2 and FMA; package gemm's "avx2" backend wraps
// it and hands what it leaves to another backend.
//
// It exists for the trainer's shapes: M = T = 128 rows of activations
// against weight matrices of 256 to 1024 columns, every weight matrix used
// once per sequence. OpenBLAS repacks the whole weight matrix into its
// kernel's layout on every call, with strided, cache-missing reads (a sixth
// of the trainer's time at the seed preset); here only the activation-side
// panel is copied, and the product runs straight from the operands where
// they lie.
//
// The form: C = alpha·op(A)·op(B) + beta·C for row-major matrices, op(A) =
// A or Aᵀ, op(B) = B or Bᵀ (not both transposed). C is computed in tiles of
// 4 rows by 24 columns (16 or 8 at the right edge): twelve 8-lane
// accumulators, each k step broadcasting four elements of op(A) against
// three vectors of op(B)'s row. op(B) is first copied, KBlock rows by 24
// columns at a time, into a contiguous panel on the goroutine's stack
// (transposed in 8×8 register blocks when B is transposed): the trainer's
// row strides are powers of two (256 or 1024 floats), so read in place a
// panel would fall into a few first-level cache sets and be fetched again
// for every tile; copied, it stays in that cache for all m/4 tiles of its
// columns. Each tile asks for its C rows at the start (C is often the shared
// gradient, last touched a layer ago).
//
// Summation order: each C element is alpha times the k-ordered sum over
// each block of KBlock, added to beta·C and then to C block by block. It is
// fixed by the shapes alone, so the results do not depend on the caller's
// thread or on timing.
//
// The package is separate from gemm because Go does not build assembly in
// a package that uses cgo (gemm's OpenBLAS backend does).
package avx2

// Available reports whether this CPU runs the kernel.
func Available() bool { return available }

// KBlock is the k extent of one pass: the B panel it copies (KBlock × 24
// floats, 24 KiB) fits the first-level data cache.
const KBlock = 256

// AxpyForm computes the part of C = alpha·op(A)·op(B) + beta·C (row-major)
// made of whole 4-row, 8-column tiles and returns its extent: rows [0, mc)
// and columns [0, nc) of C are done, the rest is the caller's. With transB,
// k must be a multiple of 8 (otherwise, and for transA && transB, it does
// nothing and returns 0, 0). m, n, k > 0, and the slices must hold the
// matrices (gemm's prologue checks them). beta = 0 never reads C. It needs
// Available; it allocates nothing (the panel lives on the stack).
func AxpyForm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) (mc, nc int) {
	mc, nc = m&^3, n&^7
	if mc == 0 || nc == 0 || transA && transB || transB && k%8 != 0 {
		return 0, 0
	}
	arow, ak := 4*lda, 4 // bytes between rows of op(A), between its columns
	if transA {
		arow, ak = 4, 4*lda
	}
	var panel [KBlock * 24]float32
	for p0 := 0; p0 < k; p0 += KBlock {
		kk := min(KBlock, k-p0)
		bt := beta
		if p0 > 0 {
			bt = 1
		}
		for j := 0; j < nc; {
			w := min(24, nc-j) // 24, 16 or 8
			if transB {
				_ = b[(j+w-1)*ldb+p0+kk-1] // the panel lies inside b
				packT(&panel[0], &b[j*ldb+p0], ldb, kk, w/8)
			} else {
				_ = b[(p0+kk-1)*ldb+j+w-1]
				pack(&panel[0], &b[p0*ldb+j], ldb, kk, w/8)
			}
			for i := 0; i < mc; i += 4 {
				ap := &a[aIndex(transA, i, p0, lda)]
				cp := &c[i*ldc+j]
				switch w {
				case 24:
					axpy4x24(cp, ldc, ap, arow, ak, &panel[0], w, kk, alpha, bt)
				case 16:
					axpy4x16(cp, ldc, ap, arow, ak, &panel[0], w, kk, alpha, bt)
				default:
					axpy4x8(cp, ldc, ap, arow, ak, &panel[0], w, kk, alpha, bt)
				}
			}
			j += w
		}
	}
	return mc, nc
}

// aIndex is the index of op(A)[i, p] in a.
func aIndex(transA bool, i, p, lda int) int {
	if transA {
		return p*lda + i
	}
	return i*lda + p
}

// PackT is the transposing pack of the kernel, for package avx512's panels:
// dst[p*8nv + c] = src[c*ldsrc + p] for c < 8·nv, p < k (k a positive
// multiple of 8, nv ≥ 1). It needs Available.
func PackT(dst, src *float32, ldsrc, k, nv int) { packT(dst, src, ldsrc, k, nv) }
