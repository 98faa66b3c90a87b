//go:build amd64

#include "textflag.h"

// Micro-kernels of package avx512 (AVX-512F, EVEX-encoded, 16 lanes). Go
// operand order: destination last; VFMADD231PS x, y, acc: acc += y*x.
//
// Tiles: C[0:8, 0:16*NV] = alpha*sum_p A(r, p)*B[p, :] + beta*C, NV = 3, 2
// or 1 (48, 32 or 16 columns). A(r, p) is at a + r*arow + p*ak (bytes);
// rows 0-3 are addressed from SI, rows 4-7 from BX (SI + 4*arow), with R11 =
// arow and R12 = 3*arow as index registers, so one add per base and k step
// serves both the NN form (arow = 4*lda, ak = 4) and the TN form (arow = 4,
// ak = 4*lda). B is a packed panel, row p at b + p*ldb*4 (DX, R10 bytes).
// CX counts the k steps. Z0-Z23 accumulate (row r, vector v in
// Z(3r+v)); Z24-Z26 hold B's row, Z27/Z28 the broadcast A elements;
// after the loop Z30 is alpha, Z31 beta.

#define PROLOGUE \
	MOVQ a+16(FP), SI \
	MOVQ arow+24(FP), R11 \
	MOVQ ak+32(FP), R9 \
	MOVQ b+40(FP), DX \
	MOVQ ldb+48(FP), R10 \
	SHLQ $2, R10 \
	MOVQ k+56(FP), CX \
	LEAQ (R11)(R11*2), R12 \
	LEAQ (SI)(R11*4), BX \
	MOVQ c+0(FP), DI \
	MOVQ ldc+8(FP), R8 \
	SHLQ $2, R8 \
	PREFETCHC

// PREFETCHC asks for the tile's C rows (up to 192 bytes each: four cache
// lines when unaligned) while the k loop runs: C is often the shared
// gradient, last touched a layer ago. It uses AX.
#define PREFETCHC \
	MOVQ DI, AX \
	PREFETCHROW \
	PREFETCHROW \
	PREFETCHROW \
	PREFETCHROW \
	PREFETCHROW \
	PREFETCHROW \
	PREFETCHROW \
	PREFETCHROW

#define PREFETCHROW \
	PREFETCHT0 (AX) \
	PREFETCHT0 64(AX) \
	PREFETCHT0 128(AX) \
	PREFETCHT0 191(AX) \
	ADDQ R8, AX

// EPI scales acc by alpha (Z30) and adds beta (Z31) times C at mem, then
// stores it there; beta == ±0 (R13 == 0: its bits shifted past the sign)
// never reads C, so NaN there does not survive.
#define EPI(acc, mem) \
	VMULPS Z30, acc, acc \
	TESTQ R13, R13 \
	JZ 2(PC) \
	VFMADD231PS mem, Z31, acc \
	VMOVUPS acc, mem

#define LOAD_AB \
	VBROADCASTSS alpha+64(FP), Z30 \
	VBROADCASTSS beta+68(FP), Z31 \
	MOVL beta+68(FP), R13 \
	SHLL $1, R13

#define ZERO3(a, b, c) \
	VPXORD a, a, a \
	VPXORD b, b, b \
	VPXORD c, c, c

