//go:build amd64

package nn

import "golang.org/x/sys/cpu"

// simdAvailable reports whether this CPU (and OS) runs the AVX2 and FMA
// instructions of simd_amd64.s.
var simdAvailable = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// The assembly primitives of simd.go. n is a positive multiple of 8; the
// pointers address at least n floats. They keep no pointer.

//go:noescape
func geluFwdAVX2(out, inp *float32, n int, c *[geluNumConsts][8]float32)

//go:noescape
func geluBwdAVX2(dinp, inp, dout *float32, n int, c *[geluNumConsts][8]float32, acc int)

//go:noescape
func expSubAVX2(x *float32, n int, max float32, c *[expNumConsts][8]float32) float32

//go:noescape
func maxAVX2(x *float32, n int) float32

//go:noescape
func sumAVX2(x *float32, n int) float32

//go:noescape
func dotAVX2(x, y *float32, n int) float32

//go:noescape
func sumSqDevAVX2(x *float32, n int, mean float32) float32

//go:noescape
func scaleAVX2(x *float32, n int, s float32)

//go:noescape
func scaleIntoAVX2(dst, x *float32, n int, s float32)

//go:noescape
func axpyAVX2(dst, x *float32, n int, s float32)

//go:noescape
func addAVX2(dst, src *float32, n int)

//go:noescape
func add3AVX2(dst, a, b *float32, n int)

//go:noescape
func lnApplyAVX2(out, x, w, b *float32, n int, mean, rstd float32)

//go:noescape
func lnBwdSumsAVX2(x, d, w *float32, n int, mean, rstd float32) (dnorm, dnormNorm float32)

//go:noescape
func lnBwdApplyAVX2(di, dw, db, x, d, w *float32, n int, mean, rstd, a, b float32)

//go:noescape
func softmaxBwdAVX2(d, p *float32, n int, s, scale float32)

//go:noescape
func adamwAVX2(p, grad, m, v *float32, n int, c *adamConsts)
