package nn

import (
	"math"
	"testing"
)

// expTol bounds the relative error of the fast exp against math.Exp on
// [-87.3, 88], both paths: about 2.5 float32 ulps (TestExp measured 8.4e-8
// for the vector path and 8.1e-8 for the portable one, sweeping every 7th
// float32).
const expTol = 1.5e-7

// TestExp sweeps every 1009th float32 in [-87.3, 88] (every 99991st with
// -short) through the portable expf32 and the vector exp (vExpSub with max
// 0) and compares them with math.Exp at expTol relative; below -87.5, and
// for -Inf and NaN, both must give 0.
func TestExp(t *testing.T) {
	step := uint32(1009)
	if testing.Short() {
		step = 99991
	}
	var xs []float32
	for _, sign := range []uint32{0, 1 << 31} {
		for b := uint32(0); ; b += step {
			x := math.Float32frombits(b | sign)
			if x > 88 || x < -87.3 {
				break
			}
			xs = append(xs, x)
		}
	}
	for _, m := range simdModes() {
		worst, at := 0.0, float32(0)
		withSIMD(m.on, func() {
			const chunk = 4099 // not a multiple of 8: the tail path too
			buf := make([]float32, chunk)
			for lo := 0; lo < len(xs); lo += chunk {
				in := xs[lo:min(lo+chunk, len(xs))]
				out := buf[:len(in)]
				copy(out, in)
				vExpSub(out, 0)
				for i, x := range in {
					want := math.Exp(float64(x))
					if r := math.Abs(float64(out[i])-want) / want; r > worst || r != r {
						worst, at = r, x
					}
				}
			}
			t.Logf("%s: largest relative error %.3g at x = %g", m.name, worst, at)
			if !(worst <= expTol) {
				t.Errorf("%s: exp relative error %.3g at x = %g, want <= %g", m.name, worst, at, expTol)
			}
			under := []float32{-87.6, -100, -1e30, float32(math.Inf(-1)), float32(math.NaN())}
			got := clone(under)
			vExpSub(got, 0)
			for i, v := range got {
				if v != 0 {
					t.Errorf("%s: exp(%g) = %g, want 0", m.name, under[i], v)
				}
			}
		})
	}
}

// TestSIMDMatchesPortable runs every primitive on both paths at lengths
// around the vector width and at the seed model's row lengths, and compares:
// bit for bit where the arithmetic is the same (adds, scales, AdamW, the
// softmax backward), within 1e-6 relative + 1e-6 absolute where the
// assembly fuses multiply-adds or sums 8 lanes in parallel.
func TestSIMDMatchesPortable(t *testing.T) {
	if !simdAvailable {
		t.Skip("no AVX2+FMA on this machine: only the portable path runs")
	}
	const rtol, atol = 1e-6, 1e-6
	lengths := []int{1, 7, 8, 9, 15, 16, 17, 31, 33, 128, 256, 788, 1024}
	for _, n := range lengths {
		r := newRNG(uint64(n))
		x, y, w, b := randSlice(r, n, 3), randSlice(r, n, 1), randSlice(r, n, 1), randSlice(r, n, 1)
		d0, dw0, db0 := randSlice(r, n, 1), randSlice(r, n, 1), randSlice(r, n, 1)
		type result struct {
			vecs    [][]float32
			scalars []float32
		}
		run := func(on bool) (res result) {
			withSIMD(on, func() {
				out := make([]float32, n)
				vGeluForward(out, x)
				g1, g2 := clone(d0), clone(d0)
				vGeluBackward(g1, x, y, true)
				vGeluBackward(g2, x, y, false)
				e := clone(x)
				mx := vMax(e)
				sum := vExpSub(e, mx)
				sc, si, ax, ad, a3 := clone(x), make([]float32, n), clone(d0), clone(d0), make([]float32, n)
				vScale(sc, 0.37)
				vScaleInto(si, x, 0.37)
				vAxpy(ax, x, 0.37)
				vAdd(ad, x)
				vAdd3(a3, x, y)
				ln := make([]float32, n)
				vLNApply(ln, x, w, b, 0.1, 1.7)
				s1, s2 := vLNBwdSums(x, y, w, 0.1, 1.7)
				di, dw, db := clone(d0), clone(dw0), clone(db0)
				vLNBwdApply(di, dw, db, x, y, w, 0.1, 1.7, 0.3, -0.2)
				sb := clone(y)
				vSoftmaxBwd(sb, w, 0.25, 0.5)
				res.vecs = [][]float32{out, g1, g2, e, sc, si, ax, ad, a3, ln, di, dw, db, sb}
				res.scalars = []float32{mx, sum, vSum(x), vDot(x, y), vSumSqDev(x, 0.2), s1, s2}
			})
			return res
		}
		v, p := run(true), run(false)
		names := []string{"gelu", "gelu bwd acc", "gelu bwd set", "exp", "scale", "scaleInto", "axpy", "add", "add3", "ln apply", "ln di", "ln dw", "ln db", "softmax bwd"}
		exact := map[string]bool{"scale": true, "scaleInto": true, "add": true, "add3": true, "ln db": true, "softmax bwd": true}
		for i, name := range names {
			if exact[name] {
				assertEqual(t, name, v.vecs[i], p.vecs[i])
			} else {
				assertClose(t, name, v.vecs[i], p.vecs[i], rtol, atol)
			}
		}
		// Reductions of n values: the lanes change the order of the sum.
		assertClose(t, "max, sum, dot, ...", v.scalars, p.scalars, 1e-5, 1e-5)
		if v.scalars[0] != p.scalars[0] {
			t.Errorf("n=%d: max %g vs %g, want equal", n, v.scalars[0], p.scalars[0])
		}
	}
}
