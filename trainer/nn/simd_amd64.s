//go:build amd64

#include "textflag.h"

// AVX2 + FMA primitives of simd.go, 8 floats per instruction. Every
// function takes n, a positive multiple of 8, and loops n/8 times. Operand
// order is Go's: the destination last (VFMADD213PS m, b, a: a = b*a + m;
// VFMADD231PS x, y, a: a += y*x; VSUBPS s2, s1, d: d = s1 - s2).
//
// Offsets into geluConsts (32 bytes per constant): 0 s, 32 s*0.044715,
// 64 s*3*0.044715, 96 clamp, 128 -clamp, 160 tiny, 192 half, 224 one,
// 256..448 a13..a1, 480..576 b6..b0, 608 abs mask.
//
// Offsets into expConsts: 0 hi, 32 lo, 64 log2e, 96 half, 128 ln2 high,
// 160 ln2 low, 192..352 p0..p5, 384 one, 416 bias 127 (int32).

// tanh of Y2 into Y5 (Y2 is clamped in place); uses Y3, Y4, Y6; R8 = consts.
#define TANH_Y2_Y5 \
	VMINPS 96(R8), Y2, Y2 \
	VMAXPS 128(R8), Y2, Y2 \
	VANDPS 608(R8), Y2, Y3 \
	VCMPPS $1, 160(R8), Y3, Y3 \
	VMULPS Y2, Y2, Y4 \
	VMOVUPS 256(R8), Y5 \
	VFMADD213PS 288(R8), Y4, Y5 \
	VFMADD213PS 320(R8), Y4, Y5 \
	VFMADD213PS 352(R8), Y4, Y5 \
	VFMADD213PS 384(R8), Y4, Y5 \
	VFMADD213PS 416(R8), Y4, Y5 \
	VFMADD213PS 448(R8), Y4, Y5 \
	VMULPS Y2, Y5, Y5 \
	VMOVUPS 480(R8), Y6 \
	VFMADD213PS 512(R8), Y4, Y6 \
	VFMADD213PS 544(R8), Y4, Y6 \
	VFMADD213PS 576(R8), Y4, Y6 \
	VDIVPS Y6, Y5, Y5 \
	VBLENDVPS Y3, Y2, Y5, Y5

// GELU argument of x = Y0 into Y2: s*x*(1 + 0.044715*x²); Y1 = x².
#define GELU_ARG \
	VMULPS Y0, Y0, Y1 \
	VMOVUPS 32(R8), Y2 \
	VFMADD213PS 0(R8), Y1, Y2 \
	VMULPS Y0, Y2, Y2

// horizontal sum of Y0 into X0 (fixed order).
#define HSUM_Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS X1, X0, X0 \
	VHADDPS X0, X0, X0 \
	VHADDPS X0, X0, X0

// func geluFwdAVX2(out, inp *float32, n int, c *[geluNumConsts][8]float32)
TEXT ·geluFwdAVX2(SB), NOSPLIT, $0-32
	MOVQ out+0(FP), DI
	MOVQ inp+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ c+24(FP), R8
	SHRQ $3, CX
	JZ   gfdone

gfloop:
	VMOVUPS (SI), Y0
	GELU_ARG
	TANH_Y2_Y5
	VMULPS      192(R8), Y0, Y0 // hx = x/2
	VFMADD213PS Y0, Y0, Y5      // hx*th + hx
	VMOVUPS     Y5, (DI)
	ADDQ        $32, SI
	ADDQ        $32, DI
	DECQ        CX
	JNZ         gfloop

gfdone:
	VZEROUPPER
	RET

// func geluBwdAVX2(dinp, inp, dout *float32, n int, c *[geluNumConsts][8]float32, acc int)
TEXT ·geluBwdAVX2(SB), NOSPLIT, $0-48
	MOVQ dinp+0(FP), DI
	MOVQ inp+8(FP), SI
	MOVQ dout+16(FP), DX
	MOVQ n+24(FP), CX
	MOVQ c+32(FP), R8
	MOVQ acc+40(FP), R9
	SHRQ $3, CX
	JZ   gbdone

