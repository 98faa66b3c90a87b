package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"memprobe/trainer/gemm/avx2"
	"memprobe/trainer/gemm/avx512"
)

// shape is one product: op(A) is m×k, op(B) is k×n, C is m×n.
type shape struct{ m, n, k int }

func (s shape) String() string { return fmt.Sprintf("%dx%dx%d", s.m, s.n, s.k) }

// testShapes sit on both sides of the blocking thresholds of the backends,
// then the model's own products.
var testShapes = []shape{
	{1, 1, 1}, {3, 5, 7}, {2, 9, 1},
	// gonum: C is cut into 64×64 blocks, computed in parallel from 4 blocks
	// (128×128) on; k is cut into 64-long pieces.
	{63, 64, 65}, {64, 64, 64}, {64, 192, 64}, {65, 129, 63}, {128, 128, 128}, {129, 127, 130},
	// OpenBLAS: small-matrix and direct kernels up to about 100³ (the
	// direct one for NN, alpha 1, beta 0), the packed kernels above, with
	// 16-row and 4-column micro-tiles and k panels of a few hundred.
	{15, 3, 5}, {16, 4, 8}, {17, 5, 33}, {100, 100, 100}, {101, 99, 102}, {33, 47, 257}, {31, 300, 641},
	// avx2 and avx512: products of at least SmallProduct (2^20)
	// multiply-adds run in 4×8 (avx2) or 8×16..8×48 (avx512) tiles over k
	// blocks of 256 (avx2) or 128 (avx512); the edges go to the fallback.
	{9, 784, 160}, {17, 497, 136}, {135, 113, 129}, {200, 47, 120}, {64, 80, 256}, {263, 95, 72},
	// avx2's dot form: NT products of fewer than 4 rows, whole (any size)
	// or as the rows below the tiles (avx512's 8-row tiles leave 1 to 7:
	// 4 of them to avx2's tiles, the rest to the dot form); n around its
	// 4-row blocks of B, k around its 8-float steps.
	{1, 788, 256}, {2, 1027, 129}, {3, 4101, 100}, {6, 700, 256}, {11, 1000, 256}, {1, 6, 3},
	// The model.
	{128, 768, 256}, {128, 1024, 256}, {128, 256, 1024}, {128, 788, 256}, {128, 128, 32},
}

// shortMaxMNK drops the model's shapes under -short (for -race, where the
// float64 reference and the triple loop are slow); the threshold shapes stay.
const shortMaxMNK = 1 << 22

var alphaBetas = []struct{ alpha, beta float32 }{{1, 0}, {0.5, 1}, {1, 1.5}}

var transposes = []struct{ a, b bool }{{false, false}, {true, false}, {false, true}, {true, true}}

// matrix is a rows×cols view into buf, starting at row 1, column 2 of a
// larger stored matrix whose row stride ld is longer than the view's rows:
// a sub-matrix view with padding on both sides of every row, and rows of
// padding above and below. All of buf is random, the padding included.
type matrix struct {
	rows, cols, ld, off int
	buf                 []float32
}

func newMatrix(rng *rand.Rand, rows, cols, pad int) matrix {
	ld := cols + 2 + pad
	x := matrix{rows: rows, cols: cols, ld: ld, off: ld + 2, buf: make([]float32, (rows+2)*ld)}
	for i := range x.buf {
		x.buf[i] = 2*rng.Float32() - 1
	}
	return x
}

// view is the slice a backend gets: from the first element of the view to
// the last, no longer.
func (x matrix) view(buf []float32) []float32 {
	return buf[x.off : x.off+(x.rows-1)*x.ld+x.cols]
}

func (x matrix) at(i, j int) float32 { return x.buf[x.off+i*x.ld+j] }

// inView reports whether buf index idx lies inside the rows×cols view.
func (x matrix) inView(idx int) bool {
	r, col := (idx-x.off)/x.ld, (idx-x.off)%x.ld
	return idx >= x.off && r < x.rows && col < x.cols
}

