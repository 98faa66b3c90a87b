package tape_test

import (
	"testing"

	"memprobe/ledger"
	"memprobe/trainer/gemm"
	"memprobe/trainer/model"
	"memprobe/trainer/tape"
)

func TestArenaBasics(t *testing.T) {
	led := ledger.New()
	acct := led.Account(ledger.Arena)
	a := tape.NewArena(1024, acct) // 256 floats a chunk
	check := func(what string, chunks int, held, inUse int64) {
		t.Helper()
		if a.Chunks() != chunks || a.HeldBytes() != held || a.InUseBytes() != inUse || acct.Current() != held {
			t.Errorf("%s: %d chunks, held %d, in use %d, ledger %d; want %d, %d, %d, %d",
				what, a.Chunks(), a.HeldBytes(), a.InUseBytes(), acct.Current(), chunks, held, inUse, held)
		}
	}
	x := a.Float32s(100)
	y := a.Float32s(100)
	check("two fitting requests", 1, 1024, 800)
	for i := range x {
		x[i], y[i] = 1, 2
	}
	a.Float32s(100) // does not fit in the 56 left
	check("a third request", 2, 2048, 1200)
	a.Float32s(1000) // larger than a chunk: a chunk of its own
	check("an oversized request", 3, 2048+4000, 5200)

	a.Reset() // no frame: to the start
	check("Reset with no frame", 3, 6048, 0)
	z := a.Float32s(100)
	if &z[0] != &x[0] || z[0] != 0 || z[99] != 0 {
		t.Errorf("after Reset the first request does not reuse the first slot zeroed")
	}

	a.Begin()
	a.Float32s(200) // 100+200 > 256: the next chunk
	a.Float32s(50)
	inFrame := a.InUseBytes()
	a.Reset()
	check("Reset to the frame", 3, 6048, 400)
	if inFrame != 1400 {
		t.Errorf("in use in the frame %d, want 1400", inFrame)
	}
	a.ReleaseChunks() // keeps chunk 0 (z lies in it)
	check("ReleaseChunks above z", 1, 1024, 400)
	a.ResetAll()
	a.ReleaseChunks()
	check("ResetAll and ReleaseChunks", 0, 0, 0)
	if a.PeakBytes() != 6048 || acct.Peak() != 6048 {
		t.Errorf("peak %d bytes (ledger %d), want 6048", a.PeakBytes(), acct.Peak())
	}
	a.Float32s(10)
	check("allocating after releasing everything", 1, 1024, 40)
}

// loopRun is one ArenaLoop run's measurements.
type loopRun struct {
	inUse, held     []int64 // at the end of each iteration
	peak, peakInUse int64
}

// runLoop runs iters iterations of a micro-preset training loop over an
// arena: the step is B sequences' Forward, Backward and Release; the side
// work is a sample of nsample tokens and a checkpoint snapshot of params, m
// and v, all from the arena.
func runLoop(t *testing.T, order tape.ResetOrder, withFrame bool, iters, nsample int) loopRun {
	c := model.Presets["micro"]
	g := gemm.Default()
	p, grads := setup(c)
	m := model.NewParams(c, make([]float32, c.NumParams()))
	v := model.NewParams(c, make([]float32, c.NumParams()))
	seqs := randomSeqs(c, c.Batch, 17)
	acct := ledger.New().Account(ledger.Arena)
	a := tape.NewArena(16<<10, acct)
	step := func() {
		for _, s := range seqs {
			gr, _ := tape.Forward(g, c, p, s.in, s.tg, a, tape.Options{})
			gr.Backward(grads, 1/float32(c.Batch*c.Context), model.NoTurnstile{})
			gr.Release()
		}
	}
	side := func() {
		tape.Sample(g, c, p, seqs[0].in[:1], nsample, 5, a, tape.Options{})
		buf := tape.StageCheckpoint(a, p.Memory, m.Memory, v.Memory)
		if len(buf) != 3*c.NumParams() || buf[0] != p.Memory[0] {
			t.Fatalf("staging buffer of %d floats", len(buf))
		}
	}
	var r loopRun
	if withFrame {
		loop := &tape.ArenaLoop{Arena: a, Order: order, ReleaseEvery: tape.DefaultReleaseEvery}
		for range iters {
			loop.Iteration(step, side)
			r.inUse = append(r.inUse, a.InUseBytes())
			r.held = append(r.held, a.HeldBytes())
		}
	} else {
		// A plain arena: Reset rewinds to the start (no Begin).
		for range iters {
			step()
			if order == tape.ResetBeforeSideWork {
				a.Reset()
			}
			side()
			if order == tape.ResetAtEnd {
				a.Reset()
			}
			r.inUse = append(r.inUse, a.InUseBytes())
			r.held = append(r.held, a.HeldBytes())
		}
	}
	if acct.Current() != a.HeldBytes() {
		t.Errorf("ledger arena account %d bytes, arena holds %d", acct.Current(), a.HeldBytes())
	}
	r.peak, r.peakInUse = a.PeakBytes(), a.PeakInUseBytes()
	return r
}

