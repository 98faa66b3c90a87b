//go:build !amd64

package nn

// simdAvailable is false off amd64: the portable loops of simd.go run.
const simdAvailable = false

func simdMissing() { panic("nn: vector primitive called without SIMD support") }

func geluFwdAVX2(out, inp *float32, n int, c *[geluNumConsts][8]float32) { simdMissing() }
func geluBwdAVX2(dinp, inp, dout *float32, n int, c *[geluNumConsts][8]float32, acc int) {
	simdMissing()
}
func expSubAVX2(x *float32, n int, max float32, c *[expNumConsts][8]float32) float32 {
	simdMissing()
	return 0
}
func maxAVX2(x *float32, n int) float32                            { simdMissing(); return 0 }
func sumAVX2(x *float32, n int) float32                            { simdMissing(); return 0 }
func dotAVX2(x, y *float32, n int) float32                         { simdMissing(); return 0 }
func sumSqDevAVX2(x *float32, n int, mean float32) float32         { simdMissing(); return 0 }
func scaleAVX2(x *float32, n int, s float32)                       { simdMissing() }
func scaleIntoAVX2(dst, x *float32, n int, s float32)              { simdMissing() }
func axpyAVX2(dst, x *float32, n int, s float32)                   { simdMissing() }
func addAVX2(dst, src *float32, n int)                             { simdMissing() }
func add3AVX2(dst, a, b *float32, n int)                           { simdMissing() }
func lnApplyAVX2(out, x, w, b *float32, n int, mean, rstd float32) { simdMissing() }
func lnBwdSumsAVX2(x, d, w *float32, n int, mean, rstd float32) (dnorm, dnormNorm float32) {
	simdMissing()
	return 0, 0
}
func lnBwdApplyAVX2(di, dw, db, x, d, w *float32, n int, mean, rstd, a, b float32) {
	simdMissing()
}
func softmaxBwdAVX2(d, p *float32, n int, s, scale float32)  { simdMissing() }
func adamwAVX2(p, grad, m, v *float32, n int, c *adamConsts) { simdMissing() }