gbloop:
	VMOVUPS (SI), Y0
	GELU_ARG
	TANH_Y2_Y5
	VMOVUPS      224(R8), Y6
	VFNMADD231PS Y5, Y5, Y6     // sech² = 1 - th²
	VMOVUPS      64(R8), Y7
	VFMADD213PS  0(R8), Y1, Y7  // k = s + s*3*0.044715*x²
	VMULPS       192(R8), Y0, Y0 // hx
	VMULPS       Y6, Y0, Y0     // hx*sech²
	VMOVUPS      192(R8), Y8
	VFMADD231PS  Y7, Y0, Y8     // 0.5 + hx*sech²*k
	VFMADD231PS  192(R8), Y5, Y8 // + 0.5*th
	VMULPS       (DX), Y8, Y8   // * dout
	TESTQ        R9, R9
	JZ           gbstore
	VADDPS       (DI), Y8, Y8

gbstore:
	VMOVUPS Y8, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	ADDQ    $32, DX
	DECQ    CX
	JNZ     gbloop

gbdone:
	VZEROUPPER
	RET

// func expSubAVX2(x *float32, n int, max float32, c *[expNumConsts][8]float32) float32
TEXT ·expSubAVX2(SB), NOSPLIT, $0-36
	MOVQ         x+0(FP), DI
	MOVQ         n+8(FP), CX
	VBROADCASTSS max+16(FP), Y14
	MOVQ         c+24(FP), R8
	VXORPS       Y13, Y13, Y13
	SHRQ         $3, CX
	JZ           exdone

exloop:
	VMOVUPS      (DI), Y0
	VSUBPS       Y14, Y0, Y0       // x - max
	VCMPPS       $13, 32(R8), Y0, Y1 // keep = x >= lo
	VMINPS       0(R8), Y0, Y0
	VMAXPS       32(R8), Y0, Y0
	VMOVUPS      64(R8), Y2
	VFMADD213PS  96(R8), Y0, Y2    // x*log2e + 0.5
	VROUNDPS     $1, Y2, Y2        // fx = floor
	VFNMADD231PS 128(R8), Y2, Y0   // x -= fx*ln2hi
	VFNMADD231PS 160(R8), Y2, Y0   // x -= fx*ln2lo
	VMULPS       Y0, Y0, Y3        // z = x²
	VMOVUPS      192(R8), Y4
	VFMADD213PS  224(R8), Y0, Y4
	VFMADD213PS  256(R8), Y0, Y4
	VFMADD213PS  288(R8), Y0, Y4
	VFMADD213PS  320(R8), Y0, Y4
	VFMADD213PS  352(R8), Y0, Y4
	VFMADD213PS  Y0, Y3, Y4        // y*z + x
	VADDPS       384(R8), Y4, Y4   // + 1
	VCVTTPS2DQ   Y2, Y5
	VPADDD       416(R8), Y5, Y5
	VPSLLD       $23, Y5, Y5       // 2^fx
	VMULPS       Y5, Y4, Y4
	VANDPS       Y1, Y4, Y4
	VMOVUPS      Y4, (DI)
	VADDPS       Y4, Y13, Y13
	ADDQ         $32, DI
	DECQ         CX
	JNZ          exloop

exdone:
	VMOVAPS Y13, Y0
	HSUM_Y0
	VMOVSS  X0, ret+32(FP)
	VZEROUPPER
	RET

// func maxAVX2(x *float32, n int) float32
TEXT ·maxAVX2(SB), NOSPLIT, $0-20
	MOVQ    x+0(FP), DI
	MOVQ    n+8(FP), CX
	SHRQ    $3, CX
	VMOVUPS (DI), Y0
	ADDQ    $32, DI
	DECQ    CX
	JZ      mxdone

