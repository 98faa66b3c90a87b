package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"memprobe/trainer/gemm"
)

// kernels is one implementation of every layer: the fast kernels or their
// naive references. Tests run the same checks over both.
type kernels struct {
	name  string
	encF  func(out []float32, tokens []uint16, wte, wpe []float32, T, C int)
	encB  func(dwte, dwpe, dout []float32, tokens []uint16, T, C int)
	lnF   func(out, mean, rstd, inp, weight, bias []float32, T, C int)
	lnB   func(dinp, dweight, dbias, dout, inp, weight, mean, rstd []float32, T, C int)
	mmF   func(g gemm.Backend, out, inp, weight, bias []float32, T, C, OC int)
	mmB   func(g gemm.Backend, dinp, dweight, dbias, dout, inp, weight []float32, T, C, OC int)
	attF  func(g gemm.Backend, out, att, inp []float32, T, C, NH int)
	attB  func(g gemm.Backend, dinp, scratch, dout, inp, att []float32, T, C, NH int)
	geluF func(out, inp []float32, n int)
	geluB func(dinp, inp, dout []float32, n int)
	resF  func(out, a, b []float32, n int)
	resB  func(da, db, dout []float32, n int)
	ceF   func(losses, probs, logits []float32, targets []uint16, T, V int)
	ceB   func(dlogits, probs []float32, targets []uint16, dloss float32, T, V int)
}

var fastKernels = kernels{
	name: "fast",
	encF: EncoderForward, encB: EncoderBackward,
	lnF: LayerNormForward, lnB: LayerNormBackward,
	mmF: MatmulForward, mmB: MatmulBackward,
	attF: AttentionForward, attB: AttentionBackward,
	geluF: GeluForward, geluB: GeluBackward,
	resF: ResidualForward, resB: ResidualBackward,
	ceF: SoftmaxCrossEntropyForward, ceB: SoftmaxCrossEntropyBackward,
}

var naiveKernels = kernels{
	name: "naive",
	encF: EncoderForwardNaive, encB: EncoderBackwardNaive,
	lnF: LayerNormForwardNaive, lnB: LayerNormBackwardNaive,
	mmF: MatmulForwardNaive, mmB: MatmulBackwardNaive,
	attF: AttentionForwardNaive, attB: AttentionBackwardNaive,
	geluF: GeluForwardNaive, geluB: GeluBackwardNaive,
	resF: ResidualForwardNaive, resB: ResidualBackwardNaive,
	ceF: SoftmaxCrossEntropyForwardNaive, ceB: SoftmaxCrossEntropyBackwardNaive,
}

// dims is one test size.
type dims struct {
	name            string
	T, C, NH, V, OC int
}

// testDims are small odd dimensions (every loop has a remainder, heads are
// 4 wide) and one size closer to a real layer.
var testDims = []dims{
	{name: "small", T: 7, C: 12, NH: 3, V: 11, OC: 10},
	{name: "llm", T: 64, C: 64, NH: 4, V: 97, OC: 192},
	// blocks: T is not a multiple of attBlock (blocks of 32, 32 and 13
	// rows) and no row length is a multiple of the 8-float vectors.
	{name: "blocks", T: 77, C: 36, NH: 3, V: 29, OC: 44},
}

// simdMode is one setting of useSIMD: the assembly primitives (where this
// CPU has them) or the portable loops.
type simdMode struct {
	name string
	on   bool
}

// simdModes lists the modes this machine can run, the default first.
func simdModes() []simdMode {
	if simdAvailable {
		return []simdMode{{"simd", true}, {"portable", false}}
	}
	return []simdMode{{"portable", false}}
}

// withSIMD runs f with useSIMD set to on, restoring it afterwards. Tests
// that call it must not run in parallel.
func withSIMD(on bool, f func()) {
	old := useSIMD
	useSIMD = on
	defer func() { useSIMD = old }()
	f()
}

// backends returns every gemm backend compiled into the test binary, naive
// first.
func backends(t testing.TB) []gemm.Backend {
	var bs []gemm.Backend
	for _, n := range gemm.Names() {
		b, err := gemm.Get(n)
		if err != nil {
			t.Fatalf("getting gemm backend %q: %v", n, err)
		}
		if n == "naive" {
			bs = append([]gemm.Backend{b}, bs...)
		} else {
			bs = append(bs, b)
		}
	}
	return bs
}

func newRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x6d656d70726f6265)) }

// randSlice returns n uniform values in [-scale, scale), none of them zero.
func randSlice(r *rand.Rand, n int, scale float32) []float32 {
	s := make([]float32, n)
	for i := range s {
		for s[i] == 0 {
			s[i] = scale * (2*r.Float32() - 1)
		}
	}
	return s
}

func randTokens(r *rand.Rand, n, V int) []uint16 {
	s := make([]uint16, n)
	for i := range s {
		s[i] = uint16(r.IntN(V))
	}
	return s
}

func clone(s []float32) []float32 { return append([]float32(nil), s...) }

// Tolerances of fast against naive, per element:
//
//	|fast - naive| <= defaultAtol + defaultRtol*|naive|
//
// The naive kernels accumulate in float64, so this bounds the float32
// rounding of the fast kernels (sums of up to a few hundred terms).
const (
	defaultRtol = 1e-4
	defaultAtol = 1e-5
)

// assertClose fails t unless got and want agree element-wise within
// atol + rtol*|want|, reporting the largest difference and where it is.
func assertClose(t testing.TB, what string, got, want []float32, rtol, atol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: len %d, want %d", what, len(got), len(want))
	}
	worstAbs, worstAt := 0.0, -1
	worstRatio, ratioAt := 0.0, -1
	for i := range got {
		g, w := float64(got[i]), float64(want[i])
		d := math.Abs(g - w)
		if d != d || math.IsInf(g, 0) != math.IsInf(w, 0) {
			t.Errorf("%s[%d] = %g, want %g", what, i, g, w)
			return
		}
		if d > worstAbs {
			worstAbs, worstAt = d, i
		}
		if r := d / (atol + rtol*math.Abs(w)); r > worstRatio {
			worstRatio, ratioAt = r, i
		}
	}
	if worstRatio > 1 {
		t.Errorf("%s: element %d = %g, want %g (|diff| %.3g > %.3g + %.3g*|want|); largest |diff| %.3g at %d",
			what, ratioAt, got[ratioAt], want[ratioAt], math.Abs(float64(got[ratioAt])-float64(want[ratioAt])), atol, rtol, worstAbs, worstAt)
	}
}

// assertEqual fails t unless a and b hold the same bits.
func assertEqual(t testing.TB, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Errorf("%s[%d] = %g, want %g (bit-identical)", what, i, got[i], want[i])
			return
		}
	}
}

func (d dims) String() string {
	return fmt.Sprintf("%s(T=%d,C=%d,NH=%d,V=%d,OC=%d)", d.name, d.T, d.C, d.NH, d.V, d.OC)
}