// problem is one product's inputs and its float64 reference.
type problem struct {
	s              shape
	transA, transB bool
	a, b, c        matrix
	dot, abs       []float64 // (m, n) op(A)*op(B) and |op(A)|*|op(B)| in float64
}

// newProblem makes seeded random inputs for s; with ref it also computes the
// float64 reference.
func newProblem(s shape, transA, transB bool, seed uint64, ref bool) *problem {
	rng := rand.New(rand.NewPCG(seed, uint64(s.m*1_000_000+s.n*1000+s.k)))
	p := &problem{s: s, transA: transA, transB: transB}
	if transA {
		p.a = newMatrix(rng, s.k, s.m, 3)
	} else {
		p.a = newMatrix(rng, s.m, s.k, 3)
	}
	if transB {
		p.b = newMatrix(rng, s.n, s.k, 5)
	} else {
		p.b = newMatrix(rng, s.k, s.n, 5)
	}
	p.c = newMatrix(rng, s.m, s.n, 7)
	if !ref {
		return p
	}
	p.dot = make([]float64, s.m*s.n)
	p.abs = make([]float64, s.m*s.n)
	for i := 0; i < s.m; i++ {
		for j := 0; j < s.n; j++ {
			var dot, abs float64
			for q := 0; q < s.k; q++ {
				av, bv := float64(p.opA(i, q)), float64(p.opB(q, j))
				dot += av * bv
				abs += math.Abs(av * bv)
			}
			p.dot[i*s.n+j], p.abs[i*s.n+j] = dot, abs
		}
	}
	return p
}

func (p *problem) opA(i, q int) float32 {
	if p.transA {
		return p.a.at(q, i)
	}
	return p.a.at(i, q)
}

func (p *problem) opB(q, j int) float32 {
	if p.transB {
		return p.b.at(j, q)
	}
	return p.b.at(q, j)
}

// run calls be on copies of the inputs and returns the whole C buffer, after
// checking that A and B, padding included, are unchanged.
func (p *problem) run(t *testing.T, be Backend, alpha, beta float32, c0 []float32) []float32 {
	t.Helper()
	a, b, c := slices.Clone(p.a.buf), slices.Clone(p.b.buf), slices.Clone(c0)
	be.Sgemm(p.transA, p.transB, p.s.m, p.s.n, p.s.k, alpha, p.a.view(a), p.a.ld, p.b.view(b), p.b.ld, beta, p.c.view(c), p.c.ld)
	if !bitsEqual(a, p.a.buf) {
		t.Errorf("A changed by the call")
	}
	if !bitsEqual(b, p.b.buf) {
		t.Errorf("B changed by the call")
	}
	return c
}

// check compares the view of got with alpha*op(A)*op(B) + beta*c0 in
// float64, and the padding of got with c0 bit for bit.
//
// Tolerance: |got-want| <= 1e-4*(|alpha|*sum_k |a||b| + |beta*c0|) + 1e-6.
// A float32 sum of k products, in any order, is within k*2^-24 of the
// exact sum relative to sum_k |a||b|; 1e-4 covers k up to about 1600, and
// every blocked order is much closer than that worst case.
func (p *problem) check(t *testing.T, alpha, beta float32, c0, got []float32) {
	t.Helper()
	worst, worstIdx, bad := 0.0, -1, 0
	var worstGot, worstWant, worstBound float64
	for i := 0; i < p.s.m; i++ {
		for j := 0; j < p.s.n; j++ {
			idx := p.c.off + i*p.c.ld + j
			var cv float64 // beta == 0: C is not read, NaN included
			if beta != 0 {
				cv = float64(beta) * float64(c0[idx])
			}
			want := float64(alpha)*p.dot[i*p.s.n+j] + cv
			bound := 1e-4*(math.Abs(float64(alpha))*p.abs[i*p.s.n+j]+math.Abs(cv)) + 1e-6
			g := float64(got[idx])
			d := math.Abs(g - want)
			if !(d <= bound) { // NaN fails too
				bad++
			}
			if r := d / bound; !(r <= worst) {
				worst, worstIdx, worstGot, worstWant, worstBound = r, i*p.s.n+j, g, want, bound
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d elements outside tolerance; largest difference at C[%d][%d]: got %g, want %g, |diff| %g > bound %g",
			bad, p.s.m*p.s.n, worstIdx/p.s.n, worstIdx%p.s.n, worstGot, worstWant, math.Abs(worstGot-worstWant), worstBound)
	}
	for idx := range got {
		if !p.c.inView(idx) && math.Float32bits(got[idx]) != math.Float32bits(c0[idx]) {
			r, col := idx/p.c.ld, idx%p.c.ld
			t.Errorf("C padding changed at stored row %d column %d (ld %d): got %g, want %g", r, col, p.c.ld, got[idx], c0[idx])
			break
		}
	}
}

func bitsEqual(x, y []float32) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
			return false
		}
	}
	return true
}

