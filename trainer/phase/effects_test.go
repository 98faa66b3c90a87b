package phase

import (
	"math"
	"runtime"
	"testing"

	"memprobe/ledger"
	"memprobe/trainer"
	"memprobe/trainer/data"
	"memprobe/trainer/model"
	"memprobe/trainer/osthread"
)

// A run of one phase: its losses, what the trainer counted, and the
// ledger at the end.
type phaseRun struct {
	losses []float32
	counts trainer.Counts
	ledger map[string]int64 // current bytes
	gemm   string
}

func runPhase(t *testing.T, preset, plan, phase string, threads, steps int, gemm string) phaseRun {
	t.Helper()
	cfg := model.Presets[preset]
	ds, err := data.Load("synthetic:200KB", cfg.Vocab, 1)
	if err != nil {
		t.Fatal(err)
	}
	o := trainer.Options{Config: cfg, Optimizer: model.DefaultAdamW, Threads: threads, Seed: 1337, GEMM: gemm, Ledger: ledger.New()}
	if plan != "" {
		if err := Select(&o, plan, phase); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := trainer.New(o, ds)
	if err != nil {
		t.Fatalf("%s %s: %v", plan, phase, err)
	}
	defer tr.Close()
	r := phaseRun{ledger: map[string]int64{}, gemm: tr.GEMM().Name()}
	for range steps {
		r.losses = append(r.losses, tr.Step())
	}
	if err := tr.Err(); err != nil {
		t.Fatalf("%s %s: %v", plan, phase, err)
	}
	r.counts = tr.Counts()
	for _, e := range o.Ledger.Snapshot() {
		r.ledger[e.Component] = e.CurrentBytes
	}
	return r
}

func sameLosses(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Errorf("%s: step %d loss %.9g, fixed trainer %.9g", what, i+1, got[i], want[i])
		}
	}
}

// TestThreadsPhases runs every phase of the threads plan on the tiny preset
// and checks that each gives the fixed trainer's losses bit for bit and
// that each fix moves its own deterministic quantity the documented way.
func TestThreadsPhases(t *testing.T) {
	if !osthread.Available() {
		t.Skip("the threads plan runs workers on pthreads before P6; built without cgo")
	}
	const threads, steps = 3, 2
	fixed := runPhase(t, "tiny", "", "", threads, steps, "auto")
	p, _ := Lookup("threads")
	runs := map[string]phaseRun{}
	for _, ph := range p.Phases {
		r := runPhase(t, "tiny", "threads", ph.Name, threads, steps, "auto")
		sameLosses(t, "threads "+ph.Name, r.losses, fixed.losses)
		runs[ph.Name] = r
	}
	B := int64(model.Presets["tiny"].Batch)
	check := func(phase, what string, before, after int64, ok bool) {
		t.Helper()
		if !ok {
			t.Errorf("%s: %s went from %d to %d", phase, what, before, after)
		}
	}
	b, p1 := runs["before"], runs["P1"]
	check("P1", "worker.stacks bytes", b.ledger[ledger.WorkerStacks], p1.ledger[ledger.WorkerStacks],
		b.ledger[ledger.WorkerStacks] == threads*8<<20 && p1.ledger[ledger.WorkerStacks] == threads*1<<20)
	p2 := runs["P2"]
	check("P2", "contexts", int64(p1.counts.Contexts), int64(p2.counts.Contexts), p1.counts.Contexts == 13 && p2.counts.Contexts == threads)
	check("P2", "worker.contexts bytes", p1.ledger[ledger.WorkerContexts], p2.ledger[ledger.WorkerContexts],
		p1.ledger[ledger.WorkerContexts] > 0 && p2.ledger[ledger.WorkerContexts] == 0)
	p3 := runs["P3"]
	for _, c := range []string{ledger.CacheAttention, ledger.CacheBackward, ledger.CacheEmbedding} {
		check("P3", c+" bytes", p2.ledger[c], p3.ledger[c], p2.ledger[c] > 0 && p3.ledger[c] == 0)
	}
	check("P3", "cache clears", p2.counts.CacheClears, p3.counts.CacheClears, p2.counts.CacheClears == threads*steps && p3.counts.CacheClears == 0)
	ws := func(r phaseRun) int64 {
		return r.ledger[ledger.Activations] + r.ledger[ledger.ActivationGrads] + r.ledger[ledger.CacheAttention] + r.ledger[ledger.CacheBackward] + r.ledger[ledger.CacheEmbedding]
	}
	check("P3", "workspace bytes", ws(p2), ws(p3), ws(p3) < ws(p2))
	p4 := runs["P4"]
	check("P4", "batches bytes", p3.ledger[ledger.Batches], p4.ledger[ledger.Batches], p4.ledger[ledger.Batches] < p3.ledger[ledger.Batches])
	check("P4", "batch buffers", int64(p3.counts.BatchBuffers), int64(p4.counts.BatchBuffers), p3.counts.BatchBuffers > 1 && p4.counts.BatchBuffers == 1)
	p5 := runs["P5"]
	check("P5", "model-lock holds", p4.counts.ModelLockHolds, p5.counts.ModelLockHolds, p4.counts.ModelLockHolds == B*steps && p5.counts.ModelLockHolds == 0)
	p6 := runs["P6"]
	check("P6", "worker threads", int64(p5.counts.WorkerThreads), int64(p6.counts.WorkerThreads), p5.counts.WorkerThreads == threads && p6.counts.WorkerThreads == 0)
	check("P6", "workspaces", int64(p5.counts.Workspaces), int64(p6.counts.Workspaces),
		p5.counts.Workspaces == threads && p6.counts.Workspaces == min(threads, runtime.GOMAXPROCS(0)) && p6.counts.Contexts == 0)
	if p6.counts != fixed.counts {
		t.Errorf("P6 counts %+v, fixed trainer %+v", p6.counts, fixed.counts)
	}
}

