package model

import "memprobe/trainer/nn"

// AdamW holds the optimizer's hyperparameters (Loshchilov & Hutter; the
// update of llm.c's gpt2_update, weight decay applied to every tensor).
type AdamW struct {
	LR          float32 `json:"lr"`
	Beta1       float32 `json:"beta1"`
	Beta2       float32 `json:"beta2"`
	Eps         float32 `json:"eps"`
	WeightDecay float32 `json:"weight_decay"`
	// ClipNorm, when > 0, scales the gradient so its global L2 norm is at
	// most ClipNorm before the update.
	ClipNorm float32 `json:"clip_norm"`
}

// DefaultAdamW matches the PyTorch anchor: lr 3e-4, betas (0.9, 0.999), eps 1e-8, no decay.
var DefaultAdamW = AdamW{LR: 3e-4, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}

// Update applies step t (1-based) to params[i] for i in the given range,
// reading grads scaled by gradScale, and zeroes the gradient it used so the
// next step starts from zero without a separate pass. Disjoint ranges may be
// updated concurrently; the result does not depend on how the range is split.
// The element loop is nn.AdamWUpdate (vectorised where the CPU allows, the
// same bits either way).
func (o AdamW) Update(params, grads, m, v []float32, t int, gradScale float32) {
	n := len(params)
	nn.AdamWUpdate(params, grads[:n], m[:n], v[:n], nn.AdamWStep{
		LR: o.LR, Beta1: o.Beta1, Beta2: o.Beta2, Eps: o.Eps, WeightDecay: o.WeightDecay,
		T: t, GradScale: gradScale,
	})
}

// NormChunk is the fixed chunk size of the gradient-norm reduction: chunk
// sums are float64 and added in chunk order, so the norm does not depend on
// the number of threads that computed the chunks.
const NormChunk = 1 << 16

// SquaredSums writes the sum of squares of each NormChunk-sized chunk of
// grads[lo:hi] into sums[lo/NormChunk:]; lo must be a multiple of NormChunk.
func SquaredSums(sums []float64, grads []float32, lo, hi int) {
	for c := lo; c < hi; c += NormChunk {
		end := min(c+NormChunk, hi)
		var s float64
		for _, g := range grads[c:end] {
			s += float64(g) * float64(g)
		}
		sums[c/NormChunk] = s
	}
}
