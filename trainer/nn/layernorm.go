package nn

import "math"

// layerNormEps is the epsilon GPT-2 adds to the variance.
const layerNormEps = 1e-5

// LayerNormForward normalises each row of inp to zero mean and unit variance
// (biased variance, eps 1e-5), then scales by weight and shifts by bias. It
// keeps each row's mean and 1/sqrt(var+eps) for the backward pass.
//
//	out, inp     (T, C)
//	mean, rstd   (T)
//	weight, bias (C)
func LayerNormForward(out, mean, rstd, inp, weight, bias []float32, T, C int) {
	out = out[:T*C]
	inp = inp[:T*C]
	mean = mean[:T]
	rstd = rstd[:T]
	weight = weight[:C]
	bias = bias[:C]
	invC := 1 / float32(C)
	for t := range mean {
		x := inp[t*C : t*C+C]
		m := vSum(x) * invC
		variance := vSumSqDev(x, m) * invC
		s := 1 / float32(math.Sqrt(float64(variance+layerNormEps)))
		vLNApply(out[t*C:t*C+C], x, weight, bias, m, s)
		mean[t] = m
		rstd[t] = s
	}
}

// LayerNormBackward accumulates the gradients of LayerNormForward into dinp
// (T, C), dweight (C) and dbias (C), given dout (T, C) and the forward pass's
// inp, weight, mean and rstd.
func LayerNormBackward(dinp, dweight, dbias, dout, inp, weight, mean, rstd []float32, T, C int) {
	dinp = dinp[:T*C]
	dout = dout[:T*C]
	inp = inp[:T*C]
	dweight = dweight[:C]
	dbias = dbias[:C]
	weight = weight[:C]
	mean = mean[:T]
	rstd = rstd[:T]
	invC := 1 / float32(C)
	for t, m := range mean {
		s := rstd[t]
		x := inp[t*C : t*C+C]
		d := dout[t*C : t*C+C]
		// Two reductions first: the mean of dnorm and of dnorm*norm.
		dnormMean, dnormNormMean := vLNBwdSums(x, d, weight, m, s)
		vLNBwdApply(dinp[t*C:t*C+C], dweight, dbias, x, d, weight, m, s, dnormMean*invC, dnormNormMean*invC)
	}
}

// LayerNormForwardNaive is the reference of LayerNormForward, with float64
// statistics.
func LayerNormForwardNaive(out, mean, rstd, inp, weight, bias []float32, T, C int) {
	for t := 0; t < T; t++ {
		var m float64
		for i := 0; i < C; i++ {
			m += float64(inp[t*C+i])
		}
		m /= float64(C)
		var v float64
		for i := 0; i < C; i++ {
			d := float64(inp[t*C+i]) - m
			v += d * d
		}
		v /= float64(C)
		s := 1 / math.Sqrt(v+layerNormEps)
		for i := 0; i < C; i++ {
			n := (float64(inp[t*C+i]) - m) * s
			out[t*C+i] = float32(n*float64(weight[i]) + float64(bias[i]))
		}
		mean[t] = float32(m)
		rstd[t] = float32(s)
	}
}

// LayerNormBackwardNaive is the reference of LayerNormBackward, with float64
// reductions.
func LayerNormBackwardNaive(dinp, dweight, dbias, dout, inp, weight, mean, rstd []float32, T, C int) {
	for t := 0; t < T; t++ {
		m, s := float64(mean[t]), float64(rstd[t])
		var dnormMean, dnormNormMean float64
		for i := 0; i < C; i++ {
			norm := (float64(inp[t*C+i]) - m) * s
			dnorm := float64(weight[i]) * float64(dout[t*C+i])
			dnormMean += dnorm
			dnormNormMean += dnorm * norm
		}
		dnormMean /= float64(C)
		dnormNormMean /= float64(C)
		for i := 0; i < C; i++ {
			d := float64(dout[t*C+i])
			norm := (float64(inp[t*C+i]) - m) * s
			dnorm := float64(weight[i]) * d
			dbias[i] += float32(d)
			dweight[i] += float32(norm * d)
			dinp[t*C+i] += float32((dnorm - dnormMean - norm*dnormNormMean) * s)
		}
	}
}
