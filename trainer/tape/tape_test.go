package tape_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"memprobe/ledger"
	"memprobe/trainer/gemm"
	"memprobe/trainer/model"
	"memprobe/trainer/tape"
)

// seq is one sequence's inputs and targets.
type seq struct{ in, tg []uint16 }

// randomSeqs draws n sequences of c.Context tokens from a seeded generator.
// With the tiny preset (T=64, V=788) tokens repeat within a sequence, which
// the one-hot comparison needs.
func randomSeqs(c model.Config, n int, seed uint64) []seq {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([]seq, n)
	for i := range out {
		s := seq{make([]uint16, c.Context), make([]uint16, c.Context)}
		for t := range s.in {
			s.in[t] = uint16(rng.IntN(c.Vocab))
			s.tg[t] = uint16(rng.IntN(c.Vocab))
		}
		out[i] = s
	}
	return out
}

// setup returns initialised parameters and a gradient buffer holding
// random values (backward accumulates: never start from all zeros).
func setup(c model.Config) (p, grads *model.Params) {
	p = model.NewParams(c, make([]float32, c.NumParams()))
	model.Init(c, p, 7)
	grads = model.NewParams(c, make([]float32, c.NumParams()))
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range grads.Memory {
		grads.Memory[i] = float32(rng.NormFloat64() * 1e-3)
	}
	return p, grads
}

func cloneParams(c model.Config, p *model.Params) *model.Params {
	return model.NewParams(c, append([]float32(nil), p.Memory...))
}

// staticPass runs model.Forward and model.Backward on each sequence in turn,
// accumulating into grads, and returns the losses.
func staticPass(g gemm.Backend, c model.Config, p, grads *model.Params, seqs []seq, dloss float32, ts model.Turnstile) []float32 {
	a := model.NewActs(c, make([]float32, c.ActsSize()))
	ga := model.NewGradActs(c, make([]float32, c.GradActsSize()))
	losses := make([]float32, len(seqs))
	for i, s := range seqs {
		losses[i] = model.Forward(g, c, p, a, s.in, s.tg)
		model.Backward(g, c, p, grads, a, ga, s.in, s.tg, dloss, ts)
	}
	return losses
}

// tapePass is staticPass through the tape.
func tapePass(g gemm.Backend, c model.Config, p, grads *model.Params, seqs []seq, dloss float32, ts model.Turnstile, alloc tape.Allocator, o tape.Options) []float32 {
	losses := make([]float32, len(seqs))
	for i, s := range seqs {
		gr, loss := tape.Forward(g, c, p, s.in, s.tg, alloc, o)
		gr.Backward(grads, dloss, ts)
		gr.Release()
		losses[i] = loss
	}
	return losses
}

// diff compares two tensors: the count of elements whose bits differ and the
// largest absolute difference.
func diff(a, b []float32) (nbits int, maxAbs float64) {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			nbits++
		}
		maxAbs = math.Max(maxAbs, math.Abs(float64(a[i])-float64(b[i])))
	}
	return nbits, maxAbs
}

func maxAbs(a []float32) float64 {
	var m float64
	for _, v := range a {
		m = math.Max(m, math.Abs(float64(v)))
	}
	return m
}

