package model

import "testing"

func TestSampleToken(t *testing.T) {
	probs := []float32{0.25, 0.5, 0.25}
	for _, c := range []struct {
		r    float32
		want uint16
	}{{0, 0}, {0.2, 0}, {0.25, 1}, {0.74, 1}, {0.75, 2}, {0.999, 2}} {
		if got := SampleToken(probs, c.r); got != c.want {
			t.Errorf("SampleToken(%v, %v) = %d, want %d", probs, c.r, got, c.want)
		}
	}
	// Probabilities that round to less than r still give a valid id.
	if got := SampleToken([]float32{0.3, 0.3}, 0.9); got != 1 {
		t.Errorf("sum below r: got %d, want the last id 1", got)
	}
}
