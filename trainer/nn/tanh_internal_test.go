package nn

import (
	"math"
	"testing"
)

// TestTanh32 sweeps every 13th float32 in [-9, 9] (every 997th with -short),
// both signs, and the extremes, and checks the fast tanh against math.Tanh at
// 5e-7 absolute (about 8 float32 ulps of 1; a full sweep measured 4.1e-7).
func TestTanh32(t *testing.T) {
	worst, at := 0.0, float32(0)
	check := func(x float32) {
		d := math.Abs(float64(tanh32(x)) - math.Tanh(float64(x)))
		if d > worst || d != d {
			worst, at = d, x
		}
	}
	step := uint32(13)
	if testing.Short() {
		step = 997
	}
	for b := uint32(0); ; b += step {
		x := math.Float32frombits(b)
		if x > 9 {
			break
		}
		check(x)
		check(-x)
	}
	for _, x := range []float32{10, 100, math.MaxFloat32, float32(math.Inf(1)), -10, -math.MaxFloat32, float32(math.Inf(-1))} {
		check(x)
	}
	t.Logf("largest |tanh32 - math.Tanh| = %.3g at x = %g", worst, at)
	if !(worst < 5e-7) {
		t.Errorf("largest |tanh32 - math.Tanh| = %.3g at x = %g, want < 5e-7", worst, at)
	}
}
