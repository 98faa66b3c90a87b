package nn

import (
	"fmt"
	"math"

	"memprobe/trainer/gemm"
)

func checkHeads(C, NH int) int {
	if NH <= 0 || C%NH != 0 {
		panic(fmt.Sprintf("nn: %d channels do not split into %d heads", C, NH))
	}
	return C / NH
}

// AttentionForward is causal multi-head self-attention with the softmax
// scale 1/sqrt(hs). For each head h it computes preatt = scale·Q_h·K_hᵀ into
// att with one g.Sgemm, applies the causal softmax row by row in place (the
// entries above the diagonal are set to 0), and writes out_h = att_h·V_h
// with a second g.Sgemm. It overwrites out and att.
//
//	out (T, C)
//	att (NH, T, T)
//	inp (T, 3C): q | k | v, head h at columns h*hs of each third
func AttentionForward(g gemm.Backend, out, att, inp []float32, T, C, NH int) {
	hs := checkHeads(C, NH)
	C3 := 3 * C
	out = out[:T*C]
	att = att[:NH*T*T]
	inp = inp[:T*C3]
	scale := float32(1 / math.Sqrt(float64(hs)))
	for h := 0; h < NH; h++ {
		a := att[h*T*T : (h+1)*T*T]
		g.Sgemm(false, true, T, T, hs, scale, inp[h*hs:], C3, inp[C+h*hs:], C3, 0, a, T)
		for t := 0; t < T; t++ {
			causalSoftmax(a[t*T:t*T+T], t)
		}
		g.Sgemm(false, false, T, hs, T, 1, a, T, inp[2*C+h*hs:], C3, 0, out[h*hs:], C)
	}
}

// causalSoftmax replaces row[:t+1] by its softmax and zeroes row[t+1:].
func causalSoftmax(row []float32, t int) {
	vis := row[:t+1]
	maxv := vis[0]
	for _, v := range vis[1:] {
		if v > maxv {
			maxv = v
		}
	}
	var sum float32
	for i, v := range vis {
		e := float32(math.Exp(float64(v - maxv)))
		vis[i] = e
		sum += e
	}
	inv := 1 / sum
	for i := range vis {
		vis[i] *= inv
	}
	clear(row[t+1:])
}

// AttentionBackward accumulates into dinp (T, 3C) the gradient of
// AttentionForward given dout (T, C) and the forward pass's inp and att.
// scratch is caller-owned workspace of at least T*T floats; it holds one
// head's datt, then its dpreatt in place, and its contents are undefined
// afterwards.
func AttentionBackward(g gemm.Backend, dinp, scratch, dout, inp, att []float32, T, C, NH int) {
	hs := checkHeads(C, NH)
	C3 := 3 * C
	dinp = dinp[:T*C3]
	dout = dout[:T*C]
	inp = inp[:T*C3]
	att = att[:NH*T*T]
	d := scratch[:T*T]
	scale := float32(1 / math.Sqrt(float64(hs)))
	for h := 0; h < NH; h++ {
		a := att[h*T*T : (h+1)*T*T]
		dq, dk, dv := dinp[h*hs:], dinp[C+h*hs:], dinp[2*C+h*hs:]
		q, k, v := inp[h*hs:], inp[C+h*hs:], inp[2*C+h*hs:]
		do := dout[h*hs:]
		// datt = dout_h · V_hᵀ, and dV_h += att_hᵀ · dout_h.
		g.Sgemm(false, true, T, T, hs, 1, do, C, v, C3, 0, d, T)
		g.Sgemm(true, false, T, hs, T, 1, a, T, do, C, 1, dv, C3)
		// Softmax backward in place, row by row, with the scale folded in.
		for t := 0; t < T; t++ {
			ar := a[t*T : t*T+t+1]
			dr := d[t*T : t*T+T]
			vis := dr[:len(ar)]
			var s float32
			for j, p := range ar {
				s += p * vis[j]
			}
			for j, p := range ar {
				vis[j] = scale * p * (vis[j] - s)
			}
			clear(dr[len(ar):])
		}
		// dQ_h += dpreatt · K_h, dK_h += dpreattᵀ · Q_h.
		g.Sgemm(false, false, T, hs, T, 1, d, T, k, C3, 1, dq, C3)
		g.Sgemm(true, false, T, hs, T, 1, d, T, q, C3, 1, dk, C3)
	}
}

