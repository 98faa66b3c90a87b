package nn

import (
	"testing"

	"memprobe/trainer/gemm"
)

// Fast against naive: every kernel, every test size, every gemm backend
// compiled in. Inputs are seeded uniform random (never zero); gradient
// buffers start from the same random values in both runs, so a kernel that
// overwrites instead of accumulating fails. Tolerance: defaultAtol +
// defaultRtol*|naive| per element (helpers_test.go) unless a test says
// otherwise. Inputs must come back unchanged, bit for bit.

// forEach runs f for every size, backend and SIMD mode as subtests named
// size/backend/mode.
func forEach(t *testing.T, f func(t *testing.T, d dims, g gemm.Backend, seed uint64)) {
	for di, d := range testDims {
		for _, g := range backends(t) {
			for _, m := range simdModes() {
				t.Run(d.name+"/"+g.Name()+"/"+m.name, func(t *testing.T) {
					withSIMD(m.on, func() { f(t, d, g, uint64(100+di)) })
				})
			}
		}
	}
}

func TestEncoder(t *testing.T) {
	forEach(t, func(t *testing.T, d dims, _ gemm.Backend, seed uint64) {
		r := newRNG(seed)
		T, C, V := d.T, d.C, d.V
		tokens := randTokens(r, T, V)
		wte, wpe := randSlice(r, V*C, 1), randSlice(r, (T+3)*C, 1)
		dout := randSlice(r, T*C, 1)
		dwte0, dwpe0 := randSlice(r, V*C, 1), randSlice(r, (T+3)*C, 1)
		wteIn, wpeIn, doutIn := clone(wte), clone(wpe), clone(dout)

		out, outN := make([]float32, T*C), make([]float32, T*C)
		EncoderForward(out, tokens, wte, wpe, T, C)
		EncoderForwardNaive(outN, tokens, wte, wpe, T, C)
		assertClose(t, "out", out, outN, defaultRtol, defaultAtol)

		dwte, dwpe, dwteN, dwpeN := clone(dwte0), clone(dwpe0), clone(dwte0), clone(dwpe0)
		EncoderBackward(dwte, dwpe, dout, tokens, T, C)
		EncoderBackwardNaive(dwteN, dwpeN, dout, tokens, T, C)
		assertClose(t, "dwte", dwte, dwteN, defaultRtol, defaultAtol)
		assertClose(t, "dwpe", dwpe, dwpeN, defaultRtol, defaultAtol)
		assertEqual(t, "dwpe beyond T", dwpe[T*C:], dwpe0[T*C:])
		assertEqual(t, "wte", wte, wteIn)
		assertEqual(t, "wpe", wpe, wpeIn)
		assertEqual(t, "dout", dout, doutIn)
	})
}

func TestLayerNorm(t *testing.T) {
	forEach(t, func(t *testing.T, d dims, _ gemm.Backend, seed uint64) {
		r := newRNG(seed)
		T, C := d.T, d.C
		inp := randSlice(r, T*C, 2)
		for i := range inp { // an offset per row so the mean matters
			inp[i] += float32(i/C) * 0.5
		}
		w, b := randSlice(r, C, 1), randSlice(r, C, 1)
		dout := randSlice(r, T*C, 1)
		dinp0, dw0, db0 := randSlice(r, T*C, 1), randSlice(r, C, 1), randSlice(r, C, 1)
		inpIn := clone(inp)

		out, mean, rstd := make([]float32, T*C), make([]float32, T), make([]float32, T)
		outN, meanN, rstdN := make([]float32, T*C), make([]float32, T), make([]float32, T)
		LayerNormForward(out, mean, rstd, inp, w, b, T, C)
		LayerNormForwardNaive(outN, meanN, rstdN, inp, w, b, T, C)
		assertClose(t, "out", out, outN, defaultRtol, defaultAtol)
		assertClose(t, "mean", mean, meanN, defaultRtol, defaultAtol)
		assertClose(t, "rstd", rstd, rstdN, defaultRtol, defaultAtol)

		// Both backward passes start from the naive statistics so that only
		// the backward kernels differ.
		dinp, dw, db := clone(dinp0), clone(dw0), clone(db0)
		dinpN, dwN, dbN := clone(dinp0), clone(dw0), clone(db0)
		LayerNormBackward(dinp, dw, db, dout, inp, w, meanN, rstdN, T, C)
		LayerNormBackwardNaive(dinpN, dwN, dbN, dout, inp, w, meanN, rstdN, T, C)
		assertClose(t, "dinp", dinp, dinpN, defaultRtol, defaultAtol)
		assertClose(t, "dweight", dw, dwN, defaultRtol, defaultAtol)
		assertClose(t, "dbias", db, dbN, defaultRtol, defaultAtol)
		assertEqual(t, "inp", inp, inpIn)
	})
}

