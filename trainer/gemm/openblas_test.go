//go:build openblas

package gemm

import "testing"

// TestOpenBLASPoolStopped: init stopped the pthread build's worker pool,
// whose threads would otherwise spin 0.1 s of CPU each at the start of
// every command, and a one-thread Sgemm does not start it again.
func TestOpenBLASPoolStopped(t *testing.T) {
	if openblasPoolRunning() {
		t.Fatal("OpenBLAS's worker pool is running after init")
	}
	const n = 256
	a, b, c := make([]float32, n*n), make([]float32, n*n), make([]float32, n*n)
	for i := range a {
		a[i], b[i] = float32(i%7), float32(i%5)
	}
	OpenBLAS{}.Sgemm(false, false, n, n, n, 1, a, n, b, n, 0, c, n)
	if openblasPoolRunning() {
		t.Error("a one-thread Sgemm started OpenBLAS's worker pool again")
	}
}
