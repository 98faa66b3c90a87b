package gemm

import "fmt"

// prologue does the part of an Sgemm call that every library-backed backend
// shares, before any pointer reaches the library: it checks the arguments
// against what the call will read and write, and it finishes the calls that
// need no product.
//
// It returns true when the call is complete: m or n is 0 (nothing to do), or
// k is 0 (C = beta*C, with beta == 0 writing zeros). Only then may A and B be
// empty slices with any leading dimension, so the library never sees a
// zero-length slice. Otherwise it panics, naming the backend and the bad
// argument, when a leading dimension is shorter than the row it strides over
// or a slice is shorter than its last row ends; for the cgo backend this is
// what keeps an out-of-range read or write from corrupting memory silently.
func prologue(backend string, transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) (done bool) {
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("gemm %s: negative dimension m=%d n=%d k=%d", backend, m, n, k))
	}
	if m == 0 || n == 0 {
		return true
	}
	checkMatrix(backend, "C", m, n, c, ldc)
	if k == 0 {
		scale(m, n, beta, c, ldc)
		return true
	}
	if transA {
		checkMatrix(backend, "A", k, m, a, lda) // stored k×m
	} else {
		checkMatrix(backend, "A", m, k, a, lda) // stored m×k
	}
	if transB {
		checkMatrix(backend, "B", n, k, b, ldb) // stored n×k
	} else {
		checkMatrix(backend, "B", k, n, b, ldb) // stored k×n
	}
	return false
}

// checkMatrix panics unless x holds a rows×cols row-major matrix with row
// stride ld. rows and cols are positive.
func checkMatrix(backend, name string, rows, cols int, x []float32, ld int) {
	if ld < cols {
		panic(fmt.Sprintf("gemm %s: ld%s=%d is less than the %d columns of %s as stored", backend, name, ld, cols, name))
	}
	if need := (rows-1)*ld + cols; len(x) < need {
		panic(fmt.Sprintf("gemm %s: %s has %d elements, a %d×%d matrix with ld=%d needs %d", backend, name, len(x), rows, cols, ld, need))
	}
}

// scale sets C = beta*C over the m×n view, writing zeros when beta is 0 so
// that NaN or Inf in C do not survive, as in BLAS.
func scale(m, n int, beta float32, c []float32, ldc int) {
	if beta == 1 {
		return
	}
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
			continue
		}
		for j := range row {
			row[j] *= beta
		}
	}
}
