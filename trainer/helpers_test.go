package trainer

import (
	"runtime"
	"slices"
	"sync"
	"testing"

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
	tr, err := New(o, ds)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	return tr
}

// heapAllocs is the process-wide count of heap allocations, in every
// goroutine. runtime.ReadMemStats flushes every P's cache first, so no
// allocation hides in an unflushed span, and unlike runtime.GC it does not
// empty the runtime's sudog cache (which would make the next blocking
// operations allocate and blame the trainer).
func heapAllocs() uint64 {
	runtime.ReadMemStats(&memStats)
	return memStats.Mallocs
}

var memStats runtime.MemStats
