package tape_test

import (
	"testing"

	"memprobe/ledger"
	"memprobe/trainer/gemm"
	"memprobe/trainer/model"
	"memprobe/trainer/tape"
)

// BenchmarkSequence times one sequence's forward and backward at the tiny
// preset with the default gemm backend: the static pass (model.Forward and
// model.Backward on preallocated workspaces) against the tape with each
// allocator. One op is one sequence. graph-B/seq is the bytes the tape took
// from its allocator for the sequence (0 for the static pass, whose
// workspace is allocated once, outside the loop).
func BenchmarkSequence(b *testing.B) {
	c := model.Presets["tiny"]
	g := gemm.Default()
	p, grads := setup(c)
	s := randomSeqs(c, 1, 3)[0]
	dloss := 1 / float32(c.Batch*c.Context)

	b.Run("static", func(b *testing.B) {
		a := model.NewActs(c, make([]float32, c.ActsSize()))
		ga := model.NewGradActs(c, make([]float32, c.GradActsSize()))
		b.ReportAllocs()
		for b.Loop() {
			model.Forward(g, c, p, a, s.in, s.tg)
			model.Backward(g, c, p, grads, a, ga, s.in, s.tg, dloss, model.NoTurnstile{})
		}
		b.ReportMetric(0, "graph-B/seq")
	})
	run := func(name string, alloc tape.Allocator, o tape.Options, reset func()) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var bytes int64
			for b.Loop() {
				gr, _ := tape.Forward(g, c, p, s.in, s.tg, alloc, o)
				gr.Backward(grads, dloss, model.NoTurnstile{})
				bytes = gr.Bytes()
				gr.Release()
				if reset != nil {
					reset()
				}
			}
			b.ReportMetric(float64(bytes), "graph-B/seq")
		})
	}
	run("tape-heap", tape.NewHeap(ledger.New().Account(ledger.Tape)), tape.Options{}, nil)
	arena := tape.NewArena(4<<20, nil)
	run("tape-arena", arena, tape.Options{}, arena.Reset)
	run("tape-heap-onehot", tape.NewHeap(nil), tape.Options{OneHotEmbedding: true}, nil)
}

// BenchmarkArenaLoop runs design note 002's loop at the tiny preset: 20
// iterations of a step of B sequences (Forward, Backward, Release on the
// arena) and the side work (a 16-token sample and a params+m+v checkpoint
// snapshot, on the arena), with the reset before the side work and at the
// end. One op is the 20 iterations; run it with -benchtime 1x. The metrics
// are the arena's peak chunk bytes, peak bytes in use, and chunk bytes held
// after iteration 19 (before the second periodic release).
func BenchmarkArenaLoop(b *testing.B) {
	c := model.Presets["tiny"]
	g := gemm.Default()
	p, grads := setup(c)
	m := model.NewParams(c, make([]float32, c.NumParams()))
	v := model.NewParams(c, make([]float32, c.NumParams()))
	seqs := randomSeqs(c, c.Batch, 17)
	for _, order := range []tape.ResetOrder{tape.ResetBeforeSideWork, tape.ResetAtEnd} {
		b.Run(order.String(), func(b *testing.B) {
			var peak, peakInUse, held19 int64
			for b.Loop() {
				a := tape.NewArena(1<<20, nil)
				loop := &tape.ArenaLoop{Arena: a, Order: order, ReleaseEvery: tape.DefaultReleaseEvery}
				for i := 0; i < 20; i++ {
					loop.Iteration(func() {
						for _, s := range seqs {
							gr, _ := tape.Forward(g, c, p, s.in, s.tg, a, tape.Options{})
							gr.Backward(grads, 1/float32(c.Batch*c.Context), model.NoTurnstile{})
							gr.Release()
						}
					}, func() {
						tape.Sample(g, c, p, seqs[0].in[:1], 16, 5, a, tape.Options{})
						tape.StageCheckpoint(a, p.Memory, m.Memory, v.Memory)
					})
					if i == 18 {
						held19 = a.HeldBytes()
					}
				}
				peak, peakInUse = a.PeakBytes(), a.PeakInUseBytes()
			}
			b.ReportMetric(float64(peak), "peak-held-B")
			b.ReportMetric(float64(peakInUse), "peak-inuse-B")
			b.ReportMetric(float64(held19), "held-iter19-B")
		})
	}
}
