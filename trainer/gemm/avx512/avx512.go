// Package avx512 holds the trainer's single-precision GEMM kernel for
// x86-64 with AVX-512F: EVEX-encoded, 16 lanes per register, 32 registers.
// Package gemm's "avx512" backend wraps it and hands what it leaves to
// another backend; it is chosen at run time where the CPU has AVX-512F.
//
// It is package avx2's form with wider tiles: C is computed in tiles of 8
// rows by 48 columns (32 or 16 at the right edge: 256 columns are
// 4·48 + 2·32, 1024 are 20·48 + 2·32), twenty-four 16-lane
// accumulators, each k step broadcasting eight elements of op(A) against
// three vectors of op(B)'s row, with op(A) read where it lies and op(B)
// copied KBlock rows by 48 columns at a time into a panel on the
// goroutine's stack (through package avx2's 8×8 register transpose when B
// is transposed). Twice the rows per tile of the avx2 kernel halve the
// times each panel row is read per product, the broadcasts per
// multiply-add and the loop overhead; 32 registers leave room for them.
// While the tiles of one panel run, each asks for a share of the next
// panel's source rows (the weight matrices, often out of the last-level
// cache) in the second-level cache, so the copy does not wait for memory.
//
// Summation order: each C element is alpha times the k-ordered sum over
// each block of KBlock, added to beta·C and then to C block by block. It is
// fixed by the shapes alone, so the results do not depend on the caller's
// thread or on timing.
//
// The package is separate from gemm because Go does not build assembly in
// a package that uses cgo (gemm's OpenBLAS backend does).
package avx512

import "memprobe/trainer/gemm/avx2"

// Available reports whether this CPU runs the kernel.
func Available() bool { return available }

// KBlock is the k extent of one pass: the panel it copies (KBlock × 48
// floats, 24 KiB) fits the first-level data cache of the machines in view
// (32 KiB on AMD Zen 4, 48 KiB on Intel Ice Lake and later) and is no
// larger than package avx2's, so a goroutine's stack grows no further.
const KBlock = 128

// Tile sizes: MR rows by up to NR columns.
const (
	MR = 8
	NR = 48
)

// AxpyForm computes the part of C = alpha·op(A)·op(B) + beta·C (row-major)
// made of whole 8-row, 16-column tiles and returns its extent: rows [0, mc)
// and columns [0, nc) of C are done, the rest is the caller's. With transB,
// k must be a multiple of 8 (otherwise, and for transA && transB, it does
// nothing and returns 0, 0). m, n, k > 0, and the slices must hold the
// matrices (gemm's prologue checks them). beta = 0 never reads C. It needs
// Available; it allocates nothing (the panel lives on the stack).
func AxpyForm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) (mc, nc int) {
	mc, nc = m&^(MR-1), n&^15
	if mc == 0 || nc == 0 || transA && transB || transB && k%8 != 0 {
		return 0, 0
	}
	arow, ak := 4*lda, 4 // bytes between rows of op(A), between its columns
	if transA {
		arow, ak = 4, 4*lda
	}
	tiles := mc / MR
	var panel [KBlock * NR]float32
	for p0 := 0; p0 < k; p0 += KBlock {
		kk := min(KBlock, k-p0)
		bt := beta
		if p0 > 0 {
			bt = 1
		}
		for j := 0; j < nc; {
			w := min(NR, nc-j) // 48, 32 or 16
			if nc-j == 64 {
				w = 32 // 32+32 rather than 48+16: the 8×16 tile is the slowest
			}
			if transB {
				_ = b[(j+w-1)*ldb+p0+kk-1] // the panel lies inside b
				avx2.PackT(&panel[0], &b[j*ldb+p0], ldb, kk, w/8)
			} else {
				_ = b[(p0+kk-1)*ldb+j+w-1]
				pack(&panel[0], &b[p0*ldb+j], ldb, kk, w/16)
			}
			// The next panel's source: the next columns of this k block,
			// else the first of the next block. Each tile asks for its
			// share of the rows.
			np0, nj := p0, j+w
			if nj >= nc {
				np0, nj = p0+KBlock, 0
			}
			pf, pfRows, pfBytes := 0, 0, 0 // first index, rows, bytes per row
			if np0 < k {
				nkk, nw := min(KBlock, k-np0), min(NR, nc-nj)
				if nc-nj == 64 {
					nw = 32
				}
				if transB {
					pf, pfRows, pfBytes = nj*ldb+np0, nw, 4*nkk
				} else {
					pf, pfRows, pfBytes = np0*ldb+nj, nkk, 4*nw
				}
			}
			share := (pfRows + tiles - 1) / tiles
			for t := 0; t < tiles; t++ {
				i := t * MR
				if r0 := t * share; r0 < pfRows {
					prefetch(&b[pf+r0*ldb], ldb, min(share, pfRows-r0), pfBytes)
				}
				ap := &a[aIndex(transA, i, p0, lda)]
				cp := &c[i*ldc+j]
				switch w {
				case 48:
					tile8x48(cp, ldc, ap, arow, ak, &panel[0], w, kk, alpha, bt)
				case 32:
					tile8x32(cp, ldc, ap, arow, ak, &panel[0], w, kk, alpha, bt)
				default:
					tile8x16(cp, ldc, ap, arow, ak, &panel[0], w, kk, alpha, bt)
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