// TestGradsMatchStatic checks the tape's loss and every parameter gradient
// against model.Forward and model.Backward on the micro and tiny presets,
// with every compiled-in gemm backend, for one sequence and for two summed
// into the same gradient, with NoTurnstile. The promise is bit-identity for
// the scatter-add embedding; with OneHotEmbedding every tensor but wte is
// bit-identical and wte is within 1e-6 of its largest element.
func TestGradsMatchStatic(t *testing.T) {
	for _, preset := range []string{"micro", "tiny"} {
		for _, name := range gemm.Names() {
			for _, nseq := range []int{1, 2} {
				for _, onehot := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s/%s/seqs=%d/onehot=%v", preset, name, nseq, onehot), func(t *testing.T) {
						c := model.Presets[preset]
						g, err := gemm.Get(name)
						if err != nil {
							t.Fatal(err)
						}
						p, grads := setup(c)
						want := cloneParams(c, grads)
						seqs := randomSeqs(c, nseq, 11)
						dloss := 1 / float32(nseq*c.Context)
						wantLoss := staticPass(g, c, p, want, seqs, dloss, model.NoTurnstile{})
						gotLoss := tapePass(g, c, p, grads, seqs, dloss, model.NoTurnstile{}, tape.NewHeap(nil), tape.Options{OneHotEmbedding: onehot})
						for i := range wantLoss {
							if math.Float32bits(wantLoss[i]) != math.Float32bits(gotLoss[i]) {
								t.Errorf("sequence %d: loss %v, static %v", i, gotLoss[i], wantLoss[i])
							}
						}
						gt, wt := grads.Tensors(), want.Tensors()
						for i, pname := range model.ParamNames {
							nb, md := diff(*gt[i], *wt[i])
							if onehot && pname == "wte" {
								scale := maxAbs(*wt[i])
								t.Logf("wte: %d of %d elements differ in bits, max |diff| %.3g (%.3g of max |grad| %.3g)", nb, len(*wt[i]), md, md/scale, scale)
								if md > 1e-6*scale {
									t.Errorf("wte: max |diff| %.3g exceeds 1e-6 * %.3g", md, scale)
								}
								continue
							}
							if nb != 0 {
								t.Errorf("%s: %d of %d elements differ in bits, max |diff| %.3g", pname, nb, len(*wt[i]), md)
							}
						}
					})
				}
			}
		}
	}
}

// slotLog records the turnstile calls in order.
type slotLog struct{ calls []string }

func (l *slotLog) Enter(s int) { l.calls = append(l.calls, fmt.Sprintf("+%d", s)) }
func (l *slotLog) Leave(s int) { l.calls = append(l.calls, fmt.Sprintf("-%d", s)) }

// TestSlotOrder checks that the tape enters and leaves the same turnstile
// slots in the same order as model.Backward, each exactly once.
func TestSlotOrder(t *testing.T) {
	for _, preset := range []string{"micro", "tiny"} {
		c := model.Presets[preset]
		g := gemm.Default()
		p, grads := setup(c)
		seqs := randomSeqs(c, 1, 5)
		var want, got slotLog
		staticPass(g, c, p, cloneParams(c, grads), seqs, 1, &want)
		tapePass(g, c, p, grads, seqs, 1, &got, tape.NewHeap(nil), tape.Options{})
		if fmt.Sprint(want.calls) != fmt.Sprint(got.calls) {
			t.Errorf("%s: slots\n tape   %v\n static %v", preset, got.calls, want.calls)
		}
		if n := len(got.calls); n != 2*c.NumSlots() {
			t.Errorf("%s: %d turnstile calls, want 2 per slot = %d", preset, n, 2*c.NumSlots())
		}
	}
}

// orderedTurns is the trainer's turnstile: sequence i enters a slot after
// sequence i-1 has left it.
type orderedTurns struct{ turns []atomic.Int32 }

type seqTurn struct {
	o   *orderedTurns
	seq int32
}

func (s seqTurn) Enter(slot int) {
	for s.o.turns[slot].Load() != s.seq {
		runtime.Gosched()
	}
}
func (s seqTurn) Leave(slot int) { s.o.turns[slot].Store(s.seq + 1) }

// TestConcurrentOrdered runs four sequences through the tape on four
// goroutines at once, summing into one gradient through the ordered
// turnstile, and checks the sum against the static pass run serially: bit
// for bit, whatever the schedule. Run with -race.
func TestConcurrentOrdered(t *testing.T) {
	c := model.Presets["tiny"]
	g := gemm.Default()
	p, grads := setup(c)
	want := cloneParams(c, grads)
	seqs := randomSeqs(c, 4, 21)
	dloss := 1 / float32(len(seqs)*c.Context)
	staticPass(g, c, p, want, seqs, dloss, model.NoTurnstile{})

	led := ledger.New()
	heap := tape.NewHeap(led.Account(ledger.Tape))
	arena := tape.NewArena(256<<10, led.Account(ledger.Arena))
	for _, alloc := range []tape.Allocator{heap, arena} {
		got := cloneParams(c, grads)
		turns := &orderedTurns{turns: make([]atomic.Int32, c.NumSlots())}
		var wg sync.WaitGroup
		for i, s := range seqs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				gr, _ := tape.Forward(g, c, p, s.in, s.tg, alloc, tape.Options{})
				gr.Backward(got, dloss, seqTurn{turns, int32(i)})
				gr.Release()
			}()
		}
		wg.Wait()
		if nb, md := diff(got.Memory, want.Memory); nb != 0 {
			t.Errorf("%T: %d gradient elements differ in bits from the serial static sum, max |diff| %.3g", alloc, nb, md)
		}
		arena.Reset()
	}
	if cur := led.Account(ledger.Tape).Current(); cur != 0 {
		t.Errorf("tape account holds %d bytes after every graph was released", cur)
	}
}

