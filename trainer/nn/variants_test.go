package nn

import (
	"math"
	"testing"

	"memprobe/trainer/gemm"
)

// Tests of the kernels the trainer's pass uses besides the llm.c set: the
// two halves of MatmulBackward, the ...Into variants that overwrite their
// gradient, the attention blocking and AdamW. Same conventions as
// kernels_test.go: fast against naive on seeded random inputs at
// defaultAtol + defaultRtol*|naive| unless a test says otherwise.

// nanSlice returns n NaNs: an output an overwriting kernel must not read.
func nanSlice(n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(math.NaN())
	}
	return s
}

func TestMatmulBackwardHalves(t *testing.T) {
	forEach(t, func(t *testing.T, d dims, g gemm.Backend, seed uint64) {
		r := newRNG(seed)
		T, C, OC := d.T, d.C, d.OC
		inp, w, dout := randSlice(r, T*C, 1), randSlice(r, OC*C, 1), randSlice(r, T*OC, 1)
		dinp0, dw0, db0 := randSlice(r, T*C, 1), randSlice(r, OC*C, 1), randSlice(r, OC, 1)
		for _, beta := range []float32{0, 1, 0.5} {
			start := func(x []float32) []float32 {
				if beta == 0 {
					return nanSlice(len(x))
				}
				return clone(x)
			}
			dinp, dinpN := start(dinp0), clone(dinp0)
			MatmulBackwardInput(g, dinp, dout, w, T, C, OC, beta)
			MatmulBackwardInputNaive(g, dinpN, dout, w, T, C, OC, beta)
			assertClose(t, "dinp", dinp, dinpN, defaultRtol, defaultAtol)

			dw, db, dwN, dbN := start(dw0), start(db0), clone(dw0), clone(db0)
			MatmulBackwardWeight(g, dw, db, dout, inp, T, C, OC, beta)
			MatmulBackwardWeightNaive(g, dwN, dbN, dout, inp, T, C, OC, beta)
			assertClose(t, "dweight", dw, dwN, defaultRtol, defaultAtol)
			assertClose(t, "dbias", db, dbN, defaultRtol, defaultAtol)
		}
		// beta 1 equals MatmulBackward bit for bit: it is the same calls.
		dinp, dw, db := clone(dinp0), clone(dw0), clone(db0)
		MatmulBackward(g, dinp, dw, db, dout, inp, w, T, C, OC)
		dinp2, dw2, db2 := clone(dinp0), clone(dw0), clone(db0)
		MatmulBackwardInput(g, dinp2, dout, w, T, C, OC, 1)
		MatmulBackwardWeight(g, dw2, db2, dout, inp, T, C, OC, 1)
		assertEqual(t, "dinp vs MatmulBackward", dinp2, dinp)
		assertEqual(t, "dweight vs MatmulBackward", dw2, dw)
		assertEqual(t, "dbias vs MatmulBackward", db2, db)
	})
}

func TestGeluBackwardInto(t *testing.T) {
	forEach(t, func(t *testing.T, d dims, _ gemm.Backend, seed uint64) {
		r := newRNG(seed)
		n := d.T*4*d.C + 5 // a tail past the vectors
		inp, dout := randSlice(r, n, 6), randSlice(r, n, 1)
		dinp, dinpN := nanSlice(n), randSlice(r, n, 1)
		GeluBackwardInto(dinp, inp, dout, n)
		GeluBackwardIntoNaive(dinpN, inp, dout, n)
		assertClose(t, "dinp", dinp, dinpN, defaultRtol, defaultAtol)
	})
}

func TestSoftmaxCrossEntropyBackwardInto(t *testing.T) {
	forEach(t, func(t *testing.T, d dims, _ gemm.Backend, seed uint64) {
		r := newRNG(seed)
		T, V := d.T, d.V
		probs := randSlice(r, T*V, 1)
		targets := randTokens(r, T, V)
		dl, dlN := nanSlice(T*V), randSlice(r, T*V, 1)
		SoftmaxCrossEntropyBackwardInto(dl, probs, targets, 0.25, T, V)
		SoftmaxCrossEntropyBackwardIntoNaive(dlN, probs, targets, 0.25, T, V)
		assertClose(t, "dlogits", dl, dlN, defaultRtol, defaultAtol)
	})
}