func transName(transA, transB bool) string {
	n := []byte("NN")
	if transA {
		n[0] = 'T'
	}
	if transB {
		n[1] = 'T'
	}
	return string(n)
}

func backends(t testing.TB) []Backend {
	var bs []Backend
	for _, name := range Names() {
		be, err := Get(name)
		if err != nil {
			t.Fatal(err)
		}
		bs = append(bs, be)
	}
	return bs
}

func TestSgemmMatchesReference(t *testing.T) {
	bs := backends(t)
	for _, s := range testShapes {
		if testing.Short() && s.m*s.n*s.k > shortMaxMNK {
			continue
		}
		for _, tr := range transposes {
			p := newProblem(s, tr.a, tr.b, 1, true)
			for _, be := range bs {
				for _, ab := range alphaBetas {
					t.Run(fmt.Sprintf("%s/%v/%s/alpha=%g,beta=%g", be.Name(), s, transName(tr.a, tr.b), ab.alpha, ab.beta), func(t *testing.T) {
						got := p.run(t, be, ab.alpha, ab.beta, p.c.buf)
						p.check(t, ab.alpha, ab.beta, p.c.buf, got)
					})
				}
			}
		}
	}
}

// TestSgemmDeterministic runs the same call twice on fresh copies and wants
// the same bits, at shapes where gonum runs in parallel and OpenBLAS uses its
// packed kernels.
func TestSgemmDeterministic(t *testing.T) {
	for _, s := range []shape{{129, 127, 130}, {128, 788, 256}, {31, 300, 641}} {
		for _, tr := range transposes {
			p := newProblem(s, tr.a, tr.b, 2, false)
			for _, be := range backends(t) {
				t.Run(fmt.Sprintf("%s/%v/%s", be.Name(), s, transName(tr.a, tr.b)), func(t *testing.T) {
					first := p.run(t, be, 0.5, 1, p.c.buf)
					second := p.run(t, be, 0.5, 1, p.c.buf)
					if !bitsEqual(first, second) {
						t.Errorf("two identical calls gave different bits")
					}
				})
			}
		}
	}
}

