//go:build amd64

package avx512

import "golang.org/x/sys/cpu"

// available: the kernels need AVX-512F (cpu.X86.HasAVX512F includes the
// operating system's saving of the opmask and ZMM state) and, for the
// transposing pack they borrow from package avx2, AVX2 and FMA.
var available = cpu.X86.HasAVX512F && cpu.X86.HasAVX2 && cpu.X86.HasFMA

// The kernels of kernels_amd64.s. ldc, ldb, ldsrc and ld are in floats,
// arow and ak (the strides of op(A)'s rows and columns) in bytes; k > 0.
// They keep no pointer.

//go:noescape
func tile8x48(c *float32, ldc int, a *float32, arow, ak int, b *float32, ldb, k int, alpha, beta float32)

//go:noescape
func tile8x32(c *float32, ldc int, a *float32, arow, ak int, b *float32, ldb, k int, alpha, beta float32)

//go:noescape
func tile8x16(c *float32, ldc int, a *float32, arow, ak int, b *float32, ldb, k int, alpha, beta float32)

//go:noescape
func pack(dst, src *float32, ldsrc, k, nv int)

//go:noescape
func prefetch(p *float32, ld, rows, bytes int)
