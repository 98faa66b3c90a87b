package memmodel

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"memprobe/internal/golden"
	"memprobe/ledger"
	"memprobe/report"
	"memprobe/schema"
	"memprobe/trainer"
	"memprobe/trainer/data"
	"memprobe/trainer/model"
	"memprobe/trainer/osthread"
)

// tinyInput is the tiny preset (V=788 C=64 L=2 NH=4 FF=256 T=64 B=32) on 3
// executors, 8 threads and a 1,000,000-token corpus.
func tinyInput() Input {
	tiny := schema.Model{Vocab: 788, Dim: 64, Layers: 2, Heads: 4, FF: 256, Context: 64, Batch: 32}
	return Input{Config: schema.Config{Model: tiny, Threads: 8, Executors: 3}, GOMAXPROCS: 2, DatasetTokens: 1_000_000}
}

// configOf is the part of a trainer's options the model reads, as a
// result records it.
func configOf(o trainer.Options) schema.Config {
	return schema.Config{Model: schema.Model(o.Config), Threads: o.Threads, Executors: o.Executors,
		Pathology: schema.Pathology(o.Pathology), Decode: o.Decode, Device: o.Device}
}

// TestExpectedTinyByHand checks Expected against arithmetic done by hand
// from the layouts in trainer/model (params.go, acts.go).
func TestExpectedTinyByHand(t *testing.T) {
	const V, C, L, NH, FF, T = 788, 64, 2, 4, 256, 64
	// Parameters, llm.c's 16 tensors with the LM head tied to wte:
	//   wte V·C = 50,432          wpe T·C = 4,096
	//   ln1w+ln1b 2·L·C = 256     qkvw L·3C·C = 24,576   qkvb L·3C = 384
	//   attprojw L·C·C = 8,192    attprojb L·C = 128     ln2w+ln2b 2·L·C = 256
	//   fcw L·FF·C = 32,768       fcb L·FF = 512         fcprojw L·C·FF = 32,768
	//   fcprojb L·C = 128         lnfw+lnfb 2·C = 128
	//   P = 154,624 floats = 618,496 B per copy
	const P = 50432 + 4096 + 256 + 24576 + 384 + 8192 + 128 + 256 + 32768 + 512 + 32768 + 128 + 128
	if P != 154624 {
		t.Fatalf("hand sum of P is %d", P)
	}
	// Activations of one sequence (acts.go, in order):
	//   encoded T·C 4,096; ln1 L·T·C 8,192; ln1 mean, rstd 2·L·T 256;
	//   qkv L·T·3C 24,576; atty 8,192; att L·NH·T·T 32,768; attproj 8,192;
	//   residual2 8,192; ln2 8,192; ln2 mean, rstd 256; fch L·T·FF 32,768;
	//   fch_gelu 32,768; fcproj 8,192; residual3 8,192; lnf T·C 4,096;
	//   lnf mean, rstd 2·T 128; logits T·V 50,432; probs 50,432; losses T 64
	//   = 289,984 floats = 1,159,936 B per executor
	const acts = 4096 + 8192 + 256 + 24576 + 8192 + 32768 + 8192 + 8192 + 8192 + 256 + 32768 + 32768 + 8192 + 8192 + 4096 + 128 + 50432 + 50432 + 64
	if acts != 289984 {
		t.Fatalf("hand sum of acts is %d", acts)
	}
	// Backward workspace of one sequence: dresidual, dln, datty 3·T·C
	// 12,288; dqkv T·3C 12,288; dfch, dfch_gelu 2·T·FF 32,768; datt T·T
	// 4,096; dlogits T·V 50,432; dwte V·C 50,432 = 162,304 floats = 649,216 B
	const gacts = 12288 + 12288 + 32768 + 4096 + 50432 + 50432
	if gacts != 162304 {
		t.Fatalf("hand sum of grad acts is %d", gacts)
	}
	want := map[string]int64{
		ledger.Params:          618_496,
		ledger.Grads:           618_496,
		ledger.AdamM:           618_496,
		ledger.AdamV:           618_496,
		ledger.Activations:     3 * 1_159_936, // 3,479,808
		ledger.ActivationGrads: 3 * 649_216,   // 1,947,648
		ledger.DatasetTokens:   2_000_000,     // 2 B × 1,000,000 uint16 tokens
		// one lazy batch: inputs, targets, mask as int32 (B, T): 3 × 32 × 64
		// × 4 = 24,576; plus 3 executors × two uint16 rows of T: 3 × 256
		ledger.Batches: 24_576 + 768,
		// the step's sums: B = 32 float32 losses (128 B) and ceil(P /
		// 65,536) = 3 float64 chunk sums of squared gradients (24 B)
		ledger.StepSums: 152,
	}
	got := Expected(tinyInput())
	if len(got) != len(want) {
		t.Errorf("%d components, want %d: %+v", len(got), len(want), got)
	}
	for _, c := range got {
		if w, ok := want[c.Name]; !ok || c.Bytes != w || c.PeakBytes != w {
			t.Errorf("%s = %d (peak %d), want %d (%s)", c.Name, c.Bytes, c.PeakBytes, w, c.Formula)
		}
	}
	if tot := TotalBytes(got); tot != 4*618_496+3*1_159_936+3*649_216+2_000_000+25_344+152 {
		t.Errorf("total %d", tot)
	}
}

