package avx512

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// The kernels against a float64 reference, on their own (package gemm's
// tests cover the "avx512" backend with its fallback). For each product the
// tiles the form reports must agree with the reference at
//
//	|got - want| <= 1e-5*(|alpha|*sum|a||b| + |beta*c|) + 1e-6
//
// (float32 sums of up to a few hundred terms), and every element outside
// them, and outside C's view, must keep its bits.

func randMat(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = 2*r.Float32() - 1
	}
	return x
}

type problem struct {
	transA, transB bool
	m, n, k        int
	lda, ldb, ldc  int
	alpha, beta    float32
}

func (p problem) String() string {
	return fmt.Sprintf("tA=%v tB=%v m=%d n=%d k=%d alpha=%g beta=%g", p.transA, p.transB, p.m, p.n, p.k, p.alpha, p.beta)
}

func (p problem) run(t *testing.T, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	ar, br := p.m, p.k // stored rows of A and B
	if p.transA {
		ar = p.k
	}
	if p.transB {
		br = p.n
	}
	a, b := randMat(r, ar*p.lda), randMat(r, br*p.ldb)
	c0 := randMat(r, p.m*p.ldc+3) // 3 floats past the view
	if p.beta == 0 {
		for i := range c0 {
			c0[i] = float32(math.NaN()) // must not be read
		}
	}
	c := append([]float32(nil), c0...)
	mc, nc := AxpyForm(p.transA, p.transB, p.m, p.n, p.k, p.alpha, a, p.lda, b, p.ldb, p.beta, c, p.ldc)
	wantM, wantN := p.m&^7, p.n&^15
	if p.transB && p.k%8 != 0 {
		wantM, wantN = 0, 0
	}
	if wantM == 0 || wantN == 0 {
		wantM, wantN = 0, 0
	}
	if mc != wantM || nc != wantN {
		t.Fatalf("%v: covered %d×%d, want %d×%d", p, mc, nc, wantM, wantN)
	}
	at := func(i, q int) float32 {
		if p.transA {
			return a[q*p.lda+i]
		}
		return a[i*p.lda+q]
	}
	bt := func(q, j int) float32 {
		if p.transB {
			return b[j*p.ldb+q]
		}
		return b[q*p.ldb+j]
	}
	for idx := range c {
		i, j := idx/p.ldc, idx%p.ldc
		if i >= mc || j >= nc {
			if math.Float32bits(c[idx]) != math.Float32bits(c0[idx]) {
				t.Fatalf("%v: c[%d] (row %d, col %d) outside the tiles changed: %g -> %g", p, idx, i, j, c0[idx], c[idx])
			}
			continue
		}
		var dot, abs float64
		for q := 0; q < p.k; q++ {
			x, y := float64(at(i, q)), float64(bt(q, j))
			dot += x * y
			abs += math.Abs(x * y)
		}
		want := float64(p.alpha) * dot
		tol := 1e-5*math.Abs(float64(p.alpha))*abs + 1e-6
		if p.beta != 0 {
			want += float64(p.beta) * float64(c0[idx])
			tol += 1e-5 * math.Abs(float64(p.beta)*float64(c0[idx]))
		}
		if d := math.Abs(float64(c[idx]) - want); !(d <= tol) {
			t.Fatalf("%v: c[%d,%d] = %g, want %g (|diff| %.3g > %.3g)", p, i, j, c[idx], want, d, tol)
		}
	}
}

func TestForms(t *testing.T) {
	if !Available() {
		t.Skip("no AVX-512F on this machine: the avx512 kernel is not used here (package gemm tests the backends that are)")
	}
	ms := []int{1, 7, 8, 9, 16, 21}
	ns := []int{7, 15, 16, 17, 32, 33, 48, 49, 63, 80, 97, 113}
	ks := []int{1, 2, 7, 8, 9, 16, 24, 127, 128, 129, 264}
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
						p := problem{transA: transA, transB: transB, m: m, n: n, k: k, alpha: s.alpha, beta: s.beta}
						// leading dimensions a little longer than the rows
						p.lda, p.ldb, p.ldc = k+3, n+5, n+2
						if transA {
							p.lda = m + 1
						}
						if transB {
							p.ldb = k + 1
						}
						p.run(t, seed)
					}
				}
			}
		}
	}
}

// TestFormsModelShapes runs the trainer's dense products, with the
// trainer's leading dimensions (powers of two apart: the case the packed
// panel exists for).
func TestFormsModelShapes(t *testing.T) {
	if !Available() {
		t.Skip("no AVX-512F on this machine: the avx512 kernel is not used here (package gemm tests the backends that are)")
	}
	for i, p := range []problem{
		{false, true, 128, 768, 256, 256, 256, 768, 1, 1},     // forward qkv (bias in C)
		{false, true, 128, 788, 256, 256, 256, 788, 1, 0},     // LM head
		{false, false, 128, 1024, 256, 256, 1024, 1024, 1, 0}, // dinp of fcproj
		{false, false, 128, 256, 1024, 1024, 256, 256, 1, 0},  // dinp of fc
		{true, false, 1024, 256, 128, 1024, 256, 256, 1, 1},   // dweight of fc
		{true, false, 788, 256, 128, 788, 256, 256, 1, 0},     // dwte of the head
		{false, true, 128, 256, 1024, 1024, 1024, 256, 1, 1},  // forward fcproj
		{false, false, 128, 256, 768, 768, 256, 256, 1, 0},    // dinp of qkv
		{true, false, 768, 256, 128, 768, 256, 256, 1, 1},     // dweight of qkv
	} {
		p.run(t, uint64(100+i))
	}
}
