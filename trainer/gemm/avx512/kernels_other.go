//go:build !amd64

package avx512

// available is false off amd64: Available reports it and nothing below runs.
const available = false

func tile8x48(c *float32, ldc int, a *float32, arow, ak int, b *float32, ldb, k int, alpha, beta float32) {
	missing()
}
func tile8x32(c *float32, ldc int, a *float32, arow, ak int, b *float32, ldb, k int, alpha, beta float32) {
	missing()
}
func tile8x16(c *float32, ldc int, a *float32, arow, ak int, b *float32, ldb, k int, alpha, beta float32) {
	missing()
}
func pack(dst, src *float32, ldsrc, k, nv int) { missing() }
func prefetch(p *float32, ld, rows, bytes int) { missing() }

func missing() { panic("avx512: kernel called on a machine without AVX-512F") }