// TestHeapLedger checks that the heap allocator's account returns to 0
// after Release, that its peak is the graph's bytes, and that it saw as many
// frees as allocations.
func TestHeapLedger(t *testing.T) {
	c := model.Presets["tiny"]
	g := gemm.Default()
	p, grads := setup(c)
	s := randomSeqs(c, 1, 9)[0]
	led := ledger.New()
	acct := led.Account(ledger.Tape)
	gr, _ := tape.Forward(g, c, p, s.in, s.tg, tape.NewHeap(acct), tape.Options{})
	fwd := gr.Bytes()
	if acct.Current() != fwd {
		t.Errorf("after Forward the account holds %d bytes, the graph %d", acct.Current(), fwd)
	}
	gr.Backward(grads, 1, model.NoTurnstile{})
	all := gr.Bytes()
	if acct.Current() != all || all <= fwd {
		t.Errorf("after Backward the account holds %d bytes, the graph %d (forward %d)", acct.Current(), all, fwd)
	}
	gr.Release()
	e := led.Snapshot()[0]
	if e.CurrentBytes != 0 || e.PeakBytes != all || e.Allocs != e.Frees || gr.Bytes() != 0 {
		t.Errorf("after Release: %+v, graph bytes %d; want current 0, peak %d, allocs == frees", e, gr.Bytes(), all)
	}
	if n := gr.Nodes(); n != 0 {
		t.Errorf("released graph still has %d nodes", n)
	}
	t.Logf("tiny graph: forward %d bytes, with gradients %d bytes (static acts %d + grad acts %d)", fwd, all, 4*c.ActsSize(), 4*c.GradActsSize())
}

// TestRetainedHistory is design note 004's second pathology: graphs kept
// across steps. Kept, the tape account grows by one graph per step
// (linearly); released each step, it returns to 0 and peaks at one graph.
func TestRetainedHistory(t *testing.T) {
	c := model.Presets["micro"]
	g := gemm.Default()
	p, grads := setup(c)
	const steps = 6
	seqs := randomSeqs(c, steps, 13)
	for _, keep := range []bool{true, false} {
		led := ledger.New()
		acct := led.Account(ledger.Tape)
		heap := tape.NewHeap(acct)
		var history []*tape.Graph
		var one int64
		for i, s := range seqs {
			gr, _ := tape.Forward(g, c, p, s.in, s.tg, heap, tape.Options{})
			gr.Backward(grads, 1, model.NoTurnstile{})
			one = gr.Bytes()
			if keep {
				history = append(history, gr)
				if want := int64(i+1) * one; acct.Current() != want {
					t.Errorf("kept, step %d: account %d bytes, want %d steps × %d", i+1, acct.Current(), i+1, one)
				}
			} else {
				gr.Release()
				if acct.Current() != 0 {
					t.Errorf("released, step %d: account %d bytes, want 0", i+1, acct.Current())
				}
			}
		}
		t.Logf("keep=%v: after %d steps the account holds %d bytes, peak %d (one graph %d)", keep, steps, acct.Current(), acct.Peak(), one)
		if !keep && acct.Peak() != one {
			t.Errorf("released: peak %d, want one graph %d", acct.Peak(), one)
		}
		for _, gr := range history {
			gr.Release()
		}
		if acct.Current() != 0 {
			t.Errorf("keep=%v: %d bytes after releasing the history", keep, acct.Current())
		}
	}
}