func TestMatmul(t *testing.T) {
	forEach(t, func(t *testing.T, d dims, g gemm.Backend, seed uint64) {
		r := newRNG(seed)
		T, C, OC := d.T, d.C, d.OC
		inp, w, bias := randSlice(r, T*C, 1), randSlice(r, OC*C, 1), randSlice(r, OC, 1)
		dout := randSlice(r, T*OC, 1)
		dinp0, dw0, db0 := randSlice(r, T*C, 1), randSlice(r, OC*C, 1), randSlice(r, OC, 1)
		inpIn, wIn, doutIn := clone(inp), clone(w), clone(dout)

		for _, withBias := range []bool{true, false} {
			bb := bias
			if !withBias {
				bb = nil
			}
			// out starts as garbage: forward must overwrite it.
			out, outN := randSlice(r, T*OC, 9), randSlice(r, T*OC, 9)
			MatmulForward(g, out, inp, w, bb, T, C, OC)
			MatmulForwardNaive(g, outN, inp, w, bb, T, C, OC)
			assertClose(t, "out", out, outN, defaultRtol, defaultAtol)
		}

		dinp, dw, db := clone(dinp0), clone(dw0), clone(db0)
		dinpN, dwN, dbN := clone(dinp0), clone(dw0), clone(db0)
		MatmulBackward(g, dinp, dw, db, dout, inp, w, T, C, OC)
		MatmulBackwardNaive(g, dinpN, dwN, dbN, dout, inp, w, T, C, OC)
		assertClose(t, "dinp", dinp, dinpN, defaultRtol, defaultAtol)
		assertClose(t, "dweight", dw, dwN, defaultRtol, defaultAtol)
		assertClose(t, "dbias", db, dbN, defaultRtol, defaultAtol)

		// nil dinp and dbias are skipped; dweight still accumulates.
		dw2 := clone(dw0)
		MatmulBackward(g, nil, dw2, nil, dout, inp, w, T, C, OC)
		assertClose(t, "dweight (nil dinp, dbias)", dw2, dwN, defaultRtol, defaultAtol)
		dw2N := clone(dw0)
		MatmulBackwardNaive(g, nil, dw2N, nil, dout, inp, w, T, C, OC)
		assertClose(t, "naive dweight (nil dinp, dbias)", dw2N, dwN, defaultRtol, defaultAtol)

		assertEqual(t, "inp", inp, inpIn)
		assertEqual(t, "weight", w, wIn)
		assertEqual(t, "dout", dout, doutIn)
	})
}

func TestAttention(t *testing.T) {
	forEach(t, func(t *testing.T, d dims, g gemm.Backend, seed uint64) {
		r := newRNG(seed)
		T, C, NH := d.T, d.C, d.NH
		inp := randSlice(r, T*3*C, 2)
		dout := randSlice(r, T*C, 1)
		dinp0 := randSlice(r, T*3*C, 1)
		inpIn, doutIn := clone(inp), clone(dout)

		out, att := randSlice(r, T*C, 9), randSlice(r, NH*T*T, 9)
		outN, attN := randSlice(r, T*C, 9), randSlice(r, NH*T*T, 9)
		AttentionForward(g, out, att, inp, T, C, NH)
		AttentionForwardNaive(g, outN, attN, inp, T, C, NH)
		assertClose(t, "out", out, outN, defaultRtol, defaultAtol)
		assertClose(t, "att", att, attN, defaultRtol, defaultAtol)

		// Both backward passes read the naive att so that only the backward
		// kernels differ; scratch starts as garbage.
		dinp, dinpN := clone(dinp0), clone(dinp0)
		scratch := randSlice(r, T*T, 9)
		AttentionBackward(g, dinp, scratch, dout, inp, attN, T, C, NH)
		AttentionBackwardNaive(g, dinpN, nil, dout, inp, attN, T, C, NH)
		assertClose(t, "dinp", dinp, dinpN, defaultRtol, defaultAtol)
		assertEqual(t, "inp", inp, inpIn)
		assertEqual(t, "dout", dout, doutIn)
	})
}