// One k step of the 8x48 tile.
#define STEP48 \
	VMOVUPS      (DX), Z24 \
	VMOVUPS      64(DX), Z25 \
	VMOVUPS      128(DX), Z26 \
	VBROADCASTSS (SI), Z27 \
	VBROADCASTSS (SI)(R11*1), Z28 \
	VFMADD231PS  Z24, Z27, Z0 \
	VFMADD231PS  Z25, Z27, Z1 \
	VFMADD231PS  Z26, Z27, Z2 \
	VBROADCASTSS (SI)(R11*2), Z27 \
	VFMADD231PS  Z24, Z28, Z3 \
	VFMADD231PS  Z25, Z28, Z4 \
	VFMADD231PS  Z26, Z28, Z5 \
	VBROADCASTSS (SI)(R12*1), Z28 \
	VFMADD231PS  Z24, Z27, Z6 \
	VFMADD231PS  Z25, Z27, Z7 \
	VFMADD231PS  Z26, Z27, Z8 \
	VBROADCASTSS (BX), Z27 \
	VFMADD231PS  Z24, Z28, Z9 \
	VFMADD231PS  Z25, Z28, Z10 \
	VFMADD231PS  Z26, Z28, Z11 \
	VBROADCASTSS (BX)(R11*1), Z28 \
	VFMADD231PS  Z24, Z27, Z12 \
	VFMADD231PS  Z25, Z27, Z13 \
	VFMADD231PS  Z26, Z27, Z14 \
	VBROADCASTSS (BX)(R11*2), Z27 \
	VFMADD231PS  Z24, Z28, Z15 \
	VFMADD231PS  Z25, Z28, Z16 \
	VFMADD231PS  Z26, Z28, Z17 \
	VBROADCASTSS (BX)(R12*1), Z28 \
	VFMADD231PS  Z24, Z27, Z18 \
	VFMADD231PS  Z25, Z27, Z19 \
	VFMADD231PS  Z26, Z27, Z20 \
	VFMADD231PS  Z24, Z28, Z21 \
	VFMADD231PS  Z25, Z28, Z22 \
	VFMADD231PS  Z26, Z28, Z23 \
	ADDQ         R9, SI \
	ADDQ         R9, BX \
	ADDQ         R10, DX

#define STEP32 \
	VMOVUPS      (DX), Z24 \
	VMOVUPS      64(DX), Z25 \
	VBROADCASTSS (SI), Z27 \
	VBROADCASTSS (SI)(R11*1), Z28 \
	VFMADD231PS  Z24, Z27, Z0 \
	VFMADD231PS  Z25, Z27, Z1 \
	VBROADCASTSS (SI)(R11*2), Z27 \
	VFMADD231PS  Z24, Z28, Z3 \
	VFMADD231PS  Z25, Z28, Z4 \
	VBROADCASTSS (SI)(R12*1), Z28 \
	VFMADD231PS  Z24, Z27, Z6 \
	VFMADD231PS  Z25, Z27, Z7 \
	VBROADCASTSS (BX), Z27 \
	VFMADD231PS  Z24, Z28, Z9 \
	VFMADD231PS  Z25, Z28, Z10 \
	VBROADCASTSS (BX)(R11*1), Z28 \
	VFMADD231PS  Z24, Z27, Z12 \
	VFMADD231PS  Z25, Z27, Z13 \
	VBROADCASTSS (BX)(R11*2), Z27 \
	VFMADD231PS  Z24, Z28, Z15 \
	VFMADD231PS  Z25, Z28, Z16 \
	VBROADCASTSS (BX)(R12*1), Z28 \
	VFMADD231PS  Z24, Z27, Z18 \
	VFMADD231PS  Z25, Z27, Z19 \
	VFMADD231PS  Z24, Z28, Z21 \
	VFMADD231PS  Z25, Z28, Z22 \
	ADDQ         R9, SI \
	ADDQ         R9, BX \
	ADDQ         R10, DX

#define STEP16 \
	VMOVUPS      (DX), Z24 \
	VBROADCASTSS (SI), Z27 \
	VBROADCASTSS (SI)(R11*1), Z28 \
	VFMADD231PS  Z24, Z27, Z0 \
	VBROADCASTSS (SI)(R11*2), Z27 \
	VFMADD231PS  Z24, Z28, Z3 \
	VBROADCASTSS (SI)(R12*1), Z28 \
	VFMADD231PS  Z24, Z27, Z6 \
	VBROADCASTSS (BX), Z27 \
	VFMADD231PS  Z24, Z28, Z9 \
	VBROADCASTSS (BX)(R11*1), Z28 \
	VFMADD231PS  Z24, Z27, Z12 \
	VBROADCASTSS (BX)(R11*2), Z27 \
	VFMADD231PS  Z24, Z28, Z15 \
	VBROADCASTSS (BX)(R12*1), Z28 \
	VFMADD231PS  Z24, Z27, Z18 \
	VFMADD231PS  Z24, Z28, Z21 \
	ADDQ         R9, SI \
	ADDQ         R9, BX \
	ADDQ         R10, DX