// AttentionForwardNaive is the reference of AttentionForward: llm.c's loop
// over positions and heads, in float64. It ignores g.
func AttentionForwardNaive(g gemm.Backend, out, att, inp []float32, T, C, NH int) {
	hs := checkHeads(C, NH)
	C3 := 3 * C
	scale := 1 / math.Sqrt(float64(hs))
	pre := make([]float64, T)
	for t := 0; t < T; t++ {
		for h := 0; h < NH; h++ {
			q := inp[t*C3+h*hs:]
			row := att[h*T*T+t*T : h*T*T+t*T+T]
			maxv := math.Inf(-1)
			for t2 := 0; t2 <= t; t2++ {
				k := inp[t2*C3+C+h*hs:]
				var v float64
				for i := 0; i < hs; i++ {
					v += float64(q[i]) * float64(k[i])
				}
				v *= scale
				pre[t2] = v
				maxv = math.Max(maxv, v)
			}
			var sum float64
			for t2 := 0; t2 <= t; t2++ {
				pre[t2] = math.Exp(pre[t2] - maxv)
				sum += pre[t2]
			}
			for t2 := 0; t2 < T; t2++ {
				if t2 <= t {
					pre[t2] /= sum
					row[t2] = float32(pre[t2])
				} else {
					row[t2] = 0
				}
			}
			o := out[t*C+h*hs:]
			for i := 0; i < hs; i++ {
				var v float64
				for t2 := 0; t2 <= t; t2++ {
					v += pre[t2] * float64(inp[t2*C3+2*C+h*hs+i])
				}
				o[i] = float32(v)
			}
		}
	}
}

// AttentionBackwardNaive is the reference of AttentionBackward: llm.c's
// loops, including its O(T²) softmax Jacobian per row, in float64. It
// ignores g and scratch.
func AttentionBackwardNaive(g gemm.Backend, dinp, scratch, dout, inp, att []float32, T, C, NH int) {
	hs := checkHeads(C, NH)
	C3 := 3 * C
	scale := 1 / math.Sqrt(float64(hs))
	datt := make([]float64, T)
	dpre := make([]float64, T)
	for t := 0; t < T; t++ {
		for h := 0; h < NH; h++ {
			row := att[h*T*T+t*T : h*T*T+t*T+T]
			do := dout[t*C+h*hs:]
			// out[t] = sum_t2 att[t2] v[t2]
			for t2 := 0; t2 <= t; t2++ {
				v := inp[t2*C3+2*C+h*hs:]
				dv := dinp[t2*C3+2*C+h*hs:]
				var s float64
				for i := 0; i < hs; i++ {
					s += float64(v[i]) * float64(do[i])
					dv[i] += float32(float64(row[t2]) * float64(do[i]))
				}
				datt[t2] = s
			}
			// softmax Jacobian
			for t3 := 0; t3 <= t; t3++ {
				dpre[t3] = 0
			}
			for t2 := 0; t2 <= t; t2++ {
				for t3 := 0; t3 <= t; t3++ {
					ind := 0.0
					if t2 == t3 {
						ind = 1
					}
					local := float64(row[t2]) * (ind - float64(row[t3]))
					dpre[t3] += local * datt[t2]
				}
			}
			// preatt[t2] = scale * q[t]·k[t2]
			q := inp[t*C3+h*hs:]
			dq := dinp[t*C3+h*hs:]
			for t2 := 0; t2 <= t; t2++ {
				k := inp[t2*C3+C+h*hs:]
				dk := dinp[t2*C3+C+h*hs:]
				for i := 0; i < hs; i++ {
					dq[i] += float32(float64(k[i]) * dpre[t2] * scale)
					dk[i] += float32(float64(q[i]) * dpre[t2] * scale)
				}
			}
		}
	}
}
