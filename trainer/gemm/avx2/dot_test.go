package avx2

import (
	"math"
	"math/rand/v2"
	"testing"
)

// dotReference is C = alpha·A·Bᵀ + beta·C in float64, with the bound the
// float32 result must meet: 1e-5 of the sum of |terms| (plus |beta·c|),
// plus 1e-6, as package kerneltest asks of the tiles.
func dotReference(i, j, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta, c float32) (want, tol float64) {
	var dot, abs float64
	for p := 0; p < k; p++ {
		x := float64(a[i*lda+p]) * float64(b[j*ldb+p])
		dot += x
		abs += math.Abs(x)
	}
	want = float64(alpha) * dot
	tol = 1e-5*math.Abs(float64(alpha))*abs + 1e-6
	if beta != 0 {
		want += float64(beta) * float64(c)
		tol += 1e-5 * math.Abs(float64(beta)*float64(c))
	}
	return want, tol
}

func randRows(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = 2*r.Float32() - 1
	}
	return x
}

// DotForm against the float64 reference over shapes that straddle its
// blocks: m around DotRows, n around the 4-row blocks of B and the chunks
// of columns per kernel call (84 at k = 768, 252 at k = 257, 256 below),
// k around the 8- and 16-float steps of the kernels and the k mod 8 tail
// done in Go;
// leading dimensions longer than the rows, C's elements outside its view
// untouched, and beta = 0 never reading C (NaN there).
func TestDotForm(t *testing.T) {
	if !Available() {
		t.Skip("no AVX2+FMA on this machine")
	}
	ab := []struct{ alpha, beta float32 }{{1, 0}, {1, 1}, {0.5, -1.5}, {-2, -0.0}}
	seed := uint64(0)
	for _, m := range []int{1, 2, 3, 4, 5} {
		for _, n := range []int{1, 3, 4, 5, 8, 13, 50, 173, 601} {
			for _, k := range []int{1, 7, 8, 9, 15, 16, 17, 24, 31, 32, 40, 255, 256, 257, 768} {
				s := ab[seed%uint64(len(ab))]
				seed++
				r := rand.New(rand.NewPCG(seed, 3))
				lda, ldb, ldc := k+3, k+1, n+2
				a, b := randRows(r, m*lda), randRows(r, n*ldb)
				c0 := randRows(r, m*ldc+3)
				if s.beta == 0 {
					for i := range c0 {
						c0[i] = float32(math.NaN())
					}
				}
				c := append([]float32(nil), c0...)
				DotForm(m, n, k, s.alpha, a, lda, b, ldb, s.beta, c, ldc)
				for idx := range c {
					i, j := idx/ldc, idx%ldc
					if i >= m || j >= n {
						if math.Float32bits(c[idx]) != math.Float32bits(c0[idx]) {
							t.Fatalf("m=%d n=%d k=%d: c[%d] outside the view changed: %g -> %g", m, n, k, idx, c0[idx], c[idx])
						}
						continue
					}
					want, tol := dotReference(i, j, k, s.alpha, a, lda, b, ldb, s.beta, c0[idx])
					if d := math.Abs(float64(c[idx]) - want); !(d <= tol) {
						t.Fatalf("m=%d n=%d k=%d alpha=%g beta=%g: c[%d,%d] = %g, want %g (|diff| %.3g > %.3g)",
							m, n, k, s.alpha, s.beta, i, j, c[idx], want, d, tol)
					}
				}
			}
		}
	}
}

// An element's bits depend on k alone, not on where its row of B fell:
// in a block of four (dot4), in either chunk of columns, or in the tail
// (four copies of its row at a stride of 0), nor on the rows of A around it.
func TestDotFormBitsIndependentOfPosition(t *testing.T) {
	if !Available() {
		t.Skip("no AVX2+FMA on this machine")
	}
	const m, n, k = 3, 90, 771 // chunks of 84 columns, then 4, then 2 in the tail; k mod 8 = 3
	r := rand.New(rand.NewPCG(9, 9))
	a, b := randRows(r, m*k), randRows(r, n*k)
	full := make([]float32, m*n)
	DotForm(m, n, k, 1, a, k, b, k, 0, full, n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var one [1]float32
			DotForm(1, 1, k, 1, a[i*k:], k, b[j*k:], k, 0, one[:], 1) // alone: the tail
			if math.Float32bits(one[0]) != math.Float32bits(full[i*n+j]) {
				t.Errorf("c[%d,%d]: %g in the %d×%d product, %g alone", i, j, full[i*n+j], m, n, one[0])
			}
		}
	}
}

func TestDotFormAllocatesNothing(t *testing.T) {
	if !Available() {
		t.Skip("no AVX2+FMA on this machine")
	}
	const n, k = 37, 100
	a, b, c := make([]float32, 2*k), make([]float32, n*k), make([]float32, 2*n)
	if allocs := testing.AllocsPerRun(10, func() { DotForm(2, n, k, 1, a, k, b, k, 0, c, n) }); allocs != 0 {
		t.Errorf("DotForm allocates %.1f times per call, want 0", allocs)
	}
}
