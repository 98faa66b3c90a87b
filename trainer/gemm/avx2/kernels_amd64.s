//go:build amd64

#include "textflag.h"

// Micro-kernels of package avx2 (AVX2 + FMA). Go operand order: destination
// last; VFMADD231PS x, y, acc: acc += y*x.

// Axpy-form tiles: C[0:4, 0:8*NV] = alpha*sum_p A(r, p)*B[p, :] + beta*C.
// A(r, p) is at a + r*arow + p*ak (bytes); B is a packed panel, row p at
// b + p*ldb*4. Registers: DI c, R8 ldc bytes, SI/R12/R13/BX the four rows
// of A, AX their common offset (p*ak), R9 ak, DX b, R10 ldb bytes, CX the
// k steps left; after the loop Y14 alpha, Y13 beta.

#define AXPY_PROLOGUE \
	MOVQ c+0(FP), DI \
	MOVQ ldc+8(FP), R8 \
	SHLQ $2, R8 \
	MOVQ a+16(FP), SI \
	MOVQ arow+24(FP), R11 \
	MOVQ ak+32(FP), R9 \
	MOVQ b+40(FP), DX \
	MOVQ ldb+48(FP), R10 \
	SHLQ $2, R10 \
	MOVQ k+56(FP), CX \
	LEAQ (SI)(R11*1), R12 \
	LEAQ (R12)(R11*1), R13 \
	LEAQ (R13)(R11*1), BX \
	PREFETCHC \
	XORQ AX, AX

// PREFETCHC asks for the tile's C rows (up to 96 bytes each, three cache
// lines when unaligned) while the k loop runs: C is often the shared
// gradient, last touched a layer ago. It uses AX.
#define PREFETCHC \
	MOVQ DI, AX \
	PREFETCHT0 (AX) \
	PREFETCHT0 64(AX) \
	PREFETCHT0 95(AX) \
	ADDQ R8, AX \
	PREFETCHT0 (AX) \
	PREFETCHT0 64(AX) \
	PREFETCHT0 95(AX) \
	ADDQ R8, AX \
	PREFETCHT0 (AX) \
	PREFETCHT0 64(AX) \
	PREFETCHT0 95(AX) \
	ADDQ R8, AX \
	PREFETCHT0 (AX) \
	PREFETCHT0 64(AX) \
	PREFETCHT0 95(AX)

// EPI scales acc by alpha (Y14) and adds beta (Y13) times C at mem, then
// stores it there; beta == ±0 (R11 == 0: its bits shifted past the sign)
// never reads C, so NaN there does not survive.
#define EPI(acc, mem) \
	VMULPS Y14, acc, acc \
	TESTQ R11, R11 \
	JZ 2(PC) \
	VFMADD231PS mem, Y13, acc \
	VMOVUPS acc, mem

#define LOAD_AB \
	VBROADCASTSS alpha+64(FP), Y14 \
	VBROADCASTSS beta+68(FP), Y13 \
	MOVL beta+68(FP), R11 \
	SHLL $1, R11

// One k step of the 4x24 tile.
#define STEP24 \
	VMOVUPS      (DX), Y12 \
	VMOVUPS      32(DX), Y13 \
	VMOVUPS      64(DX), Y14 \
	VBROADCASTSS (SI)(AX*1), Y15 \
	VFMADD231PS  Y12, Y15, Y0 \
	VFMADD231PS  Y13, Y15, Y1 \
	VFMADD231PS  Y14, Y15, Y2 \
	VBROADCASTSS (R12)(AX*1), Y15 \
	VFMADD231PS  Y12, Y15, Y3 \
	VFMADD231PS  Y13, Y15, Y4 \
	VFMADD231PS  Y14, Y15, Y5 \
	VBROADCASTSS (R13)(AX*1), Y15 \
	VFMADD231PS  Y12, Y15, Y6 \
	VFMADD231PS  Y13, Y15, Y7 \
	VFMADD231PS  Y14, Y15, Y8 \
	VBROADCASTSS (BX)(AX*1), Y15 \
	VFMADD231PS  Y12, Y15, Y9 \
	VFMADD231PS  Y13, Y15, Y10 \
	VFMADD231PS  Y14, Y15, Y11 \
	ADDQ         R9, AX \
	ADDQ         R10, DX

#define STEP16 \
	VMOVUPS      (DX), Y12 \
	VMOVUPS      32(DX), Y13 \
	VBROADCASTSS (SI)(AX*1), Y15 \
	VFMADD231PS  Y12, Y15, Y0 \
	VFMADD231PS  Y13, Y15, Y1 \
	VBROADCASTSS (R12)(AX*1), Y15 \
	VFMADD231PS  Y12, Y15, Y3 \
	VFMADD231PS  Y13, Y15, Y4 \
	VBROADCASTSS (R13)(AX*1), Y15 \
	VFMADD231PS  Y12, Y15, Y6 \
	VFMADD231PS  Y13, Y15, Y7 \
	VBROADCASTSS (BX)(AX*1), Y15 \
	VFMADD231PS  Y12, Y15, Y9 \
	VFMADD231PS  Y13, Y15, Y10 \
	ADDQ         R9, AX \
	ADDQ         R10, DX

