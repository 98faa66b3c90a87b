//go:build !amd64

package avx2

// available is false off amd64: Available reports it and nothing below runs.
const available = false

func axpy4x24(c *float32, ldc int, a *float32, arow, ak int, b *float32, ldb, k int, alpha, beta float32) {
	missing()
}
func axpy4x16(c *float32, ldc int, a *float32, arow, ak int, b *float32, ldb, k int, alpha, beta float32) {
	missing()
}
func axpy4x8(c *float32, ldc int, a *float32, arow, ak int, b *float32, ldb, k int, alpha, beta float32) {
	missing()
}
func pack(dst, src *float32, ldsrc, k, nv int)  { missing() }
func packT(dst, src *float32, ldsrc, k, nv int) { missing() }

func missing()                                         { panic("avx2: kernel called on a machine without AVX2") }
func dot4(a, b *float32, ldb, k, nb int, out *float32) { missing() }