// func tile8x48(c *float32, ldc int, a *float32, arow, ak int, b *float32, ldb, k int, alpha, beta float32)
TEXT ·tile8x48(SB), NOSPLIT, $0-72
	PROLOGUE
	ZERO3(Z0, Z1, Z2)
	ZERO3(Z3, Z4, Z5)
	ZERO3(Z6, Z7, Z8)
	ZERO3(Z9, Z10, Z11)
	ZERO3(Z12, Z13, Z14)
	ZERO3(Z15, Z16, Z17)
	ZERO3(Z18, Z19, Z20)
	ZERO3(Z21, Z22, Z23)
	SHRQ $1, CX
	JCC  l48 // k even
	STEP48
	TESTQ CX, CX
	JZ    e48

l48:
	STEP48
	STEP48
	DECQ CX
	JNZ  l48

e48:
	LOAD_AB
	EPI(Z0, (DI))
	EPI(Z1, 64(DI))
	EPI(Z2, 128(DI))
	ADDQ R8, DI
	EPI(Z3, (DI))
	EPI(Z4, 64(DI))
	EPI(Z5, 128(DI))
	ADDQ R8, DI
	EPI(Z6, (DI))
	EPI(Z7, 64(DI))
	EPI(Z8, 128(DI))
	ADDQ R8, DI
	EPI(Z9, (DI))
	EPI(Z10, 64(DI))
	EPI(Z11, 128(DI))
	ADDQ R8, DI
	EPI(Z12, (DI))
	EPI(Z13, 64(DI))
	EPI(Z14, 128(DI))
	ADDQ R8, DI
	EPI(Z15, (DI))
	EPI(Z16, 64(DI))
	EPI(Z17, 128(DI))
	ADDQ R8, DI
	EPI(Z18, (DI))
	EPI(Z19, 64(DI))
	EPI(Z20, 128(DI))
	ADDQ R8, DI
	EPI(Z21, (DI))
	EPI(Z22, 64(DI))
	EPI(Z23, 128(DI))
	VZEROUPPER
	RET

// func tile8x32(c *float32, ldc int, a *float32, arow, ak int, b *float32, ldb, k int, alpha, beta float32)
TEXT ·tile8x32(SB), NOSPLIT, $0-72
	PROLOGUE
	ZERO3(Z0, Z1, Z3)
	ZERO3(Z4, Z6, Z7)
	ZERO3(Z9, Z10, Z12)
	ZERO3(Z13, Z15, Z16)
	ZERO3(Z18, Z19, Z21)
	VPXORD Z22, Z22, Z22
	SHRQ $1, CX
	JCC  l32
	STEP32
	TESTQ CX, CX
	JZ    e32

l32:
	STEP32
	STEP32
	DECQ CX
	JNZ  l32

e32:
	LOAD_AB
	EPI(Z0, (DI))
	EPI(Z1, 64(DI))
	ADDQ R8, DI
	EPI(Z3, (DI))
	EPI(Z4, 64(DI))
	ADDQ R8, DI
	EPI(Z6, (DI))
	EPI(Z7, 64(DI))
	ADDQ R8, DI
	EPI(Z9, (DI))
	EPI(Z10, 64(DI))
	ADDQ R8, DI
	EPI(Z12, (DI))
	EPI(Z13, 64(DI))
	ADDQ R8, DI
	EPI(Z15, (DI))
	EPI(Z16, 64(DI))
	ADDQ R8, DI
	EPI(Z18, (DI))
	EPI(Z19, 64(DI))
	ADDQ R8, DI
	EPI(Z21, (DI))
	EPI(Z22, 64(DI))
	VZEROUPPER
	RET

