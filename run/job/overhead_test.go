package job

import (
	"context"
	"flag"
	"io"
	"sort"
	"syscall"
	"testing"
	"time"

	"memprobe/ledger"
	"memprobe/trainer"
	"memprobe/trainer/data"
	"memprobe/trainer/model"
)

var (
	overheadPreset  = flag.String("overhead.preset", "tiny", "preset of BenchmarkInstrumentOverhead")
	overheadSteps   = flag.Int("overhead.steps", 20, "steps per run of BenchmarkInstrumentOverhead")
	overheadThreads = flag.Int("overhead.threads", 2, "threads of BenchmarkInstrumentOverhead")
	overheadData    = flag.String("overhead.data", "synthetic:2MB", "data of BenchmarkInstrumentOverhead")
	overheadSample  = flag.Duration("overhead.interval", 0, "sampler interval of the instrumented runs (0: the default 10 ms)")
)

// BenchmarkInstrumentOverhead measures what the instruments cost: each
// iteration runs the same job twice, instruments off (no ledger, no
// sampler, no runtime counters) and on (ledger, per-step runtime counters,
// the 10 ms sampler, the reconciliation), in alternating order so that
// drift on a shared machine hits both alike. It reports the median over
// iterations of tokens/s on ÷ tokens/s off ("on/off"; 1 is free, 0.98 is
// 2 % slower), the overhead in percent, the median ratio of CPU time per
// token on ÷ off ("cpu-on/off": what the instruments cost in CPU, which
// other processes on the machine disturb far less than wall time), and the
// median tokens/s of each.
// A run's tokens/s is B·T over its median step time (the first step
// included in the median, which one slow step cannot move).
//
//	go test -run '^$' -bench InstrumentOverhead -benchtime 5x ./run/job
//	go test -run '^$' -bench InstrumentOverhead -benchtime 3x ./run/job \
//	    -args -overhead.preset=seed -overhead.steps=5 -overhead.threads=63 -overhead.data=synthetic:24MB
func BenchmarkInstrumentOverhead(b *testing.B) {
	cfg, err := model.Preset(*overheadPreset)
	if err != nil {
		b.Fatal(err)
	}
	// job returns the run's tokens/s and the CPU time the process spent
	// per token over the whole job (set-up included, the same for both).
	job := func(off bool) (tps, cpuPerTok float64) {
		o := Options{
			Trainer: trainer.Options{Config: cfg, Optimizer: model.DefaultAdamW, Threads: *overheadThreads, Seed: 1, Ledger: ledger.New()},
			Data:    *overheadData, DataSeed: 1, Steps: *overheadSteps, NoInstruments: off,
			SampleInterval: *overheadSample,
		}
		c0 := cpuTime()
		r, err := Run(context.Background(), o, io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		cpu := cpuTime() - c0
		// The median step, not the mean: one step slowed by another
		// process on a shared machine moves a mean a lot.
		return float64(r.TokensPerStep) / (float64(r.StepNsMedian) / 1e9), cpu / float64(r.Steps*r.TokensPerStep)
	}
	var ratios, cpuRatios, offs, ons []float64
	for i := 0; i < b.N; i++ {
		var off, on, offCPU, onCPU float64
		if i%2 == 0 {
			off, offCPU = job(true)
			on, onCPU = job(false)
		} else {
			on, onCPU = job(false)
			off, offCPU = job(true)
		}
		offs, ons = append(offs, off), append(ons, on)
		ratios = append(ratios, on/off)
		cpuRatios = append(cpuRatios, onCPU/offCPU)
		b.Logf("pair %d: off %.0f tok/s, on %.0f tok/s, on/off %.4f; cpu per token on/off %.4f", i, off, on, on/off, onCPU/offCPU)
	}
	r := median(ratios)
	b.ReportMetric(r, "on/off")
	b.ReportMetric(100*(1-r), "overhead-%")
	b.ReportMetric(median(cpuRatios), "cpu-on/off")
	b.ReportMetric(median(offs), "tok/s-off")
	b.ReportMetric(median(ons), "tok/s-on")
	b.ReportMetric(0, "ns/op") // a run's time is not the measure here
}

// cpuTime is the user and system CPU time of the process so far, in
// seconds.
func cpuTime() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// BenchmarkStepHooks is the cost the instruments add to every step: the
// runtime/metrics reads before and after it and the /proc/self/status read
// (the peak reconciliation runs only when RSS reaches a new high, which a
// steady loop does not).
func BenchmarkStepHooks(b *testing.B) {
	o := Options{Steps: 1 << 30, Trainer: trainer.Options{Ledger: ledger.New()}}
	in, err := startInstruments(context.Background(), &o)
	if err != nil {
		b.Fatal(err)
	}
	defer in.abort()
	in.setUp(1)
	in.peakRSS = 1 << 62 // a steady loop: no new RSS high
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		in.beforeStep()
		in.afterStep(i+1, i+1)
	}
}

// BenchmarkInstrumentOverheadInterleaved measures the instruments' cost
// step against step inside one process: one trainer, its steps alternating
// between on (the sampler running at its 10 ms default, the runtime reads
// and the status read around the step) and off (the sampler paused, no
// hooks), in ABBA order so that slow drift cancels. Adjacent steps see
// nearly the same load from other processes, which two separate runs
// cannot promise on a shared machine. The ledger is on throughout: it costs
// nothing per step. It reports the ratio of median step times off ÷ on
// ("on/off" as tokens/s; 1 is free) and the overhead in percent. The
// warm-up steps are not measured.
//
//	go test -tags openblas -run '^$' -bench InstrumentOverheadInterleaved -benchtime 10x ./run/job \
//	    -args -overhead.preset=seed -overhead.threads=63 -overhead.data=synthetic:24MB
func BenchmarkInstrumentOverheadInterleaved(b *testing.B) {
	cfg, err := model.Preset(*overheadPreset)
	if err != nil {
		b.Fatal(err)
	}
	ds, err := data.Load(*overheadData, cfg.Vocab, 1)
	if err != nil {
		b.Fatal(err)
	}
	o := Options{Steps: 1 << 30, SampleInterval: *overheadSample, Trainer: trainer.Options{
		Config: cfg, Optimizer: model.DefaultAdamW, Threads: *overheadThreads, Seed: 1, Ledger: ledger.New(),
	}}
	tr, err := trainer.New(o.Trainer, ds)
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	in, err := startInstruments(context.Background(), &o)
	if err != nil {
		b.Fatal(err)
	}
	defer in.abort()
	in.setUp(0)
	for range 2 { // warm-up: first-touch page faults, lazy initialisation
		tr.Step()
	}
	var on, off []float64
	step := 0
	for i := 0; i < b.N; i++ {
		for _, instrumented := range [4]bool{i%2 == 0, i%2 != 0, i%2 != 0, i%2 == 0} {
			in.smp.SetPaused(!instrumented)
			step++
			if instrumented {
				in.beforeStep()
			}
			t0 := time.Now()
			tr.Step()
			d := float64(time.Since(t0))
			if instrumented {
				in.afterStep(step, step)
				on = append(on, d)
			} else {
				off = append(off, d)
			}
		}
	}
	r := median(off) / median(on)
	b.ReportMetric(r, "on/off")
	b.ReportMetric(100*(1-r), "overhead-%")
	b.ReportMetric(median(on)/1e6, "ms/step-on")
	b.ReportMetric(median(off)/1e6, "ms/step-off")
	b.ReportMetric(0, "ns/op")
}