// TestArenaPhases: the tape gives the static trainer's losses; resetting at
// the end of the step holds fewer arena bytes than resetting before the
// side work; P2 swaps the GEMM.
func TestArenaPhases(t *testing.T) {
	const steps = 3
	fixed := runPhase(t, "micro", "", "", 2, steps, "naive")
	b := runPhase(t, "micro", "arena", "before", 2, steps, "")
	p1 := runPhase(t, "micro", "arena", "P1", 2, steps, "")
	p2 := runPhase(t, "micro", "arena", "P2", 2, steps, "")
	sameLosses(t, "arena before", b.losses, fixed.losses)
	sameLosses(t, "arena P1", p1.losses, fixed.losses)
	if b.ledger[ledger.Arena] <= p1.ledger[ledger.Arena] {
		t.Errorf("P1: arena bytes %d before, %d after; want fewer", b.ledger[ledger.Arena], p1.ledger[ledger.Arena])
	}
	if b.counts.SideWorkRuns != steps || p1.counts.SideWorkRuns != steps {
		t.Errorf("side work ran %d and %d times in %d steps", b.counts.SideWorkRuns, p1.counts.SideWorkRuns, steps)
	}
	if b.gemm != "naive" || p1.gemm != "naive" || p2.gemm == "naive" {
		t.Errorf("gemm: before %s, P1 %s, P2 %s", b.gemm, p1.gemm, p2.gemm)
	}
}

// TestEmbeddingPhases: the one-hot embedding holds more tape bytes than
// the scatter-add, and releasing the graphs returns them all.
func TestEmbeddingPhases(t *testing.T) {
	const steps = 2
	fixed := runPhase(t, "micro", "", "", 2, steps, "naive")
	b := runPhase(t, "micro", "embedding", "before", 2, steps, "naive")
	p1 := runPhase(t, "micro", "embedding", "P1", 2, steps, "naive")
	p2 := runPhase(t, "micro", "embedding", "P2", 2, steps, "naive")
	for name, r := range map[string]phaseRun{"P1": p1, "P2": p2} {
		sameLosses(t, "embedding "+name, r.losses, fixed.losses)
	}
	// The one-hot wte gradient may differ in the last bits (package tape):
	// compare its losses at a tolerance.
	for i := range fixed.losses {
		if d := math.Abs(float64(b.losses[i] - fixed.losses[i])); d > 1e-5 {
			t.Errorf("embedding before: step %d loss %.9g, fixed %.9g", i+1, b.losses[i], fixed.losses[i])
		}
	}
	B := model.Presets["micro"].Batch
	if !(b.ledger[ledger.Tape] > p1.ledger[ledger.Tape] && p1.ledger[ledger.Tape] > 0 && p2.ledger[ledger.Tape] == 0) {
		t.Errorf("tape bytes: before %d, P1 %d, P2 %d", b.ledger[ledger.Tape], p1.ledger[ledger.Tape], p2.ledger[ledger.Tape])
	}
	if b.counts.TapeGraphsKept != B*steps || p2.counts.TapeGraphsKept != 0 {
		t.Errorf("graphs kept: before %d, P2 %d; want %d and 0", b.counts.TapeGraphsKept, p2.counts.TapeGraphsKept, B*steps)
	}
}

// TestDecodePhases: with the naive GEMM every decode mode gives the host
// head's losses bit for bit; the mode is the phase's switch.
func TestDecodePhases(t *testing.T) {
	const steps = 2
	fixed := runPhase(t, "micro", "", "", 2, steps, "naive")
	p, _ := Lookup("decode")
	for _, ph := range p.Phases {
		r := runPhase(t, "micro", "decode", ph.Name, 2, steps, "naive")
		sameLosses(t, "decode "+ph.Name, r.losses, fixed.losses)
		if r.ledger[ledger.DeviceBuffers] == 0 {
			t.Errorf("decode %s: no device buffers in the ledger", ph.Name)
		}
	}
}
