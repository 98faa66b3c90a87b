// Package kerneltest checks the AxpyForm of a GEMM kernel package (avx2,
// avx512) on its own against a float64 reference; package gemm's tests
// cover the backends that wrap them, with their fallbacks. For each
// product the tiles the form reports must agree with the reference at
//
//	|got - want| <= 1e-5*(|alpha|*sum|a||b| + |beta*c|) + 1e-6
//
// (float32 sums of up to a few hundred terms), and every element outside
// them, and outside C's view, must keep its bits.
package kerneltest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// Form is a kernel package's AxpyForm: the part of C = alpha·op(A)·op(B) +
// beta·C made of whole tiles, and its extent.
type Form func(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) (mc, nc int)

// Kernel is a form with the grid it covers: whole Rows × Cols blocks
// (powers of two: the tile's rows by its narrowest width), and NT products
// only when k is a multiple of 8.
type Kernel struct {
	Form       Form
	Rows, Cols int
}

// Problem is one product, row-major with leading dimensions.
type Problem struct {
	TransA, TransB bool
	M, N, K        int
	Lda, Ldb, Ldc  int
	Alpha, Beta    float32
}

func (p Problem) String() string {
	return fmt.Sprintf("tA=%v tB=%v m=%d n=%d k=%d alpha=%g beta=%g", p.TransA, p.TransB, p.M, p.N, p.K, p.Alpha, p.Beta)
}

func randMat(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = 2*r.Float32() - 1
	}
	return x
}

// Run computes p with the kernel on operands drawn from seed and checks
// the extent it reports, the tiles against the reference and that nothing
// else changed.
func (kn Kernel) Run(t *testing.T, p Problem, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	ar, br := p.M, p.K // stored rows of A and B
	if p.TransA {
		ar = p.K
	}
	if p.TransB {
		br = p.N
	}
	a, b := randMat(r, ar*p.Lda), randMat(r, br*p.Ldb)
	c0 := randMat(r, p.M*p.Ldc+3) // 3 floats past the view
	if p.Beta == 0 {
		for i := range c0 {
			c0[i] = float32(math.NaN()) // must not be read
		}
	}
	c := append([]float32(nil), c0...)
	mc, nc := kn.Form(p.TransA, p.TransB, p.M, p.N, p.K, p.Alpha, a, p.Lda, b, p.Ldb, p.Beta, c, p.Ldc)
	wantM, wantN := p.M&^(kn.Rows-1), p.N&^(kn.Cols-1)
	if p.TransB && p.K%8 != 0 {
		wantM, wantN = 0, 0
	}
	if wantM == 0 || wantN == 0 {
		wantM, wantN = 0, 0
	}
	if mc != wantM || nc != wantN {
		t.Fatalf("%v: covered %d×%d, want %d×%d", p, mc, nc, wantM, wantN)
	}
	at := func(i, q int) float32 {
		if p.TransA {
			return a[q*p.Lda+i]
		}
		return a[i*p.Lda+q]
	}
	bt := func(q, j int) float32 {
		if p.TransB {
			return b[j*p.Ldb+q]
		}
		return b[q*p.Ldb+j]
	}
	for idx := range c {
		i, j := idx/p.Ldc, idx%p.Ldc
		if i >= mc || j >= nc {
			if math.Float32bits(c[idx]) != math.Float32bits(c0[idx]) {
				t.Fatalf("%v: c[%d] (row %d, col %d) outside the tiles changed: %g -> %g", p, idx, i, j, c0[idx], c[idx])
			}
			continue
		}
		var dot, abs float64
		for q := 0; q < p.K; q++ {
			x, y := float64(at(i, q)), float64(bt(q, j))
			dot += x * y
			abs += math.Abs(x * y)
		}
		want := float64(p.Alpha) * dot
		tol := 1e-5*math.Abs(float64(p.Alpha))*abs + 1e-6
		if p.Beta != 0 {
			want += float64(p.Beta) * float64(c0[idx])
			tol += 1e-5 * math.Abs(float64(p.Beta)*float64(c0[idx]))
		}
		if d := math.Abs(float64(c[idx]) - want); !(d <= tol) {
			t.Fatalf("%v: c[%d,%d] = %g, want %g (|diff| %.3g > %.3g)", p, i, j, c[idx], want, d, tol)
		}
	}
}

// Grid runs every NN, TN and NT product of the sizes ms × ns × ks (TT is
// neither form's), cycling through four alpha, beta pairs, with leading
// dimensions a little longer than the rows. ms, ns and ks should straddle
// the tile and KBlock sizes.
func (kn Kernel) Grid(t *testing.T, ms, ns, ks []int) {
	t.Helper()
	ab := []struct{ alpha, beta float32 }{{1, 0}, {1, 1}, {0.5, -1.5}, {-2, -0.0}}
	seed := uint64(0)
	for _, transA := range []bool{false, true} {
		for _, transB := range []bool{false, true} {
			if transA && transB {
				continue // TT: neither form
			}
			for _, m := range ms {
				for _, n := range ns {
					for _, k := range ks {
						s := ab[seed%uint64(len(ab))]
						seed++
						p := Problem{TransA: transA, TransB: transB, M: m, N: n, K: k, Alpha: s.alpha, Beta: s.beta}
						p.Lda, p.Ldb, p.Ldc = k+3, n+5, n+2
						if transA {
							p.Lda = m + 1
						}
						if transB {
							p.Ldb = k + 1
						}
						kn.Run(t, p, seed)
					}
				}
			}
		}
	}
}

// ModelShapes are the trainer's dense products at the seed preset, with
// the trainer's leading dimensions (powers of two apart: the case the
// packed panels exist for).
var ModelShapes = []Problem{
	{false, true, 128, 768, 256, 256, 256, 768, 1, 1},     // forward qkv (bias in C)
	{false, true, 128, 788, 256, 256, 256, 788, 1, 0},     // LM head
	{false, false, 128, 1024, 256, 256, 1024, 1024, 1, 0}, // dinp of fcproj
	{false, false, 128, 256, 1024, 1024, 256, 256, 1, 0},  // dinp of fc
	{true, false, 1024, 256, 128, 1024, 256, 256, 1, 1},   // dweight of fc
	{true, false, 788, 256, 128, 788, 256, 256, 1, 0},     // dwte of the head
	{false, true, 128, 256, 1024, 1024, 1024, 256, 1, 1},  // forward fcproj
	{false, false, 128, 256, 768, 768, 256, 256, 1, 0},    // dinp of qkv
	{true, false, 768, 256, 128, 768, 256, 256, 1, 1},     // dweight of qkv
}

// Shapes runs ModelShapes.
func (kn Kernel) Shapes(t *testing.T) {
	t.Helper()
	for i, p := range ModelShapes {
		kn.Run(t, p, uint64(100+i))
	}
}
