//go:build amd64

#include "textflag.h"

// The dot-form kernel of package avx2 (see dot.go): dot products of one
// row of A with rows of B, both contiguous. k is a multiple of 8 (0
// allowed); the Go side adds the last k mod 8 terms. Two accumulators per
// row (16 floats a step) keep the adds off each other's latency; a row's
// eight lanes l0..l7 are reduced as ((l0+l1)+(l2+l3)) + ((l4+l5)+(l6+l7)).

// func dot4(a, b *float32, ldb, k, nb int, out *float32)
// out[4q+r] = sum_{p<k} a[p]*b[(4q+r)*ldb+p] for q < nb, r < 4: nb blocks
// of four rows of B, one after another; ldb in floats, nb > 0.
TEXT ·dot4(SB), NOSPLIT, $0-48
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DX
	MOVQ ldb+16(FP), R10
	SHLQ $2, R10
	MOVQ k+24(FP), R9
	MOVQ nb+32(FP), BX
	MOVQ out+40(FP), DI

d4block:
	LEAQ   (DX)(R10*1), R11
	LEAQ   (R11)(R10*1), R12
	LEAQ   (R12)(R10*1), R13
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	XORQ   AX, AX
	MOVQ   R9, CX
	SUBQ   $16, CX
	JLT    d4tail

d4loop:
	VMOVUPS     (SI)(AX*1), Y8
	VMOVUPS     32(SI)(AX*1), Y9
	VFMADD231PS (DX)(AX*1), Y8, Y0
	VFMADD231PS 32(DX)(AX*1), Y9, Y1
	VFMADD231PS (R11)(AX*1), Y8, Y2
	VFMADD231PS 32(R11)(AX*1), Y9, Y3
	VFMADD231PS (R12)(AX*1), Y8, Y4
	VFMADD231PS 32(R12)(AX*1), Y9, Y5
	VFMADD231PS (R13)(AX*1), Y8, Y6
	VFMADD231PS 32(R13)(AX*1), Y9, Y7
	ADDQ        $64, AX
	SUBQ        $16, CX
	JGE         d4loop

d4tail:
	ADDQ        $16, CX // 0 or 8 left
	JZ          d4reduce
	VMOVUPS     (SI)(AX*1), Y8
	VFMADD231PS (DX)(AX*1), Y8, Y0
	VFMADD231PS (R11)(AX*1), Y8, Y2
	VFMADD231PS (R12)(AX*1), Y8, Y4
	VFMADD231PS (R13)(AX*1), Y8, Y6

d4reduce:
	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y5, Y4, Y4
	VADDPS       Y7, Y6, Y6
	VHADDPS      Y2, Y0, Y0 // [r0 l01 l23, r1 l01 l23 | r0 l45 l67, r1 l45 l67]
	VHADDPS      Y6, Y4, Y4 // the same for r2, r3
	VHADDPS      Y4, Y0, Y0 // [r0..r3 lanes 0-3 | r0..r3 lanes 4-7]
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VMOVUPS      X0, (DI)
	ADDQ         $16, DI
	LEAQ         (R13)(R10*1), DX // the next four rows
	DECQ         BX
	JNZ          d4block
	VZEROUPPER
	RET
