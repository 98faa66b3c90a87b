package nn

import (
	"fmt"
	"testing"
)

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

// BenchmarkAttentionBlock times the fast attention forward and backward at
// the seed sizes for several causal block sizes (attBlock = T computes the
// full square), reporting the products' useful GFLOPS: 4·T·T·hs·NH/2 per
// pass for the forward, twice that for the backward (the causal half of the
// square, the diagonal counted once).
func BenchmarkAttentionBlock(b *testing.B) {
	T, C, NH := benchT, benchC, benchNH
	r := newRNG(1)
	inp, dout := randSlice(r, T*3*C, 1), randSlice(r, T*C, 1)
	out, att := make([]float32, T*C), make([]float32, NH*T*T)
	dinp, scratch := make([]float32, T*3*C), make([]float32, T*T)
	defer func(old int) { attBlock = old }(attBlock)
	useful := 2 * float64(T*(T+1)/2) * float64(C) // one product over the causal half, all heads
	for _, g := range backends(b) {
		if g.Name() == "naive" {
			continue
		}
		for _, bs := range []int{16, 32, 64, T} {
			b.Run(fmt.Sprintf("%s/forward/block=%d", g.Name(), bs), func(b *testing.B) {
				attBlock = bs
				for b.Loop() {
					AttentionForward(g, out, att, inp, T, C, NH)
				}
				b.ReportMetric(2*useful*float64(b.N)/float64(b.Elapsed().Nanoseconds()), "GFLOPS")
			})
			b.Run(fmt.Sprintf("%s/backward/block=%d", g.Name(), bs), func(b *testing.B) {
				attBlock = bs
				for b.Loop() {
					AttentionBackwardInto(g, dinp, scratch, dout, inp, att, T, C, NH)
				}
				b.ReportMetric(4*useful*float64(b.N)/float64(b.Elapsed().Nanoseconds()), "GFLOPS")
			})
		}
	}
}
