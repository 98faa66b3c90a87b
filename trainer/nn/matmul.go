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
	dout = dout[:T*OC]
	if dinp != nil {
		g.Sgemm(false, false, T, C, OC, 1, dout, OC, weight[:OC*C], C, 1, dinp[:T*C], C)
	}
	if dweight != nil {
		g.Sgemm(true, false, OC, C, T, 1, dout, OC, inp[:T*C], C, 1, dweight[:OC*C], C)
	}
	if dbias != nil {
		dbias = dbias[:OC]
		for t := 0; t < T; t++ {
			d := dout[t*OC : t*OC+OC]
			d = d[:len(dbias)]
			for o, v := range d {
				dbias[o] += v
			}
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
