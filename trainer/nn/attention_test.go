package nn

import (
	"math"
	"testing"

	"memprobe/trainer/gemm"
)

// TestAttentionCausal checks the mask of every attention implementation:
// changing the q, k and v of token t0 leaves out and att of earlier tokens
// bit-identical; att is zero above the diagonal with rows summing to 1; and a
// gradient that only reaches rows before t0 puts exactly nothing into the
// q, k and v of t0 and later tokens.
func TestAttentionCausal(t *testing.T) {
	type impl struct {
		name string
		k    kernels
		g    gemm.Backend
		simd bool
	}
	impls := []impl{{"naive", naiveKernels, gemm.Naive{}, false}}
	for _, g := range backends(t) {
		for _, m := range simdModes() {
			impls = append(impls, impl{"fast/" + g.Name() + "/" + m.name, fastKernels, g, m.on})
		}
	}
	for _, d := range testDims {
		for _, im := range impls {
			t.Run(d.name+"/"+im.name, func(t *testing.T) {
				defer func(old bool) { useSIMD = old }(useSIMD)
				useSIMD = im.simd
				T, C, NH := d.T, d.C, d.NH
				C3 := 3 * C
				r := newRNG(300)
				inp := randSlice(r, T*C3, 2)
				out, att := make([]float32, T*C), make([]float32, NH*T*T)
				im.k.attF(im.g, out, att, inp, T, C, NH)

				for h := 0; h < NH; h++ {
					for t1 := 0; t1 < T; t1++ {
						row := att[(h*T+t1)*T : (h*T+t1)*T+T]
						var sum float64
						for t2, p := range row {
							if t2 > t1 && p != 0 {
								t.Fatalf("att[%d,%d,%d] = %g above the diagonal, want 0", h, t1, t2, p)
							}
							sum += float64(p)
						}
						if math.Abs(sum-1) > 1e-5 {
							t.Fatalf("att[%d,%d,:] sums to %g, want 1", h, t1, sum)
						}
					}
				}

				t0 := T / 2
				inp2 := clone(inp)
				for i := t0 * C3; i < (t0+1)*C3; i++ {
					inp2[i] = -3 * inp2[i]
				}
				out2, att2 := make([]float32, T*C), make([]float32, NH*T*T)
				im.k.attF(im.g, out2, att2, inp2, T, C, NH)
				assertEqual(t, "out before t0", out2[:t0*C], out[:t0*C])
				for h := 0; h < NH; h++ {
					assertEqual(t, "att before t0", att2[h*T*T:h*T*T+t0*T], att[h*T*T:h*T*T+t0*T])
				}
				changed := false
				for i := t0 * C; i < (t0+1)*C; i++ {
					changed = changed || out2[i] != out[i]
				}
				if !changed {
					t.Errorf("out[t0] did not change when token t0 did")
				}

				dout := randSlice(r, T*C, 1)
				clear(dout[t0*C:])
				dinp, scratch := make([]float32, T*C3), make([]float32, T*T)
				im.k.attB(im.g, dinp, scratch, dout, inp, att, T, C, NH)
				for i := t0 * C3; i < len(dinp); i++ {
					if dinp[i] != 0 {
						t.Fatalf("dinp[%d] (token %d) = %g, want 0: no gradient reaches tokens from %d on", i, i/C3, dinp[i], t0)
					}
				}
			})
		}
	}
}
