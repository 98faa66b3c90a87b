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

// attBlock is the row (and column) block of the causal attention products:
// only the blocks on and below the diagonal of the T×T matrices are
// computed, (T/attBlock+1)/(2*T/attBlock) of the square (62.5% at T=128).
// Chosen with BenchmarkAttentionForward/Backward at the seed sizes.
var attBlock = 32

// AttentionForward is causal multi-head self-attention with the softmax
// scale 1/sqrt(hs). For each head h and each block of attBlock query rows
// r0..r1 it computes preatt = scale·Q_h[r0:r1]·K_h[0:r1]ᵀ into att with one
// g.Sgemm (the keys after r1 are masked anyway), applies the causal softmax
// row by row in place (the entries above the diagonal are set to 0), and
// writes out_h[r0:r1] = att_h[r0:r1, 0:r1]·V_h[0:r1] with a second g.Sgemm.
// It overwrites out and att.
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
		q, k, v := inp[h*hs:], inp[C+h*hs:], inp[2*C+h*hs:]
		for r0 := 0; r0 < T; r0 += attBlock {
			r1 := min(r0+attBlock, T)
			g.Sgemm(false, true, r1-r0, r1, hs, scale, q[r0*C3:], C3, k, C3, 0, a[r0*T:], T)
			for t := r0; t < r1; t++ {
				causalSoftmax(a[t*T:t*T+T], t)
			}
			g.Sgemm(false, false, r1-r0, hs, r1, 1, a[r0*T:], T, v, C3, 0, out[r0*C+h*hs:], C)
		}
	}
}

// causalSoftmax replaces row[:t+1] by its softmax and zeroes row[t+1:].
// The masked entries up to the next multiple of 8 are set to -Inf and go
// through the softmax with the visible ones (exp gives exactly 0 for them),
// so that short rows need no separate tail.
func causalSoftmax(row []float32, t int) {
	end := min((t+8)&^7, len(row))
	vis := row[:end]
	for i := t + 1; i < end; i++ {
		vis[i] = float32(math.Inf(-1))
	}
	sum := vExpSub(vis, vMax(vis))
	vScale(vis, 1/sum)
	clear(row[end:])
}

// AttentionBackward accumulates into dinp (T, 3C) the gradient of
// AttentionForward given dout (T, C) and the forward pass's inp and att.
// scratch is caller-owned workspace of at least T*T floats; it holds one
// head's datt, then its dpreatt in place, and its contents are undefined
// afterwards. Like the forward pass it computes only the blocks of attBlock
// rows and columns on and below the diagonal.
func AttentionBackward(g gemm.Backend, dinp, scratch, dout, inp, att []float32, T, C, NH int) {
	attentionBackward(g, dinp, scratch, dout, inp, att, T, C, NH, 1)
}

// AttentionBackwardInto is AttentionBackward overwriting dinp (T, 3C)
// instead of adding to it, so the caller need not clear it first.
func AttentionBackwardInto(g gemm.Backend, dinp, scratch, dout, inp, att []float32, T, C, NH int) {
	attentionBackward(g, dinp, scratch, dout, inp, att, T, C, NH, 0)
}

// attentionBackward writes dinp = beta*dinp + the gradient. Every element
// of dinp is written by exactly one product per head: dQ by row blocks, dK
// and dV by column blocks.
func attentionBackward(g gemm.Backend, dinp, scratch, dout, inp, att []float32, T, C, NH int, beta float32) {
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
		for r0 := 0; r0 < T; r0 += attBlock {
			r1 := min(r0+attBlock, T)
			// datt[r0:r1, 0:r1] = dout_h[r0:r1] · V_h[0:r1]ᵀ
			g.Sgemm(false, true, r1-r0, r1, hs, 1, do[r0*C:], C, v, C3, 0, d[r0*T:], T)
			// Softmax backward in place, row by row, with the scale folded
			// in; the entries right of the diagonal inside the block are
			// zeroed because the products below read the whole block.
			// Up to the next multiple of 8 (within the block), att is 0
			// right of the diagonal and d finite, so those entries come out
			// 0 with the others.
			for t := r0; t < r1; t++ {
				end := min((t+8)&^7, r1)
				ar := a[t*T : t*T+end]
				dr := d[t*T : t*T+r1]
				vis := dr[:end]
				vSoftmaxBwd(vis, ar, vDot(ar, vis), scale)
				clear(dr[end:])
			}
			// dQ_h[r0:r1] = dpreatt[r0:r1, 0:r1] · K_h[0:r1]
			g.Sgemm(false, false, r1-r0, hs, r1, 1, d[r0*T:], T, k, C3, beta, dq[r0*C3:], C3)
		}
		for c0 := 0; c0 < T; c0 += attBlock {
			c1 := min(c0+attBlock, T)
			// dV_h[c0:c1] = att_h[c0:T, c0:c1]ᵀ · dout_h[c0:T]
			g.Sgemm(true, false, c1-c0, hs, T-c0, 1, a[c0*T+c0:], T, do[c0*C:], C, beta, dv[c0*C3:], C3)
			// dK_h[c0:c1] = dpreatt[c0:T, c0:c1]ᵀ · Q_h[c0:T]
			g.Sgemm(true, false, c1-c0, hs, T-c0, 1, d[c0*T+c0:], T, q[c0*C3:], C3, beta, dk[c0*C3:], C3)
		}
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

// AttentionBackwardIntoNaive is the reference of AttentionBackwardInto: it
// zeroes dinp (T, 3C) and runs AttentionBackwardNaive.
func AttentionBackwardIntoNaive(g gemm.Backend, dinp, scratch, dout, inp, att []float32, T, C, NH int) {
	clear(dinp[:T*3*C])
	AttentionBackwardNaive(g, dinp, scratch, dout, inp, att, T, C, NH)
}