mxloop:
	VMAXPS (DI), Y0, Y0
	ADDQ   $32, DI
	DECQ   CX
	JNZ    mxloop

mxdone:
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0x4e, X0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0xb1, X0, X1
	VMAXPS       X1, X0, X0
	VMOVSS       X0, ret+16(FP)
	VZEROUPPER
	RET

// func sumAVX2(x *float32, n int) float32
TEXT ·sumAVX2(SB), NOSPLIT, $0-20
	MOVQ   x+0(FP), DI
	MOVQ   n+8(FP), CX
	SHRQ   $3, CX
	VXORPS Y0, Y0, Y0

smloop:
	VADDPS (DI), Y0, Y0
	ADDQ   $32, DI
	DECQ   CX
	JNZ    smloop
	HSUM_Y0
	VMOVSS X0, ret+16(FP)
	VZEROUPPER
	RET

// func dotAVX2(x, y *float32, n int) float32
TEXT ·dotAVX2(SB), NOSPLIT, $0-28
	MOVQ   x+0(FP), DI
	MOVQ   y+8(FP), SI
	MOVQ   n+16(FP), CX
	SHRQ   $3, CX
	VXORPS Y0, Y0, Y0

dtloop:
	VMOVUPS     (DI), Y2
	VFMADD231PS (SI), Y2, Y0
	ADDQ        $32, DI
	ADDQ        $32, SI
	DECQ        CX
	JNZ         dtloop
	HSUM_Y0
	VMOVSS      X0, ret+24(FP)
	VZEROUPPER
	RET

// func sumSqDevAVX2(x *float32, n int, mean float32) float32
TEXT ·sumSqDevAVX2(SB), NOSPLIT, $0-28
	MOVQ         x+0(FP), DI
	MOVQ         n+8(FP), CX
	VBROADCASTSS mean+16(FP), Y3
	SHRQ         $3, CX
	VXORPS       Y0, Y0, Y0

sqloop:
	VMOVUPS     (DI), Y2
	VSUBPS      Y3, Y2, Y2
	VFMADD231PS Y2, Y2, Y0
	ADDQ        $32, DI
	DECQ        CX
	JNZ         sqloop
	HSUM_Y0
	VMOVSS      X0, ret+24(FP)
	VZEROUPPER
	RET

// func scaleAVX2(x *float32, n int, s float32)
TEXT ·scaleAVX2(SB), NOSPLIT, $0-20
	MOVQ         x+0(FP), DI
	MOVQ         n+8(FP), CX
	VBROADCASTSS s+16(FP), Y3
	SHRQ         $3, CX

scloop:
	VMULPS  (DI), Y3, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	DECQ    CX
	JNZ     scloop
	VZEROUPPER
	RET

// func scaleIntoAVX2(dst, x *float32, n int, s float32)
TEXT ·scaleIntoAVX2(SB), NOSPLIT, $0-28
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS s+24(FP), Y3
	SHRQ         $3, CX

siloop:
	VMULPS  (SI), Y3, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	DECQ    CX
	JNZ     siloop
	VZEROUPPER
	RET

// func axpyAVX2(dst, x *float32, n int, s float32)
TEXT ·axpyAVX2(SB), NOSPLIT, $0-28
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS s+24(FP), Y3
	SHRQ         $3, CX

axloop:
	VMOVUPS     (DI), Y0
	VFMADD231PS (SI), Y3, Y0
	VMOVUPS     Y0, (DI)
	ADDQ        $32, DI
	ADDQ        $32, SI
	DECQ        CX
	JNZ         axloop
	VZEROUPPER
	RET

// func addAVX2(dst, src *float32, n int)
TEXT ·addAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX

adloop:
	VMOVUPS (DI), Y0
	VADDPS  (SI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	DECQ    CX
	JNZ     adloop
	VZEROUPPER
	RET

// func add3AVX2(dst, a, b *float32, n int)
TEXT ·add3AVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX
	SHRQ $3, CX

a3loop:
	VMOVUPS (SI), Y0
	VADDPS  (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	ADDQ    $32, DX
	DECQ    CX
	JNZ     a3loop
	VZEROUPPER
	RET

// func lnApplyAVX2(out, x, w, b *float32, n int, mean, rstd float32)
TEXT ·lnApplyAVX2(SB), NOSPLIT, $0-48
	MOVQ         out+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         w+16(FP), DX
	MOVQ         b+24(FP), BX
	MOVQ         n+32(FP), CX
	VBROADCASTSS mean+40(FP), Y3
	VBROADCASTSS rstd+44(FP), Y4
	SHRQ         $3, CX

laloop:
	VMOVUPS     (SI), Y0
	VSUBPS      Y3, Y0, Y0
	VMULPS      Y4, Y0, Y0
	VMOVUPS     (BX), Y1
	VFMADD231PS (DX), Y0, Y1
	VMOVUPS     Y1, (DI)
	ADDQ        $32, DI
	ADDQ        $32, SI
	ADDQ        $32, DX
	ADDQ        $32, BX
	DECQ        CX
	JNZ         laloop
	VZEROUPPER
	RET

// func lnBwdSumsAVX2(x, d, w *float32, n int, mean, rstd float32) (dnorm, dnormNorm float32)
TEXT ·lnBwdSumsAVX2(SB), NOSPLIT, $0-48
	MOVQ         x+0(FP), DI
	MOVQ         d+8(FP), SI
	MOVQ         w+16(FP), DX
	MOVQ         n+24(FP), CX
	VBROADCASTSS mean+32(FP), Y3
	VBROADCASTSS rstd+36(FP), Y4
	SHRQ         $3, CX
	VXORPS       Y0, Y0, Y0
	VXORPS       Y5, Y5, Y5

lsloop:
	VMOVUPS     (DI), Y1
	VSUBPS      Y3, Y1, Y1
	VMULPS      Y4, Y1, Y1    // norm
	VMOVUPS     (SI), Y2
	VMULPS      (DX), Y2, Y2  // dn = w*d
	VADDPS      Y2, Y0, Y0
	VFMADD231PS Y1, Y2, Y5    // += dn*norm
	ADDQ        $32, DI
	ADDQ        $32, SI
	ADDQ        $32, DX
	DECQ        CX
	JNZ         lsloop
	HSUM_Y0
	VMOVSS      X0, dnorm+40(FP)
	VMOVAPS     Y5, Y0
	HSUM_Y0
	VMOVSS      X0, dnormNorm+44(FP)
	VZEROUPPER
	RET

// func lnBwdApplyAVX2(di, dw, db, x, d, w *float32, n int, mean, rstd, a, b float32)
TEXT ·lnBwdApplyAVX2(SB), NOSPLIT, $0-72
	MOVQ         di+0(FP), DI
	MOVQ         dw+8(FP), R9
	MOVQ         db+16(FP), R10
	MOVQ         x+24(FP), SI
	MOVQ         d+32(FP), DX
	MOVQ         w+40(FP), BX
	MOVQ         n+48(FP), CX
	VBROADCASTSS mean+56(FP), Y10
	VBROADCASTSS rstd+60(FP), Y11
	VBROADCASTSS a+64(FP), Y12
	VBROADCASTSS b+68(FP), Y13
	SHRQ         $3, CX

lbloop:
	VMOVUPS      (SI), Y0
	VSUBPS       Y10, Y0, Y0
	VMULPS       Y11, Y0, Y0   // norm
	VMOVUPS      (DX), Y1      // d
	VMULPS       (BX), Y1, Y2  // dn = w*d
	VADDPS       (R10), Y1, Y3
	VMOVUPS      Y3, (R10)     // db += d
	VMOVUPS      (R9), Y3
	VFMADD231PS  Y1, Y0, Y3
	VMOVUPS      Y3, (R9)      // dw += norm*d
	VSUBPS       Y12, Y2, Y2   // dn - a
	VFNMADD231PS Y13, Y0, Y2   // - norm*b
	VMOVUPS      (DI), Y3
	VFMADD231PS  Y11, Y2, Y3   // di += (...)*rstd
	VMOVUPS      Y3, (DI)
	ADDQ         $32, DI
	ADDQ         $32, R9
	ADDQ         $32, R10
	ADDQ         $32, SI
	ADDQ         $32, DX
	ADDQ         $32, BX
	DECQ         CX
	JNZ          lbloop
	VZEROUPPER
	RET

// func softmaxBwdAVX2(d, p *float32, n int, s, scale float32)
TEXT ·softmaxBwdAVX2(SB), NOSPLIT, $0-32
	MOVQ         d+0(FP), DI
	MOVQ         p+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS s+24(FP), Y3
	VBROADCASTSS scale+28(FP), Y4
	SHRQ         $3, CX

sbloop:
	VMOVUPS (DI), Y0
	VSUBPS  Y3, Y0, Y0      // d - s
	VMULPS  (SI), Y4, Y1    // scale*p
	VMULPS  Y0, Y1, Y1
	VMOVUPS Y1, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	DECQ    CX
	JNZ     sbloop
	VZEROUPPER
	RET

// func adamwAVX2(p, grad, m, v *float32, n int, c *adamConsts)
// No fused multiply-adds: the same operations, in the same order, as the
// portable loop, so both give the same bits.
TEXT ·adamwAVX2(SB), NOSPLIT, $0-48
	MOVQ         p+0(FP), DI
	MOVQ         grad+8(FP), SI
	MOVQ         m+16(FP), DX
	MOVQ         v+24(FP), BX
	MOVQ         n+32(FP), CX
	MOVQ         c+40(FP), R8
	VBROADCASTSS 0(R8), Y5   // gradScale
	VBROADCASTSS 4(R8), Y6   // beta1
	VBROADCASTSS 8(R8), Y7   // 1-beta1
	VBROADCASTSS 12(R8), Y8  // beta2
	VBROADCASTSS 16(R8), Y9  // 1-beta2
	VBROADCASTSS 20(R8), Y10 // b1c
	VBROADCASTSS 24(R8), Y11 // b2c
	VBROADCASTSS 28(R8), Y12 // lr
	VBROADCASTSS 32(R8), Y13 // eps
	VBROADCASTSS 36(R8), Y14 // weight decay
	VXORPS       Y4, Y4, Y4
	SHRQ         $3, CX

awloop:
	VMULPS  (SI), Y5, Y0  // g = grad*gradScale
	VMULPS  (DX), Y6, Y1  // beta1*m
	VMULPS  Y0, Y7, Y2    // (1-beta1)*g
	VADDPS  Y2, Y1, Y1    // m'
	VMOVUPS Y1, (DX)
	VMULPS  (BX), Y8, Y2  // beta2*v
	VMULPS  Y0, Y9, Y3    // (1-beta2)*g
	VMULPS  Y0, Y3, Y3    // *g
	VADDPS  Y3, Y2, Y2    // v'
	VMOVUPS Y2, (BX)
	VDIVPS  Y10, Y1, Y1   // mhat
	VDIVPS  Y11, Y2, Y2   // vhat
	VSQRTPS Y2, Y2
	VADDPS  Y13, Y2, Y2
	VDIVPS  Y2, Y1, Y1    // mhat/(sqrt(vhat)+eps)
	VMOVUPS (DI), Y3
	VMULPS  Y3, Y14, Y2   // wd*p
	VADDPS  Y2, Y1, Y1
	VMULPS  Y1, Y12, Y1   // lr*(...)
	VSUBPS  Y1, Y3, Y3
	VMOVUPS Y3, (DI)
	VMOVUPS Y4, (SI)      // grad = 0
	ADDQ    $32, DI
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, BX
	DECQ    CX
	JNZ     awloop
	VZEROUPPER
	RET