// TestSgemmConcurrentEqualsSerial runs independent products from several
// goroutines at once, as the trainer's executors do, and wants the bits of
// the serial results.
func TestSgemmConcurrentEqualsSerial(t *testing.T) {
	const workers, rounds = 4, 3
	probs := make([]*problem, workers)
	for w := range probs {
		probs[w] = newProblem(shape{96 + w, 130, 70 + 40*w}, w%2 == 1, w/2 == 1, uint64(10+w), false)
	}
	for _, be := range backends(t) {
		t.Run(be.Name(), func(t *testing.T) {
			serial := make([][]float32, workers)
			for w, p := range probs {
				serial[w] = p.run(t, be, 1, 1.5, p.c.buf)
			}
			var wg sync.WaitGroup
			errs := make(chan string, workers*rounds)
			for w, p := range probs {
				wg.Go(func() {
					for r := 0; r < rounds; r++ {
						c := slices.Clone(p.c.buf)
						be.Sgemm(p.transA, p.transB, p.s.m, p.s.n, p.s.k, 1, p.a.view(p.a.buf), p.a.ld, p.b.view(p.b.buf), p.b.ld, 1.5, p.c.view(c), p.c.ld)
						if !bitsEqual(c, serial[w]) {
							errs <- fmt.Sprintf("worker %d round %d: concurrent result differs from serial", w, r)
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for e := range errs {
				t.Error(e)
			}
		})
	}
}

// TestSgemmBetaZeroIgnoresC fills C with NaN: with beta 0 the old C must not
// be read, as in BLAS.
func TestSgemmBetaZeroIgnoresC(t *testing.T) {
	for _, s := range []shape{{5, 7, 3}, {100, 100, 100}, {128, 256, 64}} {
		for _, tr := range transposes {
			p := newProblem(s, tr.a, tr.b, 3, true)
			c0 := slices.Clone(p.c.buf)
			for i := range c0 {
				if p.c.inView(i) {
					c0[i] = float32(math.NaN())
				}
			}
			for _, be := range backends(t) {
				t.Run(fmt.Sprintf("%s/%v/%s", be.Name(), s, transName(tr.a, tr.b)), func(t *testing.T) {
					got := p.run(t, be, 1, 0, c0)
					p.check(t, 1, 0, c0, got)
				})
			}
		}
	}
}

// TestSgemmEmpty covers m, n or k of 0 with nil slices and zero strides:
// nothing may be indexed, and k == 0 leaves C = beta*C.
func TestSgemmEmpty(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be.Name(), func(t *testing.T) {
			be.Sgemm(false, false, 0, 5, 3, 1, nil, 0, nil, 0, 0, nil, 0)
			be.Sgemm(true, true, 5, 0, 3, 1, nil, 0, nil, 0, 0, nil, 0)
			be.Sgemm(false, false, 0, 0, 0, 1, nil, 0, nil, 0, 0, nil, 0)
			for _, beta := range []float32{0, 1, 1.5} {
				c := []float32{1, 2, 3, -1, 4, 5, 6, -1}
				be.Sgemm(false, true, 2, 3, 0, 1, nil, 0, nil, 0, beta, c[:7], 4)
				want := []float32{beta * 1, beta * 2, beta * 3, -1, beta * 4, beta * 5, beta * 6, -1}
				if !bitsEqual(c, want) {
					t.Errorf("k=0, beta=%g: C = %v, want %v", beta, c, want)
				}
			}
		})
	}
}

// TestSgemmBadArgsPanic wants the library backends to refuse a short slice
// or stride with a message naming the backend, before the library reads or
// writes past the end.
func TestSgemmBadArgsPanic(t *testing.T) {
	for _, be := range backends(t) {
		if be.Name() == "naive" {
			continue // indexes and panics on its own
		}
		cases := []struct {
			name string
			call func()
		}{
			{"short C", func() {
				be.Sgemm(false, false, 2, 2, 2, 1, make([]float32, 4), 2, make([]float32, 4), 2, 0, make([]float32, 3), 2)
			}},
			{"short A", func() {
				be.Sgemm(true, false, 2, 2, 3, 1, make([]float32, 5), 2, make([]float32, 6), 2, 0, make([]float32, 4), 2)
			}},
			{"lda too small", func() {
				be.Sgemm(false, false, 2, 2, 3, 1, make([]float32, 6), 2, make([]float32, 6), 2, 0, make([]float32, 4), 2)
			}},
			{"short B", func() {
				be.Sgemm(false, true, 2, 3, 2, 1, make([]float32, 4), 2, make([]float32, 5), 2, 0, make([]float32, 6), 3)
			}},
		}
		for _, tc := range cases {
			t.Run(be.Name()+"/"+tc.name, func(t *testing.T) {
				defer func() {
					r := recover()
					if msg, _ := r.(string); !strings.Contains(msg, be.Name()) {
						t.Errorf("recovered %v, want a panic naming %q", r, be.Name())
					}
				}()
				tc.call()
			})
		}
	}
}

// TestKernelBackendsRegistered: on a CPU with AVX-512F both kernel
// backends are compiled in and selectable by name (--gemm avx2 forces the
// 8-wide kernel there, and every test here runs both); without it the
// avx512 backend is absent and this test is skipped, not failed.
func TestKernelBackendsRegistered(t *testing.T) {
	if !avx512.Available() {
		t.Skip("no AVX-512F on this CPU: the avx512 backend is not registered (avx2 and the others are tested)")
	}
	for _, name := range []string{"avx512", "avx2"} {
		be, err := Get(name)
		if err != nil || be.Name() != name {
			t.Errorf("Get(%q) = %v, %v", name, be, err)
		}
	}
}

// Decoding one token multiplies one row of activations by the LM head
// (1 × V × C, NT): the kernel backends do it in avx2's dot form on the
// calling goroutine, with no allocation (gonum's parallel Sgemm, where
// such products used to fall through, allocated about 1,600 times per
// call at GPT-2's head).
func TestKernelBackendsOneRowAllocatesNothing(t *testing.T) {
	const n, k = 2053, 768
	rng := rand.New(rand.NewPCG(5, 6))
	a, w, c := randSlice(rng, k), randSlice(rng, n*k), make([]float32, n)
	tested := 0
	for _, name := range []string{"avx2", "avx512"} {
		be, err := Get(name)
		if err != nil {
			continue
		}
		tested++
		if allocs := testing.AllocsPerRun(5, func() { be.Sgemm(false, true, 1, n, k, 1, a, k, w, k, 0, c, n) }); allocs != 0 {
			t.Errorf("%s: a 1×%d×%d NT product allocates %.1f times, want 0", name, n, k, allocs)
		}
	}
	if tested == 0 {
		t.Skip("no kernel backend on this CPU")
	}
}

func TestGetUnknown(t *testing.T) {
	_, err := Get("nope")
	if err == nil {
		t.Fatal(`Get("nope") returned no error`)
	}
	msg := err.Error()
	if !strings.Contains(msg, `"nope"`) {
		t.Errorf("error %q does not name the backend asked for", msg)
	}
	for _, n := range Names() {
		if !strings.Contains(msg, n) {
			t.Errorf("error %q does not list available backend %q", msg, n)
		}
	}
}

func TestDefault(t *testing.T) {
	want, fallback := "gonum", "gonum"
	if openblasBuilt {
		want, fallback = "openblas", "openblas"
	}
	if avx2.Available() {
		want = "avx2"
		be, _ := Get("avx2")
		if fb := be.(AVX2).Fallback.Name(); fb != fallback {
			t.Errorf("avx2 falls back to %q, want %q", fb, fallback)
		}
	}
	if avx512.Available() {
		want = "avx512"
		be, _ := Get("avx512")
		if fb := be.(AVX512).Fallback.Name(); fb != "avx2" {
			t.Errorf("avx512 falls back to %q, want avx2", fb)
		}
	}
	if got := DefaultName(); got != want {
		t.Errorf("DefaultName() = %q, want %q (openblas tag: %v, have %v)", got, want, openblasBuilt, Names())
	}
	if got := Default().Name(); got != want {
		t.Errorf("Default().Name() = %q, want %q", got, want)
	}
	for _, name := range []string{"", "auto"} {
		be, err := Get(name)
		if err != nil || be.Name() != want {
			t.Errorf("Get(%q) = %v, %v; want backend %q", name, be, err, want)
		}
	}
}

func TestOpenBLASConfig(t *testing.T) {
	cfg := OpenBLASConfig()
	t.Logf("OpenBLASConfig() = %q", cfg)
	if openblasBuilt && !strings.Contains(cfg, "OpenBLAS") {
		t.Errorf("OpenBLASConfig() = %q, want openblas_get_config() output", cfg)
	}
	if !openblasBuilt && cfg != "" {
		t.Errorf("OpenBLASConfig() = %q without the openblas tag, want empty", cfg)
	}
}
