package nn

import "testing"

// Benchmarks at the seed model's sizes: T=128, C=256, NH=8 (and OC=3C for the
// matmul). Each has a naive sub-benchmark and a fast one per gemm backend
// (the elementwise kernels take no backend).
const benchT, benchC, benchNH = 128, 256, 8

func BenchmarkAttentionForward(b *testing.B) {
	T, C, NH := benchT, benchC, benchNH
	r := newRNG(1)
	inp := randSlice(r, T*3*C, 1)
	out, att := make([]float32, T*C), make([]float32, NH*T*T)
	b.Run("naive", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			AttentionForwardNaive(nil, out, att, inp, T, C, NH)
		}
	})
	for _, g := range backends(b) {
		b.Run("fast/"+g.Name(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				AttentionForward(g, out, att, inp, T, C, NH)
			}
		})
	}
}

func BenchmarkAttentionBackward(b *testing.B) {
	T, C, NH := benchT, benchC, benchNH
	r := newRNG(1)
	inp, dout := randSlice(r, T*3*C, 1), randSlice(r, T*C, 1)
	out, att := make([]float32, T*C), make([]float32, NH*T*T)
	AttentionForwardNaive(nil, out, att, inp, T, C, NH)
	dinp, scratch := make([]float32, T*3*C), make([]float32, T*T)
	b.Run("naive", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			AttentionBackwardNaive(nil, dinp, scratch, dout, inp, att, T, C, NH)
		}
	})
	for _, g := range backends(b) {
		b.Run("fast/"+g.Name(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				AttentionBackward(g, dinp, scratch, dout, inp, att, T, C, NH)
			}
		})
	}
}

func BenchmarkMatmul(b *testing.B) {
	T, C, OC := benchT, benchC, 3*benchC
	r := newRNG(1)
	inp, w, bias := randSlice(r, T*C, 1), randSlice(r, OC*C, 1), randSlice(r, OC, 1)
	out, dout := make([]float32, T*OC), randSlice(r, T*OC, 1)
	dinp, dw, db := make([]float32, T*C), make([]float32, OC*C), make([]float32, OC)
	b.Run("forward/naive", func(b *testing.B) {
		for b.Loop() {
			MatmulForwardNaive(nil, out, inp, w, bias, T, C, OC)
		}
	})
	b.Run("backward/naive", func(b *testing.B) {
		for b.Loop() {
			MatmulBackwardNaive(nil, dinp, dw, db, dout, inp, w, T, C, OC)
		}
	})
	for _, g := range backends(b) {
		b.Run("forward/fast/"+g.Name(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				MatmulForward(g, out, inp, w, bias, T, C, OC)
			}
		})
		b.Run("backward/fast/"+g.Name(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				MatmulBackward(g, dinp, dw, db, dout, inp, w, T, C, OC)
			}
		})
	}
}

func BenchmarkLayerNorm(b *testing.B) {
	T, C := benchT, benchC
	r := newRNG(1)
	inp, w, bias, dout := randSlice(r, T*C, 1), randSlice(r, C, 1), randSlice(r, C, 1), randSlice(r, T*C, 1)
	out, mean, rstd := make([]float32, T*C), make([]float32, T), make([]float32, T)
	dinp, dw, db := make([]float32, T*C), make([]float32, C), make([]float32, C)
	LayerNormForward(out, mean, rstd, inp, w, bias, T, C)
	for _, k := range []kernels{naiveKernels, fastKernels} {
		b.Run("forward/"+k.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				k.lnF(out, mean, rstd, inp, w, bias, T, C)
			}
		})
		b.Run("backward/"+k.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				k.lnB(dinp, dw, db, dout, inp, w, mean, rstd, T, C)
			}
		})
	}
}

// BenchmarkGelu runs on the MLP's hidden activations, (T, 4C).
func BenchmarkGelu(b *testing.B) {
	n := benchT * 4 * benchC
	r := newRNG(1)
	inp, dout := randSlice(r, n, 3), randSlice(r, n, 1)
	out, dinp := make([]float32, n), make([]float32, n)
	for _, k := range []kernels{naiveKernels, fastKernels} {
		b.Run("forward/"+k.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(8 * n))
			for b.Loop() {
				k.geluF(out, inp, n)
			}
		})
		b.Run("backward/"+k.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(12 * n))
			for b.Loop() {
				k.geluB(dinp, inp, dout, n)
			}
		})
	}
}