func TestGelu(t *testing.T) {
	forEach(t, func(t *testing.T, d dims, _ gemm.Backend, seed uint64) {
		r := newRNG(seed)
		n := d.T * 4 * d.C
		inp := randSlice(r, n, 6) // covers both tails and the bend
		dout := randSlice(r, n, 1)
		dinp0 := randSlice(r, n, 1)
		inpIn := clone(inp)

		out, outN := make([]float32, n), make([]float32, n)
		GeluForward(out, inp, n)
		GeluForwardNaive(outN, inp, n)
		assertClose(t, "out", out, outN, defaultRtol, defaultAtol)

		dinp, dinpN := clone(dinp0), clone(dinp0)
		GeluBackward(dinp, inp, dout, n)
		GeluBackwardNaive(dinpN, inp, dout, n)
		assertClose(t, "dinp", dinp, dinpN, defaultRtol, defaultAtol)
		assertEqual(t, "inp", inp, inpIn)
	})
}

func TestResidual(t *testing.T) {
	forEach(t, func(t *testing.T, d dims, _ gemm.Backend, seed uint64) {
		r := newRNG(seed)
		n := d.T * d.C
		a, b, dout := randSlice(r, n, 1), randSlice(r, n, 1), randSlice(r, n, 1)
		da0, db0 := randSlice(r, n, 1), randSlice(r, n, 1)

		out, outN := make([]float32, n), make([]float32, n)
		ResidualForward(out, a, b, n)
		ResidualForwardNaive(outN, a, b, n)
		assertEqual(t, "out", out, outN)

		acc, accN := clone(da0), clone(da0)
		Accumulate(acc, dout, n)
		AccumulateNaive(accN, dout, n)
		assertEqual(t, "accumulate", acc, accN)

		da, db, daN, dbN := clone(da0), clone(db0), clone(da0), clone(db0)
		ResidualBackward(da, db, dout, n)
		ResidualBackwardNaive(daN, dbN, dout, n)
		assertEqual(t, "da", da, daN)
		assertEqual(t, "db", db, dbN)
	})
}

func TestSoftmaxCrossEntropy(t *testing.T) {
	forEach(t, func(t *testing.T, d dims, _ gemm.Backend, seed uint64) {
		r := newRNG(seed)
		T, V := d.T, d.V
		logits := randSlice(r, T*V, 4)
		logits[0] = 80 // a row whose exp would overflow without the max
		targets := randTokens(r, T, V)
		dlogits0 := randSlice(r, T*V, 1)
		logitsIn := clone(logits)

		losses, probs := make([]float32, T), make([]float32, T*V)
		lossesN, probsN := make([]float32, T), make([]float32, T*V)
		SoftmaxCrossEntropyForward(losses, probs, logits, targets, T, V)
		SoftmaxCrossEntropyForwardNaive(lossesN, probsN, logits, targets, T, V)
		assertClose(t, "losses", losses, lossesN, defaultRtol, defaultAtol)
		assertClose(t, "probs", probs, probsN, defaultRtol, defaultAtol)

		dloss := 1 / float32(T)
		dl, dlN := clone(dlogits0), clone(dlogits0)
		SoftmaxCrossEntropyBackward(dl, probsN, targets, dloss, T, V)
		SoftmaxCrossEntropyBackwardNaive(dlN, probsN, targets, dloss, T, V)
		assertClose(t, "dlogits", dl, dlN, defaultRtol, defaultAtol)
		assertEqual(t, "logits", logits, logitsIn)
	})
}

// TestSoftmaxCrossEntropyExtreme checks that a target whose probability
// underflows float32 still gets a finite loss.
func TestSoftmaxCrossEntropyExtreme(t *testing.T) {
	const T, V = 1, 3
	logits := []float32{200, 0, -200}
	targets := []uint16{2}
	for _, k := range []kernels{fastKernels, naiveKernels} {
		losses, probs := make([]float32, T), make([]float32, T*V)
		k.ceF(losses, probs, logits, targets, T, V)
		if losses[0] != 400 {
			t.Errorf("%s: loss = %g, want 400", k.name, losses[0])
		}
		if probs[0] != 1 || probs[2] != 0 {
			t.Errorf("%s: probs = %v, want [1 ~0 0]", k.name, probs)
		}
	}
}