// TestArenaLoopResetOrder is design note 002's arena: the reset before the
// side work leaves every iteration's side work in the arena until the
// periodic release; the reset at the end keeps one iteration's worth.
func TestArenaLoopResetOrder(t *testing.T) {
	const iters, nsample = 20, 4
	c := model.Presets["micro"]
	g := gemm.Default()
	p, grads := setup(c)

	// The bytes one forward graph and one trained graph take (heap run).
	s := randomSeqs(c, 1, 1)[0]
	gr, _ := tape.Forward(g, c, p, s.in, s.tg, tape.NewHeap(nil), tape.Options{})
	fwd := gr.Bytes()
	gr.Backward(grads, 1, model.NoTurnstile{})
	full := gr.Bytes()
	gr.Release()
	A := int64(c.Batch) * full                         // a step's graphs
	S := int64(nsample)*fwd + int64(3*c.NumParams()*4) // a side work's sample graphs and staging buffer

	end := runLoop(t, tape.ResetAtEnd, true, iters, nsample)
	before := runLoop(t, tape.ResetBeforeSideWork, true, iters, nsample)
	t.Logf("step %d bytes, side work %d bytes per iteration", A, S)
	t.Logf("reset at end:    held %v, peak held %d, peak in use %d", end.held, end.peak, end.peakInUse)
	t.Logf("reset before:    held %v, peak held %d, peak in use %d", before.held, before.peak, before.peakInUse)

	k := 0
	for i := 0; i < iters; i++ {
		if end.inUse[i] != 0 {
			t.Errorf("reset at end, iteration %d: %d bytes in use after the reset, want 0", i+1, end.inUse[i])
		}
		if (i+1)%tape.DefaultReleaseEvery == 0 {
			k = 0
		} else if end.held[i] != end.held[0] {
			t.Errorf("reset at end, iteration %d: arena holds %d bytes, iteration 1 %d: it should not grow", i+1, end.held[i], end.held[0])
		}
		k++
		if want := int64(k) * S; before.inUse[i] != want {
			t.Errorf("reset before, iteration %d: %d bytes in use, want %d iterations' side work = %d", i+1, before.inUse[i], k, want)
		}
		if i > 0 && (i+1)%tape.DefaultReleaseEvery != 0 && before.held[i] <= before.held[i-1] {
			t.Errorf("reset before, iteration %d: arena holds %d bytes, no more than iteration %d's %d", i+1, before.held[i], i, before.held[i-1])
		}
	}
	if end.peakInUse != A+S {
		t.Errorf("reset at end: peak in use %d, want step + side work = %d", end.peakInUse, A+S)
	}
	// The peak comes at iteration 20's step, on top of iterations 10..19's side work.
	if want := 10*S + A; before.peakInUse != want {
		t.Errorf("reset before: peak in use %d, want 10 side works + step = %d", before.peakInUse, want)
	}
	if before.peak < end.peak+8*S {
		t.Errorf("reset before: peak held %d, want at least reset-at-end's %d + 8 side works (%d)", before.peak, end.peak, 8*S)
	}
}

// TestPlainArenaOrderIrrelevant: without the iteration frame (Reset always
// rewinds to the start) the same allocations lie between any two resets, so
// where the reset sits does not change the peak.
func TestPlainArenaOrderIrrelevant(t *testing.T) {
	end := runLoop(t, tape.ResetAtEnd, false, 12, 4)
	before := runLoop(t, tape.ResetBeforeSideWork, false, 12, 4)
	if end.peakInUse != before.peakInUse {
		t.Errorf("plain arena: peak in use %d (end) vs %d (before), want equal", end.peakInUse, before.peakInUse)
	}
	t.Logf("plain arena: peak in use %d (end) vs %d (before); held %d vs %d", end.peakInUse, before.peakInUse, end.peak, before.peak)
}

func TestParseResetOrder(t *testing.T) {
	for _, o := range []tape.ResetOrder{tape.ResetAtEnd, tape.ResetBeforeSideWork} {
		got, err := tape.ParseResetOrder(o.String())
		if err != nil || got != o {
			t.Errorf("ParseResetOrder(%q) = %v, %v", o.String(), got, err)
		}
	}
	if _, err := tape.ParseResetOrder("middle"); err == nil {
		t.Error("ParseResetOrder(\"middle\") did not fail")
	}
}