// func tile8x16(c *float32, ldc int, a *float32, arow, ak int, b *float32, ldb, k int, alpha, beta float32)
TEXT ·tile8x16(SB), NOSPLIT, $0-72
	PROLOGUE
	ZERO3(Z0, Z3, Z6)
	ZERO3(Z9, Z12, Z15)
	VPXORD Z18, Z18, Z18
	VPXORD Z21, Z21, Z21
	SHRQ $1, CX
	JCC  l16
	STEP16
	TESTQ CX, CX
	JZ    e16

l16:
	STEP16
	STEP16
	DECQ CX
	JNZ  l16

e16:
	LOAD_AB
	EPI(Z0, (DI))
	ADDQ R8, DI
	EPI(Z3, (DI))
	ADDQ R8, DI
	EPI(Z6, (DI))
	ADDQ R8, DI
	EPI(Z9, (DI))
	ADDQ R8, DI
	EPI(Z12, (DI))
	ADDQ R8, DI
	EPI(Z15, (DI))
	ADDQ R8, DI
	EPI(Z18, (DI))
	ADDQ R8, DI
	EPI(Z21, (DI))
	VZEROUPPER
	RET

// func pack(dst, src *float32, ldsrc, k, nv int)
// Copies k rows of nv*16 floats (nv = 1, 2 or 3) from src (row stride ldsrc
// floats) to dst (row stride nv*16), asking for the source 8 rows ahead.
TEXT ·pack(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ ldsrc+16(FP), R8
	SHLQ $2, R8
	MOVQ k+24(FP), CX
	MOVQ nv+32(FP), DX
	MOVQ R8, R9
	SHLQ $3, R9 // 8 rows ahead, in bytes
	CMPQ DX, $2
	JLT  p16
	JEQ  p32

p48:
	PREFETCHT0 (SI)(R9*1)
	PREFETCHT0 64(SI)(R9*1)
	PREFETCHT0 128(SI)(R9*1)
	PREFETCHT0 191(SI)(R9*1)
	VMOVUPS (SI), Z0
	VMOVUPS 64(SI), Z1
	VMOVUPS 128(SI), Z2
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, 128(DI)
	ADDQ    R8, SI
	ADDQ    $192, DI
	DECQ    CX
	JNZ     p48
	VZEROUPPER
	RET

p32:
	PREFETCHT0 (SI)(R9*1)
	PREFETCHT0 64(SI)(R9*1)
	PREFETCHT0 127(SI)(R9*1)
	VMOVUPS (SI), Z0
	VMOVUPS 64(SI), Z1
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	ADDQ    R8, SI
	ADDQ    $128, DI
	DECQ    CX
	JNZ     p32
	VZEROUPPER
	RET

p16:
	PREFETCHT0 (SI)(R9*1)
	PREFETCHT0 63(SI)(R9*1)
	VMOVUPS (SI), Z0
	VMOVUPS Z0, (DI)
	ADDQ    R8, SI
	ADDQ    $64, DI
	DECQ    CX
	JNZ     p16
	VZEROUPPER
	RET

// func prefetch(p *float32, ld, rows, bytes int)
// Asks for rows rows of bytes bytes each (a positive multiple of 64 or
// less), ld floats apart, into the second-level cache.
TEXT ·prefetch(SB), NOSPLIT, $0-32
	MOVQ p+0(FP), SI
	MOVQ ld+8(FP), R8
	SHLQ $2, R8
	MOVQ rows+16(FP), CX
	MOVQ bytes+24(FP), DX
	TESTQ CX, CX
	JZ    pfdone

pfrow:
	XORQ AX, AX

pfline:
	PREFETCHT1 (SI)(AX*1)
	ADDQ $64, AX
	CMPQ AX, DX
	JLT  pfline
	ADDQ R8, SI
	DECQ CX
	JNZ  pfrow

pfdone:
	RET
