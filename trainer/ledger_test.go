package trainer_test

import (
	"bytes"
	"runtime"
	"runtime/metrics"
	"testing"

	"memprobe/instrument/memmodel"
	"memprobe/instrument/procfs"
	"memprobe/ledger"
	"memprobe/report"
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

// findings are the job's checks of tr against the model (job.Run): the
// ledger against the model's prediction from the configuration and
// GOMAXPROCS, the executor count the trainer made against the model's, and
// the live Go heap after a GC against the ledger's Go-heap accounts.
func findings(t *testing.T, o trainer.Options, tr *trainer.Trainer, ds *data.Dataset, l *ledger.Ledger) ([]memmodel.Row, string) {
	t.Helper()
	cfg := schema.Config{Model: schema.Model(o.Config), Threads: o.Threads, Executors: o.Executors,
		Pathology: schema.Pathology(o.Pathology), Decode: o.Decode, Device: o.Device}
	in := memmodel.Input{Config: cfg, GOMAXPROCS: runtime.GOMAXPROCS(0), DatasetTokens: len(ds.Tokens)}
	rows := memmodel.Compare(memmodel.Expected(in), l.Snapshot())
	if r, ok := memmodel.CheckExecutors(in, tr.NumExecutors()); ok {
		rows = append(rows, r)
	}
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	st, err := procfs.ReadStatus(procfs.Self)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := memmodel.UnaccountedHeap(int64(s[0].Value.Uint64()), memmodel.GoHeapBytes(l.Snapshot(), o.Device), int64(st.VmRSSBytes)); ok {
		rows = append(rows, r)
	}
	var b bytes.Buffer
	report.WriteLedger(&b, rows)
	return memmodel.Findings(rows), b.String()
}

// TestLedgerCatchesPlantedDefects: the ledger records the buffers actually
// made, so a buffer made too large, made twice, or made every step and
// never dropped differs from the model's prediction, and the finding names
// the component. Without the defects the same run has no finding, the
// executor and Go-heap checks included. Defects that bypass the ledger
// are TestPlantedExecutorCount's and TestPlantedUnledgeredBuffer's.
func TestLedgerCatchesPlantedDefects(t *testing.T) {
	tr, o, ds, l := ledgerTrainer(t, 3, trainer.Pathology{})
	tr.Step()
	tr.Step()
	f, table := findings(t, o, tr, ds, l)
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
	f, table = findings(t, o, tr, ds, l)
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

// TestPlantedExecutorCount: a trainer that makes one executor more than its
// configuration asks for (numExecutors off by one) is a finding. The model
// computes the count from the configuration and GOMAXPROCS, not from the
// trainer, so it predicts the asked-for count: the executor row names both
// counts, and the workspaces' rows hold one workspace more than predicted.
func TestPlantedExecutorCount(t *testing.T) {
	undo := trainer.PlantExecutors(1)
	defer undo()
	tr, o, ds, l := ledgerTrainer(t, 3, trainer.Pathology{})
	defer tr.Close()
	tr.Step()
	f, table := findings(t, o, tr, ds, l)
	t.Logf("with one executor too many:\n%s", table)
	want := max(1, min(3, runtime.GOMAXPROCS(0), o.Config.Batch)) // the trainer's documented default
	if n := tr.NumExecutors(); n != want+1 {
		t.Fatalf("planted trainer made %d executors, want %d + 1", n, want)
	}
	got := map[string]memmodel.Row{}
	for _, r := range f {
		got[r.Component] = r
	}
	if _, ok := got[memmodel.ExecutorsComponent]; !ok {
		t.Errorf("an executor count of %d where the configuration gives %d is not a finding", want+1, want)
	}
	cfg := o.Config
	r, ok := got[ledger.Activations]
	if extra := r.MeasuredBytes - r.ExpectedBytes; !ok || extra != 4*int64(cfg.ActsSize()) {
		t.Errorf("activations: measured − expected = %d B, want one workspace's %d B", extra, 4*cfg.ActsSize())
	}
}

// TestPlantedUnledgeredBuffer: a 64 MiB buffer New makes with a plain make,
// not through the ledger, is in no account; it is a finding of its own,
// the live Go heap after a GC against the ledger's Go-heap accounts, naming
// at least its bytes. Without the plant the same check has no finding
// (TestLedgerCatchesPlantedDefects).
func TestPlantedUnledgeredBuffer(t *testing.T) {
	const planted = 64 << 20
	undo := trainer.PlantUnledgered(planted)
	defer undo()
	tr, o, ds, l := ledgerTrainer(t, 3, trainer.Pathology{})
	defer tr.Close()
	tr.Step()
	f, table := findings(t, o, tr, ds, l)
	t.Logf("with a plain 64 MiB make:\n%s", table)
	var r *memmodel.Row
	for i := range f {
		if f[i].Component == memmodel.UnaccountedComponent {
			r = &f[i]
		}
	}
	if r == nil {
		t.Fatalf("a %d B buffer outside the ledger is not a finding (%d findings)", planted, len(f))
	}
	// The live heap holds the plant and the process's other small objects
	// (under the threshold on their own, as the unplanted run shows).
	if r.MeasuredBytes < planted || r.MeasuredBytes > planted+memmodel.UnaccountedMinBytes {
		t.Errorf("%s = %d B, want the planted %d B and less than %d B more", r.Component, r.MeasuredBytes, planted, memmodel.UnaccountedMinBytes)
	}
	if len(f) != 1 {
		t.Errorf("%d findings, want only the unledgered buffer", len(f))
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