// TestExpectedPathologiesByHand is the tiny preset with the design notes'
// defects on: 63 workers on 1 MiB pthread stacks, a context per worker in
// the sphere hierarchy, caches at twice their size, an embedding cache per
// context, every batch of the epoch materialised.
func TestExpectedPathologiesByHand(t *testing.T) {
	in := tinyInput()
	in.Config.Threads = 63
	in.Config.Pathology = schema.Pathology{
		WorkerStackBytes: 1 << 20, ContextWorkspaces: true, SphereHierarchy: true,
		CacheScale: 2, EmbeddingCache: true, EagerBatches: true,
	}
	// Attention probabilities L·NH·T·T = 2·4·64·64 = 32,768 floats move
	// from the activations to the attention cache, doubled:
	//   activations 289,984 − 32,768 = 257,216 floats = 1,028,864 B
	//   cache.attention 2 × 32,768 = 65,536 floats = 262,144 B
	//   cache.backward 2 × 162,304 = 324,608 floats = 1,298,432 B
	//   cache.embedding 2 × V·C = 2 × 50,432 = 100,864 floats = 403,456 B
	//   token rows 2 × T × 2 B = 256 B
	//   one workspace = 1,028,864 + 262,144 + 1,298,432 + 403,456 + 256
	//                 = 2,993,152 B
	// Sphere hierarchy for 63 workers: 1 + 12 + 144 = 157 contexts, 94 of
	// them unused. Eager batches: (1,000,000 − 64 − 1) = 999,935 start
	// positions, ceil(999,935 / 2,048) = 489 batches of 3 × 2,048 × 4 B.
	want := map[string]int64{
		ledger.Params: 618_496, ledger.Grads: 618_496, ledger.AdamM: 618_496, ledger.AdamV: 618_496,
		ledger.Activations:    63 * 1_028_864,      // 64,818,432
		ledger.CacheAttention: 63 * 262_144,        // 16,515,072
		ledger.CacheBackward:  63 * 1_298_432,      // 81,801,216
		ledger.CacheEmbedding: 63 * 403_456,        // 25,417,728
		ledger.Batches:        489*24_576 + 63*256, // 12,033,792
		ledger.WorkerContexts: 94 * 2_993_152,      // 281,356,288
		ledger.WorkerStacks:   63 << 20,            // 66,060,288
		ledger.StepSums:       152,                 // 4 B × B + 8 B × ceil(P / 65,536)
		ledger.DatasetTokens:  2_000_000,
	}
	got := Expected(in)
	if len(got) != len(want) {
		t.Errorf("%d components, want %d: %+v", len(got), len(want), got)
	}
	for _, c := range got {
		if w, ok := want[c.Name]; !ok || c.Bytes != w {
			t.Errorf("%s = %d, want %d (%s)", c.Name, c.Bytes, w, c.Formula)
		}
	}
}

