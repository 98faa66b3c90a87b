package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSamplerMatchesRand: the sampler draws math/rand/v2's Float32 of the
// same PCG, bit for bit, so generation keeps its tokens without the heap
// object rand.New makes.
func TestSamplerMatchesRand(t *testing.T) {
	for _, seed := range []uint64{0, 1, 1337, math.MaxUint64} {
		want := rand.New(rand.NewPCG(seed, SampleStream))
		got := NewSampler(seed, SampleStream)
		for i := range 10000 {
			if a, b := got.Float32(), want.Float32(); math.Float32bits(a) != math.Float32bits(b) {
				t.Fatalf("seed %d, draw %d: %v, rand.Float32 %v", seed, i, a, b)
			}
		}
	}
	s := NewSampler(7, SampleStream)
	if n := testing.AllocsPerRun(100, func() { s.Float32() }); n != 0 {
		t.Errorf("Float32 allocates %v times", n)
	}
}
