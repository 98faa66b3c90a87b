package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"memprobe/trainer/gemm"
)

// Finite-difference checks of every backward kernel, fast and naive.
//
// Each test defines a scalar L = sum(out .* R) for a fixed random R (the mean
// loss for softmax-cross-entropy), runs the backward kernel with dout = R from
// zeroed gradient buffers, and compares a random subset of coordinates of
// every input and parameter tensor with the central difference
//
//	fd = (L(x+eps) - L(x-eps)) / (x+eps - (x-eps))
//
// where the denominator is the perturbation as stored in float32 and L is
// summed in float64. The kernels are float32, so the tolerance is
//
//	|fd - analytic| <= fdRtol*|analytic| + fdAtol.
const (
	fdEps     = 1e-2
	fdRtol    = 2e-3
	fdAtol    = 5e-4
	fdSamples = 24 // coordinates checked per tensor
)

// fdParam is one tensor whose gradient is checked.
type fdParam struct {
	name string
	x    []float32 // perturbed in place and restored
	grad []float32 // analytic gradient of L, indexed like x
	in   []int     // the coordinates to sample from; nil means all of x
}

// gradCheck compares the analytic gradients of params with central
// differences of loss.
func gradCheck(t *testing.T, r *rand.Rand, loss func() float64, params ...fdParam) {
	t.Helper()
	for _, p := range params {
		in := p.in
		if in == nil {
			in = make([]int, len(p.x))
			for i := range in {
				in[i] = i
			}
		}
		perm := r.Perm(len(in))
		if len(perm) > fdSamples {
			perm = perm[:fdSamples]
		}
		worst, worstAt, worstFD := 0.0, -1, 0.0
		for _, pi := range perm {
			i := in[pi]
			x0 := p.x[i]
			xp, xm := x0+fdEps, x0-fdEps
			p.x[i] = xp
			lp := loss()
			p.x[i] = xm
			lm := loss()
			p.x[i] = x0
			fd := (lp - lm) / (float64(xp) - float64(xm))
			an := float64(p.grad[i])
			if r := math.Abs(fd-an) / (fdRtol*math.Abs(an) + fdAtol); r > worst || r != r {
				worst, worstAt, worstFD = r, i, fd
			}
		}
		if !(worst <= 1) {
			t.Errorf("d%s[%d]: analytic %g, finite difference %g (|diff| %.3g > %g*|analytic| + %g)",
				p.name, worstAt, p.grad[worstAt], worstFD, math.Abs(worstFD-float64(p.grad[worstAt])), fdRtol, fdAtol)
		}
	}
}

// dot returns sum(a .* b) in float64.
func dot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

// forEachImpl runs f on the small test size for the naive kernels and for
// the fast kernels with every gemm backend.
func forEachImpl(t *testing.T, f func(t *testing.T, k kernels, g gemm.Backend, r *rand.Rand)) {
	for _, g := range backends(t) {
		for _, m := range simdModes() {
			t.Run("fast/"+g.Name()+"/"+m.name, func(t *testing.T) {
				withSIMD(m.on, func() { f(t, fastKernels, g, newRNG(200)) })
			})
		}
	}
	t.Run("naive", func(t *testing.T) { f(t, naiveKernels, gemm.Naive{}, newRNG(200)) })
}

var fdDims = testDims[0]

func TestGradEncoder(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k kernels, _ gemm.Backend, r *rand.Rand) {
		T, C, V := fdDims.T, fdDims.C, fdDims.V
		tokens := randTokens(r, T, V)
		tokens[1] = tokens[0] // a repeated token: its rows must add up
		wte, wpe := randSlice(r, V*C, 1), randSlice(r, T*C, 1)
		R := randSlice(r, T*C, 1)
		out := make([]float32, T*C)
		loss := func() float64 { k.encF(out, tokens, wte, wpe, T, C); return dot(out, R) }
		dwte, dwpe := make([]float32, V*C), make([]float32, T*C)
		k.encB(dwte, dwpe, R, tokens, T, C)
		gradCheck(t, r, loss, fdParam{"wte", wte, dwte, nil}, fdParam{"wpe", wpe, dwpe, nil})
	})
}