// TestExpectedMatchesTrainer builds a real trainer (no step is run) and
// checks that the model predicts its ledger exactly: no findings.
func TestExpectedMatchesTrainer(t *testing.T) {
	sick := trainer.Pathology{ContextWorkspaces: true, SphereHierarchy: true, CacheScale: 2.5, EmbeddingCache: true, EagerBatches: true, ClearCaches: true}
	if osthread.Available() {
		sick.WorkerStackBytes = 256 << 10
	}
	for _, tc := range []struct {
		preset         string
		threads, execs int
		path           trainer.Pathology
		decode         string
	}{
		{"tiny", 4, 2, trainer.Pathology{}, ""},
		{"micro", 3, 0, trainer.Pathology{}, ""},
		{"tiny", 1, 0, trainer.Pathology{}, ""},
		{"tiny", 4, 0, sick, ""},
		{"micro", 2, 0, trainer.Pathology{CacheScale: 3, ContextWorkspaces: true}, ""},
		{"tiny", 2, 0, trainer.Pathology{}, "batch"},
		{"tiny", 2, 0, trainer.Pathology{}, "per-token-copy"},
		{"tiny", 2, 0, trainer.Pathology{}, "per-token-view"},
		{"tiny", 3, 0, trainer.Pathology{}, "per-token-prealloc"},
	} {
		cfg := model.Presets[tc.preset]
		ds, err := data.Load("synthetic:100KB", cfg.Vocab, 1)
		if err != nil {
			t.Fatal(err)
		}
		l := ledger.New()
		ledger.Record(l.Account(ledger.DatasetTokens), ds.Tokens)
		opts := trainer.Options{Config: cfg, Optimizer: model.DefaultAdamW, Threads: tc.threads, Executors: tc.execs, Seed: 1, GEMM: "naive", Ledger: l,
			Pathology: tc.path, Decode: tc.decode}
		tr, err := trainer.New(opts, ds)
		if err != nil {
			t.Fatal(err)
		}
		in := Input{Config: configOf(opts), GOMAXPROCS: runtime.GOMAXPROCS(0), DatasetTokens: len(ds.Tokens)}
		rows := Compare(Expected(in), l.Snapshot())
		if r, ok := CheckExecutors(in, tr.NumExecutors()); ok {
			rows = append(rows, r)
		}
		tr.Close()
		if f := Findings(rows); len(f) != 0 {
			var b bytes.Buffer
			report.WriteLedger(&b, rows)
			t.Errorf("%s threads %d %+v %s: findings:\n%s", tc.preset, tc.threads, tc.path, tc.decode, b.String())
		}
	}
}

func TestCompare(t *testing.T) {
	exp := []Component{
		{Name: "a", Bytes: 1000, PeakBytes: 1000, Formula: "fa"},
		{Name: "b", Bytes: 1000, PeakBytes: 1000, Formula: "fb"},
		{Name: "c", Bytes: 1000, PeakBytes: 2000, Formula: "fc"},
		{Name: "missing", Bytes: 5, PeakBytes: 5, Formula: "fm"},
	}
	meas := []ledger.Entry{
		{Component: "zz.extra", CurrentBytes: 7, PeakBytes: 9, Allocs: 3, Frees: 1},
		{Component: "a", CurrentBytes: 1010, PeakBytes: 1010, Allocs: 1}, // +1.0 %: within
		{Component: "b", CurrentBytes: 1011, PeakBytes: 1011, Allocs: 1}, // +1.1 %: finding
		{Component: "c", CurrentBytes: 1000, PeakBytes: 1000, Allocs: 2, Frees: 1},
		{Component: "empty"}, // registered, never used: not a finding
	}
	rows := Compare(exp, meas)
	names := []string{}
	for _, r := range rows {
		names = append(names, r.Component)
	}
	if got := strings.Join(names, ","); got != "a,b,c,missing,empty,zz.extra" {
		t.Errorf("row order %s", got)
	}
	finding := map[string]bool{}
	for _, r := range rows {
		finding[r.Component] = r.Finding
	}
	want := map[string]bool{"a": false, "b": true, "c": true, "missing": true, "empty": false, "zz.extra": true}
	for k, v := range want {
		if finding[k] != v {
			t.Errorf("%s: finding %v, want %v", k, finding[k], v)
		}
	}
	if d := rows[1].DiffPct; d == nil || *d != 1.1 {
		t.Errorf("b diff %v, want 1.1", d)
	}
	if rows[5].DiffPct != nil || rows[5].Allocs != 3 {
		t.Errorf("extra row %+v", rows[5])
	}
	if e, m, p := schema.LedgerTotals(rows); e != 3005 || m != 3028 || p != 3030 {
		t.Errorf("totals %d %d %d", e, m, p)
	}
	if len(Findings(rows)) != 4 {
		t.Errorf("%d findings, want 4", len(Findings(rows)))
	}
	if Compare(nil, nil) == nil {
		t.Error("Compare(nil, nil) is nil")
	}
}

// TestGolden compares the tiny preset's rows with a ledger that matches,
// plus two deliberate disagreements; report's TestLedgerGolden renders
// this golden's rows as a table.
func TestGolden(t *testing.T) {
	exp := Expected(tinyInput())
	var meas []ledger.Entry
	for _, c := range exp {
		e := ledger.Entry{Component: c.Name, CurrentBytes: c.Bytes, PeakBytes: c.PeakBytes, Allocs: 1}
		if c.Name == ledger.Activations {
			e.Allocs = 3
		}
		meas = append(meas, e)
	}
	meas[1].CurrentBytes += meas[1].CurrentBytes / 20 // grads +5 %
	meas = append(meas, ledger.Entry{Component: ledger.Tape, CurrentBytes: 0, PeakBytes: 524288, Allocs: 10, Frees: 10})
	rows := Compare(exp, meas)
	js, err := json.MarshalIndent(rows, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "json_tiny.golden", append(js, '\n'))
}
