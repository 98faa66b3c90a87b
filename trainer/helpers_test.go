package trainer

import (
	"slices"
	"sync"
	"testing"

	"memprobe/instrument/allocsite"
	"memprobe/trainer/data"
	"memprobe/trainer/gemm"
	"memprobe/trainer/model"
)

var (
	corpusOnce sync.Once
	corpus     *data.Dataset
)

// testCorpus is the 1 MB synthetic corpus every trainer test shares.
func testCorpus(t testing.TB) *data.Dataset {
	corpusOnce.Do(func() {
		ds, err := data.Load("synthetic:1MB", 788, 1)
		if err != nil {
			panic(err)
		}
		corpus = ds
	})
	return corpus
}

// fastGEMM is the fastest backend that allocates nothing per call: the
// default (avx2 over openblas) where openblas is compiled in, else the naive
// loop (gonum, which avx2 falls back on without openblas, starts goroutines,
// which allocate).
func fastGEMM() string {
	if slices.Contains(gemm.Names(), "openblas") {
		return "auto"
	}
	return "naive"
}

func testOptions(preset string, threads int) Options {
	cfg := model.Presets[preset]
	return Options{Config: cfg, Optimizer: model.AdamW{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}, Threads: threads, Seed: 1337, GEMM: fastGEMM()}
}

func newTestTrainer(t testing.TB, o Options, ds *data.Dataset) *Trainer {
	t.Helper()
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	tr, err := New(o, ds)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	return tr
}

// allocWindow runs steps steps of tr inside an allocsite window and returns
// what they allocated, by site: the same instrument the probe's headline
// go_heap_allocs_per_step comes from. The window records every
// allocation (MemProfileRate 1) and tells the trainer's own allocations
// (Program) from the Go runtime's (sudogs when a worker blocks and the
// cache is empty, an m when the scheduler starts a thread), which no change
// to the trainer removes.
func allocWindow(t testing.TB, steps int, step func()) allocsite.Report {
	t.Helper()
	w := allocsite.Begin(allocsite.Options{OwnPrefixes: []string{"memprobe/probe/"}})
	for i := 0; i < steps; i++ {
		step()
	}
	rep := w.End(steps)
	for _, s := range rep.Sites {
		t.Logf("%s %d objects %d B at %s (%s:%d) from %s", s.Class, s.Objects, s.Bytes, s.Function, s.File, s.Line, s.CalledFrom)
	}
	return rep
}