// TestOneHotBytes checks that the one-hot embedding costs exactly T×V
// floats more per graph than the scatter-add, and records one node more of
// nothing: the node count is the same.
func TestOneHotBytes(t *testing.T) {
	for _, preset := range []string{"micro", "tiny", "seed"} {
		c := model.Presets[preset]
		g := gemm.Default()
		p, grads := setup(c)
		s := randomSeqs(c, 1, 2)[0]
		var fwd, all [2]int64
		var nodes [2]int
		for i, onehot := range []bool{false, true} {
			gr, _ := tape.Forward(g, c, p, s.in, s.tg, tape.NewHeap(nil), tape.Options{OneHotEmbedding: onehot})
			fwd[i], nodes[i] = gr.Bytes(), gr.Nodes()
			gr.Backward(grads, 1, model.NoTurnstile{})
			all[i] = gr.Bytes()
			gr.Release()
		}
		want := int64(c.Context * c.Vocab * 4)
		if fwd[1]-fwd[0] != want || all[1]-all[0] != want {
			t.Errorf("%s: one-hot adds %d bytes to forward and %d to the whole graph, want T*V*4 = %d", preset, fwd[1]-fwd[0], all[1]-all[0], want)
		}
		if nodes[0] != nodes[1] || nodes[0] != 1+10*c.Layers+3 {
			t.Errorf("%s: %d and %d nodes, want 1+10L+3 = %d", preset, nodes[0], nodes[1], 1+10*c.Layers+3)
		}
		t.Logf("%s: graph %d bytes (scatter) vs %d (one-hot, +%d); embedding backward %d vs %d multiply-adds",
			preset, all[0], all[1], want, c.Context*c.Dim, c.Vocab*c.Context*c.Dim)
	}
}

// TestSampleMatchesStatic checks Sample against the same loop over
// model.Forward (trainer.Sample's algorithm): the same tokens.
func TestSampleMatchesStatic(t *testing.T) {
	c := model.Presets["tiny"]
	g := gemm.Default()
	p, _ := setup(c)
	const n, seed = 20, 99
	prompt := []uint16{5}
	got := tape.Sample(g, c, p, prompt, n, seed, tape.NewArena(1<<20, nil), tape.Options{})

	T, V := c.Context, c.Vocab
	a := model.NewActs(c, make([]float32, c.ActsSize()))
	rng := rand.New(rand.NewPCG(seed, 0x73616d706c65))
	window, targets := make([]uint16, T), make([]uint16, T)
	hist := append([]uint16(nil), prompt...)
	var want []uint16
	for len(want) < n {
		k := copy(window, hist[max(0, len(hist)-T):])
		clear(window[k:])
		model.Forward(g, c, p, a, window, targets)
		next := model.SampleToken(a.Probs[(k-1)*V:k*V], rng.Float32())
		want = append(want, next)
		hist = append(hist, next)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("tape sample %v\nstatic sample %v", got, want)
	}
}

func TestGraphMisuse(t *testing.T) {
	c := model.Presets["micro"]
	g := gemm.Default()
	p, grads := setup(c)
	s := randomSeqs(c, 1, 1)[0]
	mustPanic := func(what string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s did not panic", what)
			}
		}()
		f()
	}
	arena := tape.NewArena(4096, nil)
	arena.Begin()
	gr, _ := tape.Forward(g, c, p, s.in, s.tg, arena, tape.Options{})
	arena.Reset()
	mustPanic("Backward after the arena's reset", func() { gr.Backward(grads, 1, model.NoTurnstile{}) })

	gr, _ = tape.Forward(g, c, p, s.in, s.tg, tape.NewHeap(nil), tape.Options{})
	gr.Backward(grads, 1, model.NoTurnstile{})
	mustPanic("a second Backward", func() { gr.Backward(grads, 1, model.NoTurnstile{}) })
	gr.Release()
	gr.Release() // no-op
	mustPanic("Backward after Release", func() { gr.Backward(grads, 1, model.NoTurnstile{}) })
	mustPanic("short inputs", func() { tape.Forward(g, c, p, s.in[:2], s.tg, tape.NewHeap(nil), tape.Options{}) })
}
