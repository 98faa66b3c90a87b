package trainer_test

import (
	"fmt"
	"runtime/metrics"
	"syscall"
	"testing"
	"time"

	"memprobe/ledger"
	"memprobe/run/job"
	"memprobe/trainer"
	"memprobe/trainer/data"
	"memprobe/trainer/gemm"
	"memprobe/trainer/model"
)

// BenchmarkStep times trainer.Step, one optimizer step over B sequences, on
// a synthetic corpus, for the seed and tiny presets at 1, 2 and 63 logical
// workers (executors are capped at GOMAXPROCS), with the default GEMM
// backend and, when it is another one, with openblas. It reports:
//
//	tokens/s      B*T tokens per step over the time per step
//	GFLOPS        the matrix-product FLOPs of a step (job.FLOPsPerStep,
//	              attention counted over the full T×T square) per second
//	allocs/step   heap objects allocated during Step by every goroutine,
//	              from /gc/heap/allocs:objects (testing's allocs/op counts
//	              only the benchmark goroutine, and the workers are others)
//	cpu-ms/step   the process's user+system CPU time per step (getrusage):
//	              the work of a step, which, unlike tokens/s, does not
//	              grow when other processes take the cores away
//
// Two warm-up steps run before the timer starts, so the figures are steady
// state. Run with -tags openblas for the fast backend, e.g.
//
//	go test -tags openblas -run X -bench Step/seed -cpuprofile cpu.out ./trainer/
//
// The machine may be shared: compare cpu-ms/step, and repeat (-count).
func BenchmarkStep(b *testing.B) {
	backends := []string{gemm.DefaultName()}
	if _, err := gemm.Get("openblas"); err == nil && backends[0] != "openblas" {
		backends = append(backends, "openblas")
	}
	for _, preset := range []string{"seed", "tiny"} {
		for _, threads := range []int{1, 2, 63} {
			for _, be := range backends {
				b.Run(fmt.Sprintf("%s/threads=%d/gemm=%s", preset, threads, be), func(b *testing.B) {
					benchStep(b, preset, threads, be)
				})
			}
		}
	}
}

func benchStep(b *testing.B, preset string, threads int, backend string) {
	cfg, err := model.Preset(preset)
	if err != nil {
		b.Fatal(err)
	}
	ds, err := data.Load("synthetic:2MB", cfg.Vocab, 1)
	if err != nil {
		b.Fatal(err)
	}
	tr, err := trainer.New(trainer.Options{
		Config: cfg, Optimizer: model.DefaultAdamW, Threads: threads, Seed: 1337, GEMM: backend, Ledger: ledger.New(),
	}, ds)
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	for range 2 {
		tr.Step()
	}
	// The allocation count is read around each Step call: the testing
	// framework's own allocations inside the timed loop are not the
	// trainer's. Reading it allocates nothing.
	s := []metrics.Sample{{Name: "/gc/heap/allocs:objects"}}
	var allocs uint64
	cpu0 := cpuTime()
	steps := 0
	for b.Loop() {
		metrics.Read(s)
		a0 := s[0].Value.Uint64()
		tr.Step()
		metrics.Read(s)
		allocs += s[0].Value.Uint64() - a0
		steps++
	}
	cpu := cpuTime() - cpu0
	sec := b.Elapsed().Seconds()
	b.ReportMetric(cpu.Seconds()*1e3/float64(steps), "cpu-ms/step")
	b.ReportMetric(float64(steps*cfg.Batch*cfg.Context)/sec, "tokens/s")
	b.ReportMetric(job.FLOPsPerStep(cfg)*float64(steps)/sec/1e9, "GFLOPS")
	b.ReportMetric(float64(allocs)/float64(steps), "allocs/step")
}

// cpuTime is the user plus system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
