package avx2

import (
	"testing"

	"memprobe/trainer/gemm/internal/kerneltest"
)

// The kernel against a float64 reference, on its own (package gemm's tests
// cover the "avx2" backend with its fallback): package kerneltest says
// what is checked and at which tolerance.

var kernel = kerneltest.Kernel{Form: AxpyForm, Rows: 4, Cols: 8}

func TestForms(t *testing.T) {
	if !Available() {
		t.Skip("no AVX2+FMA on this machine")
	}
	kernel.Grid(t,
		[]int{1, 3, 4, 5, 8, 13},
		[]int{3, 4, 7, 8, 9, 16, 17, 24, 25, 41, 49},
		[]int{1, 2, 7, 8, 9, 16, 24, 255, 256, 257, 520})
}

// TestFormsModelShapes runs the trainer's dense products.
func TestFormsModelShapes(t *testing.T) {
	if !Available() {
		t.Skip("no AVX2+FMA on this machine")
	}
	kernel.Shapes(t)
}