// TestAllocs checks that every fast kernel allocates nothing.
func TestAllocs(t *testing.T) {
	const T, C, NH, V, OC = 16, 32, 4, 50, 96
	r := newRNG(7)
	var g gemm.Backend = gemm.Naive{}
	tokens, targets := randTokens(r, T, V), randTokens(r, T, V)
	wte, wpe := randSlice(r, V*C, 1), randSlice(r, T*C, 1)
	x, y, dx, dy := randSlice(r, T*C, 1), randSlice(r, T*C, 1), randSlice(r, T*C, 1), randSlice(r, T*C, 1)
	w, b, dw, db := randSlice(r, C, 1), randSlice(r, C, 1), randSlice(r, C, 1), randSlice(r, C, 1)
	mean, rstd := randSlice(r, T, 1), randSlice(r, T, 1)
	mw, mb, dmw, dmb := randSlice(r, OC*C, 1), randSlice(r, OC, 1), randSlice(r, OC*C, 1), randSlice(r, OC, 1)
	mo, dmo := randSlice(r, T*OC, 1), randSlice(r, T*OC, 1)
	qkv, dqkv := randSlice(r, T*3*C, 1), randSlice(r, T*3*C, 1)
	att, scratch := randSlice(r, NH*T*T, 1), randSlice(r, T*T, 1)
	logits, probs, dlogits, losses := randSlice(r, T*V, 1), randSlice(r, T*V, 1), randSlice(r, T*V, 1), randSlice(r, T, 1)

	cases := []struct {
		name string
		f    func()
	}{
		{"EncoderForward", func() { EncoderForward(x, tokens, wte, wpe, T, C) }},
		{"EncoderBackward", func() { EncoderBackward(wte, wpe, dx, tokens, T, C) }},
		{"LayerNormForward", func() { LayerNormForward(y, mean, rstd, x, w, b, T, C) }},
		{"LayerNormBackward", func() { LayerNormBackward(dx, dw, db, dy, x, w, mean, rstd, T, C) }},
		{"MatmulForward", func() { MatmulForward(g, mo, x, mw, mb, T, C, OC) }},
		{"MatmulForward/nil bias", func() { MatmulForward(g, mo, x, mw, nil, T, C, OC) }},
		{"MatmulBackward", func() { MatmulBackward(g, dx, dmw, dmb, dmo, x, mw, T, C, OC) }},
		{"MatmulBackward/nil", func() { MatmulBackward(g, nil, dmw, nil, dmo, x, mw, T, C, OC) }},
		{"AttentionForward", func() { AttentionForward(g, y, att, qkv, T, C, NH) }},
		{"AttentionBackward", func() { AttentionBackward(g, dqkv, scratch, dy, qkv, att, T, C, NH) }},
		{"GeluForward", func() { GeluForward(y, x, T*C) }},
		{"GeluBackward", func() { GeluBackward(dx, x, dy, T*C) }},
		{"ResidualForward", func() { ResidualForward(y, x, dx, T*C) }},
		{"ResidualBackward", func() { ResidualBackward(dx, dy, y, T*C) }},
		{"Accumulate", func() { Accumulate(dx, dy, T*C-1) }},
		{"SoftmaxCrossEntropyForward", func() { SoftmaxCrossEntropyForward(losses, probs, logits, targets, T, V) }},
		{"SoftmaxCrossEntropyBackward", func() { SoftmaxCrossEntropyBackward(dlogits, probs, targets, 1.0/T, T, V) }},
		{"SoftmaxCrossEntropyBackwardInto", func() { SoftmaxCrossEntropyBackwardInto(dlogits, probs, targets, 1.0/T, T, V) }},
		{"MatmulBackwardInput", func() { MatmulBackwardInput(g, dx, dmo, mw, T, C, OC, 0) }},
		{"MatmulBackwardWeight", func() { MatmulBackwardWeight(g, dmw, dmb, dmo, x, T, C, OC, 1) }},
		{"AttentionBackwardInto", func() { AttentionBackwardInto(g, dqkv, scratch, dy, qkv, att, T, C, NH) }},
		{"GeluBackwardInto", func() { GeluBackwardInto(dx, x, dy, T*C) }},
		// odd lengths: the padded tails of the vector primitives stay on the stack
		{"GeluForward/odd", func() { GeluForward(y, x, T*C-3) }},
		{"GeluBackward/odd", func() { GeluBackward(dx, x, dy, T*C-5) }},
		{"LayerNormForward/odd", func() { LayerNormForward(y, mean, rstd, x, w, b, T, C-3) }},
		{"AdamWUpdate/odd", func() {
			AdamWUpdate(x[:T*C-3], dx, y, dy, AdamWStep{LR: 1e-3, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8, T: 1, GradScale: 1})
		}},
	}
	for _, c := range cases {
		if n := testing.AllocsPerRun(5, c.f); n != 0 {
			t.Errorf("%s: %v allocations per run, want 0", c.name, n)
		}
	}
}
