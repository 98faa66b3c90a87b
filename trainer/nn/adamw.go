package nn

import "math"

// AdamWStep holds the scalars of one AdamW step (llm.c's gpt2_update):
// learning rate, moment decays, epsilon, decoupled weight decay, the step
// number T (1-based, for the bias corrections) and the factor every
// gradient is multiplied by first (the clipping scale, 1 without clipping).
type AdamWStep struct {
	LR, Beta1, Beta2, Eps, WeightDecay float32
	T                                  int
	GradScale                          float32
}

// AdamWUpdate applies one AdamW step to params, updating the moments m and
// v, and zeroes grads, all of len(params):
//
//	g = grads*GradScale
//	m = Beta1*m + (1-Beta1)*g;  v = Beta2*v + (1-Beta2)*g²
//	params -= LR*(m/(1-Beta1^T) / (sqrt(v/(1-Beta2^T)) + Eps) + WeightDecay*params)
//
// in float32, each element on its own, so the result does not depend on how
// a caller splits the range. The vector and portable paths agree bit for
// bit (no fused multiply-adds).
func AdamWUpdate(params, grads, m, v []float32, s AdamWStep) {
	c := adamConsts{
		gradScale: s.GradScale,
		beta1:     s.Beta1, oneMinusBeta1: 1 - s.Beta1,
		beta2: s.Beta2, oneMinusBeta2: 1 - s.Beta2,
		b1c: float32(1 - math.Pow(float64(s.Beta1), float64(s.T))),
		b2c: float32(1 - math.Pow(float64(s.Beta2), float64(s.T))),
		lr:  s.LR, eps: s.Eps, weightDecay: s.WeightDecay,
	}
	vAdamW(params, grads, m, v, &c)
}

// AdamWUpdateNaive is the reference of AdamWUpdate, in float64.
func AdamWUpdateNaive(params, grads, m, v []float32, s AdamWStep) {
	b1, b2 := float64(s.Beta1), float64(s.Beta2)
	b1c := 1 - math.Pow(b1, float64(s.T))
	b2c := 1 - math.Pow(b2, float64(s.T))
	for i := range params {
		p := float64(params[i])
		g := float64(grads[i]) * float64(s.GradScale)
		mi := b1*float64(m[i]) + (1-b1)*g
		vi := b2*float64(v[i]) + (1-b2)*g*g
		m[i], v[i] = float32(mi), float32(vi)
		params[i] = float32(p - float64(s.LR)*((mi/b1c)/(math.Sqrt(vi/b2c)+float64(s.Eps))+float64(s.WeightDecay)*p))
		grads[i] = 0
	}
}