#define STEP8 \
	VMOVUPS      (DX), Y12 \
	VBROADCASTSS (SI)(AX*1), Y15 \
	VFMADD231PS  Y12, Y15, Y0 \
	VBROADCASTSS (R12)(AX*1), Y15 \
	VFMADD231PS  Y12, Y15, Y3 \
	VBROADCASTSS (R13)(AX*1), Y15 \
	VFMADD231PS  Y12, Y15, Y6 \
	VBROADCASTSS (BX)(AX*1), Y15 \
	VFMADD231PS  Y12, Y15, Y9 \
	ADDQ         R9, AX \
	ADDQ         R10, DX

// func axpy4x24(c *float32, ldc int, a *float32, arow, ak int, b *float32, ldb, k int, alpha, beta float32)
TEXT ·axpy4x24(SB), NOSPLIT, $0-72
	AXPY_PROLOGUE
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	SHRQ   $1, CX
	JCC    l24 // k even
	STEP24
	TESTQ  CX, CX
	JZ     e24

l24:
	STEP24
	STEP24
	DECQ CX
	JNZ  l24

e24:
	LOAD_AB
	EPI(Y0, (DI))
	EPI(Y1, 32(DI))
	EPI(Y2, 64(DI))
	ADDQ R8, DI
	EPI(Y3, (DI))
	EPI(Y4, 32(DI))
	EPI(Y5, 64(DI))
	ADDQ R8, DI
	EPI(Y6, (DI))
	EPI(Y7, 32(DI))
	EPI(Y8, 64(DI))
	ADDQ R8, DI
	EPI(Y9, (DI))
	EPI(Y10, 32(DI))
	EPI(Y11, 64(DI))
	VZEROUPPER
	RET

// func axpy4x16(c *float32, ldc int, a *float32, arow, ak int, b *float32, ldb, k int, alpha, beta float32)
TEXT ·axpy4x16(SB), NOSPLIT, $0-72
	AXPY_PROLOGUE
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	SHRQ   $1, CX
	JCC    l16
	STEP16
	TESTQ  CX, CX
	JZ     e16

l16:
	STEP16
	STEP16
	DECQ CX
	JNZ  l16

e16:
	LOAD_AB
	EPI(Y0, (DI))
	EPI(Y1, 32(DI))
	ADDQ R8, DI
	EPI(Y3, (DI))
	EPI(Y4, 32(DI))
	ADDQ R8, DI
	EPI(Y6, (DI))
	EPI(Y7, 32(DI))
	ADDQ R8, DI
	EPI(Y9, (DI))
	EPI(Y10, 32(DI))
	VZEROUPPER
	RET

// func axpy4x8(c *float32, ldc int, a *float32, arow, ak int, b *float32, ldb, k int, alpha, beta float32)
TEXT ·axpy4x8(SB), NOSPLIT, $0-72
	AXPY_PROLOGUE
	VXORPS Y0, Y0, Y0
	VXORPS Y3, Y3, Y3
	VXORPS Y6, Y6, Y6
	VXORPS Y9, Y9, Y9
	SHRQ   $1, CX
	JCC    l8
	STEP8
	TESTQ  CX, CX
	JZ     e8

l8:
	STEP8
	STEP8
	DECQ CX
	JNZ  l8

e8:
	LOAD_AB
	EPI(Y0, (DI))
	ADDQ R8, DI
	EPI(Y3, (DI))
	ADDQ R8, DI
	EPI(Y6, (DI))
	ADDQ R8, DI
	EPI(Y9, (DI))
	VZEROUPPER
	RET