func TestAttentionBackwardInto(t *testing.T) {
	forEach(t, func(t *testing.T, d dims, g gemm.Backend, seed uint64) {
		r := newRNG(seed)
		T, C, NH := d.T, d.C, d.NH
		inp, dout := randSlice(r, T*3*C, 2), randSlice(r, T*C, 1)
		out, att := make([]float32, T*C), make([]float32, NH*T*T)
		AttentionForwardNaive(g, out, att, inp, T, C, NH)
		dinp, dinpN := nanSlice(T*3*C), randSlice(r, T*3*C, 1)
		AttentionBackwardInto(g, dinp, nanSlice(T*T), dout, inp, att, T, C, NH)
		AttentionBackwardIntoNaive(g, dinpN, nil, dout, inp, att, T, C, NH)
		assertClose(t, "dinp", dinp, dinpN, defaultRtol, defaultAtol)
	})
}

// TestAttentionBlocks runs the attention kernels with blocks from 1 row to
// more than T: every blocking gives the naive result.
func TestAttentionBlocks(t *testing.T) {
	defer func(b int) { attBlock = b }(attBlock)
	d := testDims[2]
	T, C, NH := d.T, d.C, d.NH
	r := newRNG(400)
	inp, dout, dinp0 := randSlice(r, T*3*C, 2), randSlice(r, T*C, 1), randSlice(r, T*3*C, 1)
	outN, attN := make([]float32, T*C), make([]float32, NH*T*T)
	AttentionForwardNaive(nil, outN, attN, inp, T, C, NH)
	dinpN := clone(dinp0)
	AttentionBackwardNaive(nil, dinpN, nil, dout, inp, attN, T, C, NH)
	for _, g := range backends(t) {
		for _, b := range []int{1, 5, 16, 32, 64, T, 2 * T} {
			attBlock = b
			out, att := randSlice(r, T*C, 9), randSlice(r, NH*T*T, 9)
			AttentionForward(g, out, att, inp, T, C, NH)
			assertClose(t, g.Name()+" out", out, outN, defaultRtol, defaultAtol)
			assertClose(t, g.Name()+" att", att, attN, defaultRtol, defaultAtol)
			dinp := clone(dinp0)
			AttentionBackward(g, dinp, randSlice(r, T*T, 9), dout, inp, attN, T, C, NH)
			assertClose(t, g.Name()+" dinp", dinp, dinpN, defaultRtol, defaultAtol)
		}
	}
}

func adamInputs(seed uint64, n int) (p, g, m, v []float32) {
	r := newRNG(seed)
	p, g, m = randSlice(r, n, 1), randSlice(r, n, 1), randSlice(r, n, 0.1)
	v = randSlice(r, n, 0.01)
	for i := range v {
		v[i] = float32(math.Abs(float64(v[i])))
	}
	return p, g, m, v
}

// TestAdamW compares AdamWUpdate with its float64 reference over a few
// steps, checks that gradients come back zero, that the vector and
// portable paths agree bit for bit, and that splitting the range does not
// change a bit.
func TestAdamW(t *testing.T) {
	const n = 1003
	steps := []AdamWStep{
		{LR: 3e-4, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, T: 1, GradScale: 1},
		{LR: 1e-2, Beta1: 0.8, Beta2: 0.99, Eps: 1e-6, WeightDecay: 0.1, T: 7, GradScale: 0.5},
	}
	for _, s := range steps {
		p, g, m, v := adamInputs(1, n)
		pN, gN, mN, vN := clone(p), clone(g), clone(m), clone(v)
		AdamWUpdate(p, g, m, v, s)
		AdamWUpdateNaive(pN, gN, mN, vN, s)
		assertClose(t, "params", p, pN, defaultRtol, 1e-7)
		assertClose(t, "m", m, mN, defaultRtol, 1e-9)
		assertClose(t, "v", v, vN, defaultRtol, 1e-11)
		assertEqual(t, "grads", g, make([]float32, n))

		var got [][]float32
		for _, mode := range simdModes() {
			withSIMD(mode.on, func() {
				p, g, m, v := adamInputs(1, n)
				AdamWUpdate(p[:500], g[:500], m[:500], v[:500], s)
				AdamWUpdate(p[500:], g[500:], m[500:], v[500:], s)
				got = append(got, p, m, v)
			})
		}
		for i := range got {
			assertEqual(t, "split/mode", got[i], [][]float32{p, m, v}[i%3])
		}
	}
}
