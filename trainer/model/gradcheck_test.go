package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"memprobe/trainer/gemm"
)

// batchLoss is the step's loss: the mean over B sequences of their mean
// losses, as the trainer computes it.
func batchLoss(c Config, p *Params, a *Acts, inputs, targets [][]uint16) float64 {
	var sum float64
	for b := range inputs {
		sum += float64(Forward(gemm.Naive{}, c, p, a, inputs[b], targets[b]))
	}
	return sum / float64(len(inputs))
}

// TestGradientFiniteDifference checks every coordinate of every parameter
// tensor of the micro preset against central differences of the batch loss.
//
// The model runs in float32, so the difference quotient carries rounding
// error of about ulp(loss)/eps ≈ 2e-7·2.6/eps. With eps = 1e-2 that is 5e-5,
// and the truncation error (eps² times the third derivative) is of the same
// order. Tolerance per coordinate: |fd − analytic| ≤ 2e-4 + 1e-2·|analytic|,
// and per tensor the relative error ‖fd − an‖/‖fd + an‖ ≤ 1e-3 (measured:
// at most 1.6e-4 on every tensor).
func TestGradientFiniteDifference(t *testing.T) {
	c := Presets["micro"]
	P := c.NumParams()
	p := NewParams(c, make([]float32, P))
	Init(c, p, 42)
	// GPT-2's init makes most gradients tiny; spread the weights so every
	// tensor has gradients well above the float32 noise floor.
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range p.Memory {
		p.Memory[i] += float32(rng.NormFloat64() * 0.3)
	}
	a := NewActs(c, make([]float32, c.ActsSize()))
	ga := NewGradActs(c, make([]float32, c.GradActsSize()))
	grads := NewParams(c, make([]float32, P))

	inputs := make([][]uint16, c.Batch)
	targets := make([][]uint16, c.Batch)
	for b := range inputs {
		inputs[b] = make([]uint16, c.Context)
		targets[b] = make([]uint16, c.Context)
		for i := range inputs[b] {
			inputs[b][i] = uint16(rng.IntN(c.Vocab))
			targets[b][i] = uint16(rng.IntN(c.Vocab))
		}
	}
	dloss := 1 / float32(c.Batch*c.Context)
	for b := range inputs {
		Forward(gemm.Naive{}, c, p, a, inputs[b], targets[b])
		Backward(gemm.Naive{}, c, p, grads, a, ga, inputs[b], targets[b], dloss, NoTurnstile{})
	}

	const eps = 1e-2
	ptrs, gptrs := p.Tensors(), grads.Tensors()
	for k, name := range ParamNames {
		tensor, g := *ptrs[k], *gptrs[k]
		var diff2, sum2, worst float64
		for i := range tensor {
			orig := tensor[i]
			tensor[i] = orig + eps
			up := batchLoss(c, p, a, inputs, targets)
			tensor[i] = orig - eps
			down := batchLoss(c, p, a, inputs, targets)
			tensor[i] = orig
			fd := (up - down) / (2 * eps)
			an := float64(g[i])
			d := math.Abs(fd - an)
			diff2 += d * d
			sum2 += (fd + an) * (fd + an)
			worst = math.Max(worst, d)
			if d > 2e-4+1e-2*math.Abs(an) {
				t.Errorf("%s[%d]: finite difference %.6g, backward %.6g", name, i, fd, an)
			}
		}
		rel := math.Sqrt(diff2) / math.Max(math.Sqrt(sum2), 1e-30)
		if rel > 1e-3 {
			t.Errorf("%s: relative error %.3g over %d coordinates", name, rel, len(tensor))
		}
		t.Log(fmt.Sprintf("%-9s %5d coords  max |fd-an| %.2e  rel %.2e", name, len(tensor), worst, rel))
	}
}
