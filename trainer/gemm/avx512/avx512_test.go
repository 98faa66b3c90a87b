package avx512

import (
	"testing"

	"memprobe/trainer/gemm/internal/kerneltest"
)

// The kernel against a float64 reference, on its own (package gemm's tests
// cover the "avx512" backend with its fallback): package kerneltest says
// what is checked and at which tolerance.

var kernel = kerneltest.Kernel{Form: AxpyForm, Rows: MR, Cols: 16}

const noAVX512 = "no AVX-512F on this machine: the avx512 kernel is not used here (package gemm tests the backends that are)"

func TestForms(t *testing.T) {
	if !Available() {
		t.Skip(noAVX512)
	}
	kernel.Grid(t,
		[]int{1, 7, 8, 9, 16, 21},
		[]int{7, 15, 16, 17, 32, 33, 48, 49, 63, 80, 97, 113},
		[]int{1, 2, 7, 8, 9, 16, 24, 127, 128, 129, 264})
}

// TestFormsModelShapes runs the trainer's dense products.
func TestFormsModelShapes(t *testing.T) {
	if !Available() {
		t.Skip(noAVX512)
	}
	kernel.Shapes(t)
}
