package trainer_test

import (
	"bytes"
	"runtime"
	"testing"

	"memprobe/probe/ledger"
	"memprobe/probe/memmodel"
	"memprobe/schema"
	"memprobe/trainer"
	"memprobe/trainer/data"
	"memprobe/trainer/model"
)

// ledgerTrainer builds a tiny trainer whose ledger also records the
// dataset, as a job does.
func ledgerTrainer(t *testing.T, threads int, path trainer.Pathology) (*trainer.Trainer, trainer.Options, *data.Dataset, *ledger.Ledger) {
	t.Helper()
	cfg := model.Presets["tiny"]
	ds, err := data.Load("synthetic:100KB", cfg.Vocab, 1)
	if err != nil {
		t.Fatal(err)
	}
	l := ledger.New()
	ledger.Record(l.Account(ledger.DatasetTokens), ds.Tokens)
	o := trainer.Options{Config: cfg, Optimizer: model.DefaultAdamW, Threads: threads, Seed: 1, GEMM: "naive", Ledger: l, Pathology: path}
	tr, err := trainer.New(o, ds)
	if err != nil {
		t.Fatal(err)
	}
	return tr, o, ds, l
}

func findings(o trainer.Options, tr *trainer.Trainer, ds *data.Dataset, l *ledger.Ledger) ([]memmodel.Row, string) {
	cfg := schema.Config{Model: schema.Model(o.Config), Threads: o.Threads, Executors: o.Executors,
		Pathology: schema.Pathology(o.Pathology), Decode: o.Decode}
	rows := memmodel.Compare(memmodel.Expected(memmodel.Input{Config: cfg, Executors: tr.NumExecutors(), DatasetTokens: len(ds.Tokens)}), l.Snapshot())
	var b bytes.Buffer
	memmodel.Render(&b, rows)
	return memmodel.Findings(rows), b.String()
}

// TestLedgerCatchesPlantedDefects: the ledger records the buffers actually
// made, so a buffer made too large, made twice, or made every step and
// never dropped differs from the model's prediction, and the finding names
// the component. Without the defects the same run has no finding.
func TestLedgerCatchesPlantedDefects(t *testing.T) {
	tr, o, ds, l := ledgerTrainer(t, 3, trainer.Pathology{})
	tr.Step()
	tr.Step()
	f, table := findings(o, tr, ds, l)
	tr.Close()
	if len(f) != 0 {
		t.Fatalf("findings without planted defects:\n%s", table)
	}

	undo := trainer.PlantDefects(1<<16, true, true)
	defer undo()
	tr, o, ds, l = ledgerTrainer(t, 3, trainer.Pathology{})
	defer tr.Close()
	for i := 0; i < 3; i++ {
		tr.Step()
	}
	f, table = findings(o, tr, ds, l)
	t.Logf("with planted defects:\n%s", table)
	got := map[string]memmodel.Row{}
	for _, r := range f {
		got[r.Component] = r
	}
	cfg := o.Config
	execs := int64(tr.NumExecutors())
	for _, c := range []struct {
		name  string
		extra int64
	}{
		{ledger.Activations, execs * 4 << 16},                      // oversized
		{ledger.Grads, 4 * int64(cfg.NumParams())},                 // duplicated
		{ledger.Batches, 3 * 4 * 3 * int64(cfg.Batch*cfg.Context)}, // leaked, one per step
	} {
		r, ok := got[c.name]
		if !ok {
			t.Errorf("planted defect in %s is not a finding", c.name)
			continue
		}
		if r.MeasuredBytes-r.ExpectedBytes != c.extra {
			t.Errorf("%s: measured %d B, expected %d B: off by %d B, want the planted %d B", c.name, r.MeasuredBytes, r.ExpectedBytes, r.MeasuredBytes-r.ExpectedBytes, c.extra)
		}
	}
	if len(f) != 3 {
		t.Errorf("%d findings, want the 3 planted ones", len(f))
	}
}

// TestLedgerEmptyAfterClose: every buffer the trainer made is dropped when
// it closes, in every configuration that changes what it makes: nothing
// but the dataset (the job's) is left in the ledger.
func TestLedgerEmptyAfterClose(t *testing.T) {
	sick := trainer.Pathology{ContextWorkspaces: true, SphereHierarchy: true, CacheScale: 2.5, EmbeddingCache: true, EagerBatches: true, ClearCaches: true}
	for _, path := range []trainer.Pathology{{}, sick} {
		tr, _, _, l := ledgerTrainer(t, 4, path)
		tr.Step()
		tr.Close()
		for _, e := range l.Snapshot() {
			if e.Component != ledger.DatasetTokens && e.CurrentBytes != 0 {
				t.Errorf("%+v: %s holds %d B after Close, want 0", path, e.Component, e.CurrentBytes)
			}
			if e.Component != ledger.DatasetTokens && e.Allocs > 0 && e.PeakBytes == 0 {
				t.Errorf("%+v: %s recorded %d allocations but no bytes", path, e.Component, e.Allocs)
			}
		}
	}
}

// TestMemoryFlatInThreads: workspaces belong to executors, not workers, and
// by default there are min(threads, GOMAXPROCS, B) of them, so at any
// GOMAXPROCS the 63 workers of the notes hold what GOMAXPROCS workers hold:
// the ledger's activation bytes (measured: the slices made) are the same,
// and they are GOMAXPROCS workspaces' worth.
func TestMemoryFlatInThreads(t *testing.T) {
	prev := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(prev)
	for _, procs := range []int{1, 2, 5} {
		runtime.GOMAXPROCS(procs)
		held := map[int]int64{}
		for _, threads := range []int{procs, 63} {
			tr, _, _, l := ledgerTrainer(t, threads, trainer.Pathology{})
			if n := tr.NumExecutors(); n != procs {
				t.Errorf("GOMAXPROCS %d, %d threads: %d executors, want %d", procs, threads, n, procs)
			}
			for _, e := range l.Snapshot() {
				if e.Component == ledger.Activations || e.Component == ledger.ActivationGrads {
					held[threads] += e.CurrentBytes
				}
			}
			tr.Close()
		}
		cfg := model.Presets["tiny"]
		want := int64(procs) * 4 * int64(cfg.ActsSize()+cfg.GradActsSize())
		if held[procs] != held[63] || held[63] != want {
			t.Errorf("GOMAXPROCS %d: workspace bytes %d at %d threads, %d at 63; want %d both", procs, held[procs], procs, held[63], want)
		}
	}
}
