//go:build amd64

package avx2

import "golang.org/x/sys/cpu"

// available: the kernels need AVX2 and FMA (and an OS that saves the YMM
// registers, which cpu.X86.HasAVX2 includes).
var available = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// The kernels of kernels_amd64.s. ldc, ldb and ldsrc are in floats, arow and
// ak (the strides of op(A)'s rows and columns) in bytes; k > 0, and a
// multiple of 8 for packT. They keep no pointer.

//go:noescape
func axpy4x24(c *float32, ldc int, a *float32, arow, ak int, b *float32, ldb, k int, alpha, beta float32)

//go:noescape
func axpy4x16(c *float32, ldc int, a *float32, arow, ak int, b *float32, ldb, k int, alpha, beta float32)

//go:noescape
func axpy4x8(c *float32, ldc int, a *float32, arow, ak int, b *float32, ldb, k int, alpha, beta float32)

//go:noescape
func pack(dst, src *float32, ldsrc, k, nv int)

//go:noescape
func packT(dst, src *float32, ldsrc, k, nv int)

// The dot-form kernel of dot_amd64.s: a and b are rows of k floats (k a
// multiple of 8), ldb in floats (0: the same row four times); it does
// nb > 0 blocks of four rows of b into out[0:4nb].

//go:noescape
func dot4(a, b *float32, ldb, k, nb int, out *float32)
