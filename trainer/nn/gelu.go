package nn

import "math"

// geluScale is sqrt(2/pi), the constant of GPT-2's tanh approximation.
const geluScale = 0.7978845608028654

// GeluForward applies GPT-2's GELU, 0.5·x·(1 + tanh(sqrt(2/π)·(x + 0.044715·x³))),
// to n elements of inp, with tanh32's approximation of tanh.
func GeluForward(out, inp []float32, n int) {
	vGeluForward(out[:n], inp[:n])
}

// GeluBackward accumulates dinp += GELU'(inp)·dout over n elements.
func GeluBackward(dinp, inp, dout []float32, n int) {
	vGeluBackward(dinp[:n], inp[:n], dout[:n], true)
}

// GeluBackwardInto is GeluBackward overwriting dinp = GELU'(inp)·dout, so the
// caller need not clear dinp first.
func GeluBackwardInto(dinp, inp, dout []float32, n int) {
	vGeluBackward(dinp[:n], inp[:n], dout[:n], false)
}

// tanh32 is a float32 rational approximation of tanh (Eigen's
// generic_fast_tanh_float): a degree 13/6 minimax fit on [-7.9, 7.9],
// outside of which float32 tanh is ±1. Its error against math.Tanh is below
// 5e-7 absolute over all float32 inputs (4.1e-7 at x≈5.83; TestTanh32).
func tanh32(x float32) float32 {
	const clamp = 7.90531110763549805
	if x > clamp {
		x = clamp
	} else if x < -clamp {
		x = -clamp
	}
	if x < 0.0004 && x > -0.0004 {
		return x
	}
	const (
		a1  = 4.89352455891786e-03
		a3  = 6.37261928875436e-04
		a5  = 1.48572235717979e-05
		a7  = 5.12229709037114e-08
		a9  = -8.60467152213735e-11
		a11 = 2.00018790482477e-13
		a13 = -2.76076847742355e-16
		b0  = 4.89352518554385e-03
		b2  = 2.26843463243900e-03
		b4  = 1.18534705686654e-04
		b6  = 1.19825839466702e-06
	)
	x2 := x * x
	p := float32(a13)
	p = p*x2 + a11
	p = p*x2 + a9
	p = p*x2 + a7
	p = p*x2 + a5
	p = p*x2 + a3
	p = p*x2 + a1
	p *= x
	q := float32(b6)
	q = q*x2 + b4
	q = q*x2 + b2
	q = q*x2 + b0
	return p / q
}

// GeluForwardNaive is the reference of GeluForward, in float64.
func GeluForwardNaive(out, inp []float32, n int) {
	for i := 0; i < n; i++ {
		x := float64(inp[i])
		cube := 0.044715 * x * x * x
		out[i] = float32(0.5 * x * (1 + math.Tanh(geluScale*(x+cube))))
	}
}

// GeluBackwardNaive is the reference of GeluBackward, in float64, written as
// llm.c writes it (with cosh).
func GeluBackwardNaive(dinp, inp, dout []float32, n int) {
	for i := 0; i < n; i++ {
		x := float64(inp[i])
		cube := 0.044715 * x * x * x
		arg := geluScale * (x + cube)
		th := math.Tanh(arg)
		ch := math.Cosh(arg)
		sech2 := 1 / (ch * ch)
		grad := 0.5*(1+th) + x*0.5*sech2*geluScale*(1+3*0.044715*x*x)
		dinp[i] += float32(grad * float64(dout[i]))
	}
}

// GeluBackwardIntoNaive is the reference of GeluBackwardInto: it zeroes
// dinp[:n] and runs GeluBackwardNaive.
func GeluBackwardIntoNaive(dinp, inp, dout []float32, n int) {
	clear(dinp[:n])
	GeluBackwardNaive(dinp, inp, dout, n)
}
