package nn

import "memprobe/trainer/gemm"

// MatmulForward computes out = inp · weightᵀ + bias with one g.Sgemm.
// It overwrites out. bias may be nil.
//
//	out    (T, OC)
//	inp    (T, C)
//	weight (OC, C)
//	bias   (OC) or nil
func MatmulForward(g gemm.Backend, out, inp, weight, bias []float32, T, C, OC int) {
	out = out[:T*OC]
	inp = inp[:T*C]
	weight = weight[:OC*C]
	var beta float32
	if bias != nil {
		bias = bias[:OC]
		for t := 0; t < T; t++ {
			copy(out[t*OC:t*OC+OC], bias)
		}
		beta = 1
	}
	g.Sgemm(false, true, T, OC, C, 1, inp, C, weight, C, beta, out, OC)
}

// MatmulBackward accumulates the gradients of MatmulForward:
// dinp += dout · weight, dweight += doutᵀ · inp, dbias += column sums of
// dout. dinp, dweight and dbias may each be nil to skip that gradient.
//
//	dinp    (T, C)
//	dweight (OC, C)
//	dbias   (OC)
//	dout    (T, OC)
func MatmulBackward(g gemm.Backend, dinp, dweight, dbias, dout, inp, weight []float32, T, C, OC int) {
	if dinp != nil {
		MatmulBackwardInput(g, dinp, dout, weight, T, C, OC, 1)
	}
	if dweight != nil || dbias != nil {
		MatmulBackwardWeight(g, dweight, dbias, dout, inp, T, C, OC, 1)
	}
}

// MatmulBackwardInput is the input half of MatmulBackward, with one
// g.Sgemm: dinp = beta·dinp + dout · weight. beta 0 overwrites dinp (which
// may then hold anything, NaN included), beta 1 accumulates.
//
//	dinp   (T, C)
//	dout   (T, OC)
//	weight (OC, C)
func MatmulBackwardInput(g gemm.Backend, dinp, dout, weight []float32, T, C, OC int, beta float32) {
	g.Sgemm(false, false, T, C, OC, 1, dout[:T*OC], OC, weight[:OC*C], C, beta, dinp[:T*C], C)
}

// MatmulBackwardWeight is the parameter half of MatmulBackward:
// dweight = beta·dweight + doutᵀ · inp with one g.Sgemm, and
// dbias = beta·dbias + the column sums of dout (summed in row order).
// dweight or dbias may be nil to skip it. The trainer adds a sequence's
// weight gradient into the shared one with beta 1; beta 0 overwrites.
//
//	dweight (OC, C)
//	dbias   (OC)
//	dout    (T, OC)
//	inp     (T, C)
func MatmulBackwardWeight(g gemm.Backend, dweight, dbias, dout, inp []float32, T, C, OC int, beta float32) {
	dout = dout[:T*OC]
	if dweight != nil {
		g.Sgemm(true, false, OC, C, T, 1, dout, OC, inp[:T*C], C, beta, dweight[:OC*C], C)
	}
	if dbias != nil {
		dbias = dbias[:OC]
		switch beta {
		case 0:
			clear(dbias)
		case 1:
		default:
			vScale(dbias, beta)
		}
		for t := 0; t < T; t++ {
			vAdd(dbias, dout[t*OC:t*OC+OC])
		}
	}
}

// MatmulForwardNaive is the reference of MatmulForward: a triple loop with a
// float64 accumulator. It ignores g.
func MatmulForwardNaive(g gemm.Backend, out, inp, weight, bias []float32, T, C, OC int) {
	for t := 0; t < T; t++ {
		for o := 0; o < OC; o++ {
			var sum float64
			if bias != nil {
				sum = float64(bias[o])
			}
			for i := 0; i < C; i++ {
				sum += float64(inp[t*C+i]) * float64(weight[o*C+i])
			}
			out[t*OC+o] = float32(sum)
		}
	}
}

// MatmulBackwardNaive is the reference of MatmulBackward, with float64
// accumulators. It ignores g.
func MatmulBackwardNaive(g gemm.Backend, dinp, dweight, dbias, dout, inp, weight []float32, T, C, OC int) {
	if dinp != nil {
		for t := 0; t < T; t++ {
			for i := 0; i < C; i++ {
				var sum float64
				for o := 0; o < OC; o++ {
					sum += float64(dout[t*OC+o]) * float64(weight[o*C+i])
				}
				dinp[t*C+i] += float32(sum)
			}
		}
	}
	if dweight != nil {
		for o := 0; o < OC; o++ {
			for i := 0; i < C; i++ {
				var sum float64
				for t := 0; t < T; t++ {
					sum += float64(dout[t*OC+o]) * float64(inp[t*C+i])
				}
				dweight[o*C+i] += float32(sum)
			}
		}
	}
	if dbias != nil {
		for o := 0; o < OC; o++ {
			var sum float64
			for t := 0; t < T; t++ {
				sum += float64(dout[t*OC+o])
			}
			dbias[o] += float32(sum)
		}
	}
}

// MatmulBackwardInputNaive is the reference of MatmulBackwardInput, with a
// float64 accumulator per element. It ignores g.
func MatmulBackwardInputNaive(g gemm.Backend, dinp, dout, weight []float32, T, C, OC int, beta float32) {
	for t := 0; t < T; t++ {
		for i := 0; i < C; i++ {
			var sum float64
			for o := 0; o < OC; o++ {
				sum += float64(dout[t*OC+o]) * float64(weight[o*C+i])
			}
			if beta != 0 {
				sum += float64(beta) * float64(dinp[t*C+i])
			}
			dinp[t*C+i] = float32(sum)
		}
	}
}

// MatmulBackwardWeightNaive is the reference of MatmulBackwardWeight, with
// float64 accumulators. It ignores g.
func MatmulBackwardWeightNaive(g gemm.Backend, dweight, dbias, dout, inp []float32, T, C, OC int, beta float32) {
	if dweight != nil {
		for o := 0; o < OC; o++ {
			for i := 0; i < C; i++ {
				var sum float64
				for t := 0; t < T; t++ {
					sum += float64(dout[t*OC+o]) * float64(inp[t*C+i])
				}
				if beta != 0 {
					sum += float64(beta) * float64(dweight[o*C+i])
				}
				dweight[o*C+i] = float32(sum)
			}
		}
	}
	if dbias != nil {
		for o := 0; o < OC; o++ {
			var sum float64
			for t := 0; t < T; t++ {
				sum += float64(dout[t*OC+o])
			}
			if beta != 0 {
				sum += float64(beta) * float64(dbias[o])
			}
			dbias[o] = float32(sum)
		}
	}
}