func TestGradLayerNorm(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k kernels, _ gemm.Backend, r *rand.Rand) {
		T, C := fdDims.T, fdDims.C
		inp, w, b := randSlice(r, T*C, 2), randSlice(r, C, 1), randSlice(r, C, 1)
		R := randSlice(r, T*C, 1)
		out, mean, rstd := make([]float32, T*C), make([]float32, T), make([]float32, T)
		loss := func() float64 { k.lnF(out, mean, rstd, inp, w, b, T, C); return dot(out, R) }
		loss()
		dinp, dw, db := make([]float32, T*C), make([]float32, C), make([]float32, C)
		k.lnB(dinp, dw, db, R, inp, w, mean, rstd, T, C)
		gradCheck(t, r, loss, fdParam{"inp", inp, dinp, nil}, fdParam{"weight", w, dw, nil}, fdParam{"bias", b, db, nil})
	})
}

func TestGradMatmul(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k kernels, g gemm.Backend, r *rand.Rand) {
		T, C, OC := fdDims.T, fdDims.C, fdDims.OC
		inp, w, b := randSlice(r, T*C, 1), randSlice(r, OC*C, 1), randSlice(r, OC, 1)
		R := randSlice(r, T*OC, 1)
		out := make([]float32, T*OC)
		loss := func() float64 { k.mmF(g, out, inp, w, b, T, C, OC); return dot(out, R) }
		dinp, dw, db := make([]float32, T*C), make([]float32, OC*C), make([]float32, OC)
		k.mmB(g, dinp, dw, db, R, inp, w, T, C, OC)
		gradCheck(t, r, loss, fdParam{"inp", inp, dinp, nil}, fdParam{"weight", w, dw, nil}, fdParam{"bias", b, db, nil})
	})
}

func TestGradAttention(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k kernels, g gemm.Backend, r *rand.Rand) {
		T, C, NH := fdDims.T, fdDims.C, fdDims.NH
		inp := randSlice(r, T*3*C, 2)
		R := randSlice(r, T*C, 1)
		out, att := make([]float32, T*C), make([]float32, NH*T*T)
		loss := func() float64 { k.attF(g, out, att, inp, T, C, NH); return dot(out, R) }
		loss()
		dinp, scratch := make([]float32, T*3*C), make([]float32, T*T)
		k.attB(g, dinp, scratch, R, inp, att, T, C, NH)
		// q, k and v separately, so that each gets its own samples.
		for third, name := range []string{"q", "k", "v"} {
			var in []int
			for i := range inp {
				if (i%(3*C))/C == third {
					in = append(in, i)
				}
			}
			gradCheck(t, r, loss, fdParam{"inp." + name, inp, dinp, in})
		}
	})
}

func TestGradGelu(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k kernels, _ gemm.Backend, r *rand.Rand) {
		n := fdDims.T * fdDims.C
		inp := randSlice(r, n, 4)
		R := randSlice(r, n, 1)
		out := make([]float32, n)
		loss := func() float64 { k.geluF(out, inp, n); return dot(out, R) }
		dinp := make([]float32, n)
		k.geluB(dinp, inp, R, n)
		gradCheck(t, r, loss, fdParam{"inp", inp, dinp, nil})
	})
}

func TestGradResidual(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k kernels, _ gemm.Backend, r *rand.Rand) {
		n := fdDims.T * fdDims.C
		a, b := randSlice(r, n, 1), randSlice(r, n, 1)
		R := randSlice(r, n, 1)
		out := make([]float32, n)
		loss := func() float64 { k.resF(out, a, b, n); return dot(out, R) }
		da, db := make([]float32, n), make([]float32, n)
		k.resB(da, db, R, n)
		gradCheck(t, r, loss, fdParam{"a", a, da, nil}, fdParam{"b", b, db, nil})
	})
}

func TestGradSoftmaxCrossEntropy(t *testing.T) {
	forEachImpl(t, func(t *testing.T, k kernels, _ gemm.Backend, r *rand.Rand) {
		T, V := fdDims.T, fdDims.V
		logits := randSlice(r, T*V, 3)
		targets := randTokens(r, T, V)
		losses, probs := make([]float32, T), make([]float32, T*V)
		loss := func() float64 { // the mean loss
			k.ceF(losses, probs, logits, targets, T, V)
			var s float64
			for _, l := range losses {
				s += float64(l)
			}
			return s / float64(T)
		}
		loss()
		dlogits := make([]float32, T*V)
		k.ceB(dlogits, probs, targets, 1/float32(T), T, V)
		gradCheck(t, r, loss, fdParam{"logits", logits, dlogits, nil})
	})
}