// func pack(dst, src *float32, ldsrc, k, nv int)
// Copies k rows of nv*8 floats (nv = 1, 2 or 3) from src (row stride ldsrc
// floats) to dst (row stride nv*8).
TEXT ·pack(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ ldsrc+16(FP), R8
	SHLQ $2, R8
	MOVQ k+24(FP), CX
	MOVQ nv+32(FP), DX
	MOVQ R8, R9
	SHLQ $4, R9 // 16 rows ahead, in bytes
	CMPQ DX, $2
	JLT  p8
	JEQ  p16

p24:
	PREFETCHT0 (SI)(R9*1)
	PREFETCHT0 64(SI)(R9*1)
	PREFETCHT0 95(SI)(R9*1)
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	ADDQ    R8, SI
	ADDQ    $96, DI
	DECQ    CX
	JNZ     p24
	VZEROUPPER
	RET

p16:
	PREFETCHT0 (SI)(R9*1)
	PREFETCHT0 64(SI)(R9*1)
	PREFETCHT0 95(SI)(R9*1)
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ    R8, SI
	ADDQ    $64, DI
	DECQ    CX
	JNZ     p16
	VZEROUPPER
	RET

p8:
	PREFETCHT0 (SI)(R9*1)
	PREFETCHT0 64(SI)(R9*1)
	PREFETCHT0 95(SI)(R9*1)
	VMOVUPS (SI), Y0
	VMOVUPS Y0, (DI)
	ADDQ    R8, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     p8
	VZEROUPPER
	RET

// func packT(dst, src *float32, ldsrc, k, nv int)
// Transposing pack: dst[p*8nv + c] = src[c*ldsrc + p] for c < 8*nv, p < k
// (k a positive multiple of 8, nv ≥ 1; package avx512 uses 2, 4 and 6): the k×8nv panel of Bᵀ
// from 8nv rows of B, in 8×8 blocks transposed in registers.
TEXT ·packT(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ ldsrc+16(FP), R8
	SHLQ $2, R8            // row stride of src, bytes
	MOVQ k+24(FP), R9
	SHRQ $3, R9            // 8-column blocks
	MOVQ nv+32(FP), R10
	MOVQ R10, R11
	SHLQ $5, R11           // dst row stride, bytes (32*nv)
	LEAQ (R8)(R8*2), R12   // 3 rows of src
	XORQ BX, BX            // r8: which 8-row block

tblk:
	MOVQ SI, AX            // src row 8*r8, column 0
	MOVQ DI, DX            // dst row 0, column 8*r8
	MOVQ R9, CX

tcol:
	MOVQ    AX, R13
	VMOVUPS (R13), Y0
	VMOVUPS (R13)(R8*1), Y1
	VMOVUPS (R13)(R8*2), Y2
	VMOVUPS (R13)(R12*1), Y3
	LEAQ    (R13)(R8*4), R13
	VMOVUPS (R13), Y4
	VMOVUPS (R13)(R8*1), Y5
	VMOVUPS (R13)(R8*2), Y6
	VMOVUPS (R13)(R12*1), Y7

	VUNPCKLPS Y1, Y0, Y8
	VUNPCKHPS Y1, Y0, Y9
	VUNPCKLPS Y3, Y2, Y10
	VUNPCKHPS Y3, Y2, Y11
	VUNPCKLPS Y5, Y4, Y12
	VUNPCKHPS Y5, Y4, Y13
	VUNPCKLPS Y7, Y6, Y14
	VUNPCKHPS Y7, Y6, Y15

	VSHUFPS $0x44, Y10, Y8, Y0
	VSHUFPS $0xEE, Y10, Y8, Y1
	VSHUFPS $0x44, Y11, Y9, Y2
	VSHUFPS $0xEE, Y11, Y9, Y3
	VSHUFPS $0x44, Y14, Y12, Y4
	VSHUFPS $0xEE, Y14, Y12, Y5
	VSHUFPS $0x44, Y15, Y13, Y6
	VSHUFPS $0xEE, Y15, Y13, Y7

	VPERM2F128 $0x20, Y4, Y0, Y8
	VPERM2F128 $0x20, Y5, Y1, Y9
	VPERM2F128 $0x20, Y6, Y2, Y10
	VPERM2F128 $0x20, Y7, Y3, Y11
	VPERM2F128 $0x31, Y4, Y0, Y12
	VPERM2F128 $0x31, Y5, Y1, Y13
	VPERM2F128 $0x31, Y6, Y2, Y14
	VPERM2F128 $0x31, Y7, Y3, Y15

	MOVQ    DX, R13
	VMOVUPS Y8, (R13)
	ADDQ    R11, R13
	VMOVUPS Y9, (R13)
	ADDQ    R11, R13
	VMOVUPS Y10, (R13)
	ADDQ    R11, R13
	VMOVUPS Y11, (R13)
	ADDQ    R11, R13
	VMOVUPS Y12, (R13)
	ADDQ    R11, R13
	VMOVUPS Y13, (R13)
	ADDQ    R11, R13
	VMOVUPS Y14, (R13)
	ADDQ    R11, R13
	VMOVUPS Y15, (R13)
	ADDQ    R11, R13
	MOVQ    R13, DX        // dst 8 rows down

	ADDQ $32, AX           // src 8 columns right
	DECQ CX
	JNZ  tcol

	LEAQ (SI)(R8*8), SI    // src 8 rows down
	ADDQ $32, DI           // dst 8 columns right
	INCQ BX
	CMPQ BX, R10
	JLT  tblk
	VZEROUPPER
	RET
