// Package job runs one training job in-process and measures it: the unit the
// probe repeats in fresh child processes. It builds the dataset and the
// trainer from Options, trains, optionally checkpoints and samples, and
// returns a [schema.Result] whose JSON is what `probe train` prints and what
// a parent process reads back: with the configuration that produced it
// (OptionsFromConfig runs it again) and the environment it ran in.
//
// Unless Options.NoInstruments is set, the job also runs the instruments
// (docs/instruments.md): the trainer's ledger set against the analytical
// model ([memprobe/instrument/memmodel]), the Go runtime's counters read around
// every step ([memprobe/instrument/rtstats]), the sampler watching RSS during
// the whole job ([memprobe/instrument/sampler]), and the resident set explained
// at its peak and at the end ([memprobe/instrument/reconcile]). Profiles
// ([memprobe/instrument/profiling]) are separate: on only when asked for.
package job

import (
	"context"
	"fmt"
	"io"
	"math"
	"runtime/metrics"
	"time"

	"memprobe/instrument/memmodel"
	"memprobe/instrument/profiling"
	"memprobe/instrument/sampler"
	"memprobe/internal/atomicfile"
	"memprobe/internal/table"
	"memprobe/ledger"
	"memprobe/schema"
	"memprobe/stats"
	"memprobe/trainer"
	"memprobe/trainer/data"
	"memprobe/trainer/model"
)

// DefaultWarmupSteps is the warm-up the command uses unless told: the first
// step faults in every buffer and fills the runtime's caches.
const DefaultWarmupSteps = 1

// Options is one job: what to train, on what, for how long.
type Options struct {
	Trainer    trainer.Options
	Data       string // "synthetic:SIZE" or a text file
	DataSeed   uint64 // seed of the synthetic generator
	Steps      int
	Checkpoint string // write a checkpoint here at the end ("" for none)
	Resume     string // start from this checkpoint ("" for none)
	Generate   int    // tokens to generate after training (--generate)
	LogEvery   int    // progress line every N steps (0: about 20 lines per run)

	// NoInstruments turns the instruments off: no ledger (Trainer.Ledger
	// is set to nil), no sampler, no per-step runtime counters, no
	// reconciliation. It is the baseline of the overhead measurement.
	// With instruments on and Trainer.Ledger nil, Run makes a ledger.
	NoInstruments bool
	// SampleInterval is the sampler's period: 0 means 10 ms, below 1 ms
	// is an error.
	SampleInterval time.Duration
	// SampleMaxPoints bounds the sampler's timeline; 0 means 512.
	SampleMaxPoints int
	// WarmupSteps are left out of the steady-state per-step costs in
	// schema.Result.Runtime (0: none; the command's default is
	// DefaultWarmupSteps).
	WarmupSteps int
	// Label names this job in profile files; "" is "<plan>-<phase>" for a
	// phase run, else "default".
	Label string
	// Preset, Plan and Phase name where Trainer's settings came from
	// (--preset, --plan, --phase); they are recorded in the result's
	// configuration, Trainer's fields are what runs.
	Preset, Plan, Phase string
	// CommandLine is recorded in the result (os.Args of `probe train`).
	CommandLine []string
	// Profiling says which pprof profiles to write and whether to serve
	// net/http/pprof; its Name defaults to Label.
	Profiling profiling.Options
	// AfterStep, when set, is called after every step with the step's
	// number, in the training loop, after the instruments and the
	// progress line. It exists for tests (the command's crash hook).
	AfterStep func(step int)

	// MemLimit, when positive, bounds the job's memory (--mem-limit):
	// a configuration predicted above it is refused before anything is
	// built (*MemoryError); the Go memory limit is set to 90 % of it
	// for the job's duration; and a watchdog reads VmRSS every
	// WatchEvery and, once it passes MemLimit, stops the training at
	// the next step boundary (a partial result, *StoppedError with a
	// *MemLimitError cause). Whatever the limit, a configuration
	// predicted above the memory available (MemAvailable) is refused.
	MemLimit int64
	// MemHardStop, when set, is called by the watchdog if VmRSS passes
	// MemLimit by HardMargin before the job has stopped (inside a step,
	// or while the trainer is built): the command prints the error and
	// exits. Without it the watchdog only stops the training.
	MemHardStop func(err *MemLimitError)
}

// Validate reports the first option out of range.
func (o *Options) Validate() error {
	if o.Steps < 1 || o.Steps > 1e9 {
		return fmt.Errorf("steps %d out of range [1, 1e9]", o.Steps)
	}
	if o.Generate < 0 || o.Generate > 1<<20 {
		return fmt.Errorf("generate %d out of range [0, %d]", o.Generate, 1<<20)
	}
	if o.LogEvery < 0 {
		return fmt.Errorf("log-every %d must be >= 0", o.LogEvery)
	}
	if o.SampleInterval < 0 || o.SampleInterval > 0 && o.SampleInterval < sampler.MinInterval {
		return fmt.Errorf("sample-interval %v is below the minimum %v", o.SampleInterval, sampler.MinInterval)
	}
	if o.SampleMaxPoints != 0 && o.SampleMaxPoints < 2 {
		return fmt.Errorf("sample-max-points %d must be 0 (default) or >= 2", o.SampleMaxPoints)
	}
	if o.WarmupSteps < 0 {
		return fmt.Errorf("warmup-steps %d must be >= 0", o.WarmupSteps)
	}
	if err := o.Profiling.Validate(); err != nil {
		return err
	}
	if err := data.CheckSpec(o.Data, o.Trainer.Config.Vocab); err != nil {
		return err
	}
	if o.MemLimit < 0 {
		return fmt.Errorf("mem-limit %d must be positive", o.MemLimit)
	}
	if err := o.Trainer.Validate(); err != nil {
		return err
	}
	return o.checkFiles()
}

// Outputs are the files the job writes, with the flags of `probe train`
// that name them: the checkpoint and the profiles.
func (o *Options) Outputs() []atomicfile.Path {
	out := []atomicfile.Path{{Flag: "--checkpoint", Path: o.Checkpoint}}
	return append(out, o.profiling().Outputs()...)
}

// Inputs are the files the job reads: the checkpoint it resumes from and
// the data file (none for a synthetic corpus).
func (o *Options) Inputs() []atomicfile.Path {
	return []atomicfile.Path{{Flag: "--resume", Path: o.Resume}, {Flag: "--data", Path: data.SpecFile(o.Data)}}
}

// checkFiles fails, before any work, when an output would replace an
// input or another output (atomicfile.CheckDistinct), or could not be
// written: the checkpoint's and the profiles' directories must be there
// and writable (a profile directory may be missing if it can be made).
func (o *Options) checkFiles() error {
	if err := atomicfile.CheckDistinct(o.Outputs(), o.Inputs()); err != nil {
		return err
	}
	if o.Checkpoint != "" {
		if err := atomicfile.CheckWritable(o.Checkpoint); err != nil {
			return fmt.Errorf("--checkpoint %w", err)
		}
	}
	return o.profiling().CheckOutputs()
}

// label is the job's name in profile files: Label, or "<plan>-<phase>"
// for a phase run ("" is "default").
func (o *Options) label() string {
	if o.Label == "" && o.Plan != "" {
		return o.Plan + "-" + o.Phase
	}
	return o.Label
}

// profiling is the Profiling options the job runs, the file names'
// label resolved.
func (o *Options) profiling() profiling.Options {
	p := o.Profiling
	if p.Name == "" {
		p.Name = o.label()
	}
	return p
}

// Floor is the analytical memory floor of a configuration: parameters,
// gradients and two Adam moments, one sequence's activations and backward
// workspace per executor, and the token array. Nothing smaller can train
// this model this way; the measured peak RSS is compared against it.
// executors is the configuration's (PredictedExecutors), not the count a
// trainer made: a trainer that makes one too many is a finding of the
// model's, not a higher floor.
func Floor(cfg model.Config, executors int, datasetTokens int) (floor, perExecutor int64) {
	perExecutor = 4 * int64(cfg.ActsSize()+cfg.GradActsSize())
	floor = 4*4*int64(cfg.NumParams()) + int64(executors)*perExecutor + 2*int64(datasetTokens)
	return floor, perExecutor
}

// FLOPsPerStep counts the multiply-adds of one step's matrix products (×2
// for FLOPs, ×3 for forward plus the two backward products), the figure the
// GFLOPS ceiling is compared against. Attention is counted over the full
// T×T square the kernels compute.
func FLOPsPerStep(c model.Config) float64 {
	B, T, C, L, FF, V := float64(c.Batch), float64(c.Context), float64(c.Dim), float64(c.Layers), float64(c.FF), float64(c.Vocab)
	perTok := L*(3*C*C+C*C+2*C*FF) + C*V
	attn := L * 2 * T * T * C // QK^T and att·V per sequence
	return 2 * 3 * B * (T*perTok + attn)
}

// OptionsError is Run's error for options that fail Validate: a usage
// error, reported before anything is built.
type OptionsError struct{ Err error }

func (e *OptionsError) Error() string { return e.Err.Error() }
func (e *OptionsError) Unwrap() error { return e.Err }

// Run executes the job. Progress lines go to progress (may be io.Discard).
//
// When ctx ends (Ctrl-C in the command) or the memory watchdog stops the
// job (Options.MemLimit), the training stops at the next step boundary;
// if a step had finished, Run returns the result of the steps that ran,
// marked Interrupted, with a *StoppedError; else a nil result and the
// error. A configuration predicted not to fit in memory is refused
// before anything is built (*MemoryError).
//
// The stages run in this order, each on what the one before set up (see
// stages.go): prepare (the options, a checkpoint's shape, the ledger),
// instrument (profiles and the sampler, before anything is built so that
// set-up allocations are in them), build (the data and the trainer),
// train (the steps and their log), measure (the result's figures, the
// ledger against the model, the reconciliations) and assemble (what is
// written or read after the figures: checkpoint, samples, profiles,
// warnings, the heap outside the ledger).
func Run(ctx context.Context, o Options, progress io.Writer) (r *schema.Result, err error) {
	// The one validation of the run's configuration: the command and the
	// trainer below trust it.
	if err := o.Validate(); err != nil {
		return nil, &OptionsError{Err: err}
	}
	if err := checkMemory(&o); err != nil {
		return nil, err
	}
	j := &jobRun{o: o, progress: progress, start: time.Now()}
	ctx, stopWatch := j.watch(ctx)
	defer stopWatch()
	// A job that fails discards its profiles (leaving the files named as
	// they were) and stops its sampler; an interrupted one has written
	// both by then, and these do nothing.
	defer func() {
		if err != nil {
			j.inst.abort()
			j.prof.Discard()
		}
	}()
	if err := j.prepare(); err != nil {
		return nil, err
	}
	if err := j.instrument(ctx); err != nil {
		return nil, err
	}
	if err := j.build(); err != nil {
		return nil, err
	}
	defer j.tr.Close()
	if err := j.train(ctx); err != nil {
		return nil, err
	}
	r = j.measure()
	if err := j.assemble(r); err != nil {
		return nil, err
	}
	if j.stopped != nil {
		return r, j.stopped
	}
	return r, nil
}

// unaccountedHeap adds memmodel.UnaccountedHeap's finding to r's ledger
// rows when the live Go heap holds more than the ledger's Go-heap accounts
// by more than the threshold, and says the figure on progress either way.
// It runs after every figure is taken and the job's GC (debug.FreeOSMemory
// in Run): the heap then holds live objects only, so the tape engine's and
// the steps' garbage, which the next GC would free, is not counted as a
// buffer the ledger missed; what it does count beside the trainer's own
// small objects is the result and the instruments' records (1 to 3 MiB at
// tiny and seed). The trainer is still open, its buffers live and in the
// ledger. RSS is the final VmRSS the result records. probeHeap, the
// probe's own heap measured at job start (the probe.heap part), is the
// tool's and not the trainer's, and is taken out first.
func unaccountedHeap(r *schema.Result, led *ledger.Ledger, device string, probeHeap int64, progress io.Writer) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	live := int64(s[0].Value.Uint64())
	heap := live - probeHeap
	inLedger := memmodel.GoHeapBytes(led.Snapshot(), device)
	rss := int64(r.FinalRSSBytes)
	outside := fmt.Sprintf("%s of %s live", mib(heap-inLedger), mib(live))
	if heap < inLedger {
		// The probe's heap at job start held set-up objects freed since:
		// the two together can exceed the live heap, never a negative.
		outside = fmt.Sprintf("0 MiB of %s live (the ledger and the probe's own at job start exceed it by %s)", mib(live), mib(inLedger-heap))
	}
	fmt.Fprintf(progress, "go heap outside the ledger: %s, less the probe's own %s (finding above %s)\n",
		outside, mib(probeHeap), mib(memmodel.UnaccountedThreshold(rss)))
	if row, ok := memmodel.UnaccountedHeap(heap, inLedger, rss); ok {
		r.Ledger = append(r.Ledger, row)
		r.LedgerFindings++
	}
}

// perturbations says which of r's figures the profiles asked for in p
// changed, and by what, so that a reader does not take a profiled run's
// figures for an unprofiled one's.
func perturbations(r *schema.Result, p profiling.Options) []string {
	w := []string{}
	if s := r.AllocsBySite; s != nil && !s.Exact {
		w = append(w, fmt.Sprintf("go_heap_allocs_per_step %.1f counts every heap allocation (runtime/metrics, the Go runtime's own objects included), not the program's by site: "+
			"the heap profile owns runtime.MemProfileRate (%d B per sample), so allocs_by_site is sampled (program about %.1f objects/step)",
			r.HeapAllocsPerStep, s.MemProfileRate, s.ProgramObjectsPerStep()))
	}
	if rt := r.Runtime; rt != nil && rt.Steady.GCCycles > 0 && (p.Heap != "" || p.Dir != "") && p.PeakMax > 0 {
		w = append(w, fmt.Sprintf("%d GC cycles ran during the measured steps; heap-peak profiles force a GC each (up to %d), and a GC empties the runtime's caches, so the next steps allocate runtime objects again",
			rt.Steady.GCCycles, p.PeakMax))
	}
	if p.MemProfileRate == 1 {
		w = append(w, "--memprofile-rate 1 records the stack of every allocation: step times and tokens_per_sec include that cost")
	}
	if p.Mutex != "" || p.Block != "" || p.Dir != "" {
		w = append(w, "mutex and block profiling record every contention and blocking event: step times and tokens_per_sec include that cost")
	}
	if p.CPU != "" || p.Dir != "" {
		w = append(w, "CPU profiling interrupts the process 100 times a second: tokens_per_sec includes its signal handler (about 1 %)")
	}
	return w
}

// allocCrossCheck compares the sites' program bytes per step with
// runtime/metrics' steady bytes per step, two counts of the same steps by
// independent means (the heap profile's stacks against the allocator's
// counters). Where they disagree by more than 2x the headline is not to be
// trusted: allocations classed as the probe's or the runtime's that the
// step made, or a window that missed them. It needs a GC in the window:
// before one, /gc/heap/allocs:bytes lags what the per-P caches handed out.
func allocCrossCheck(r *schema.Result) string {
	s, rt := r.AllocsBySite, r.Runtime
	if s == nil || rt == nil || s.Steps <= 0 || rt.Steady.GCCycles < 1 {
		return ""
	}
	// A walk at a new peak in the window is the probe's by where it ran:
	// its bytes come out of the allocator's count, which lags what the
	// per-P caches handed out, so one that counted less than the walk
	// alone cannot be compared.
	walk := float64(s.ProbeWalkBytes) / float64(s.Steps)
	if walk > rt.Steady.AllocsPerStepBytes {
		return ""
	}
	prog, all := s.ProgramBytesPerStep(), rt.Steady.AllocsPerStepBytes-walk
	if prog <= 2*all && all <= 2*prog {
		return ""
	}
	return fmt.Sprintf("allocs_by_site: the program's %s/step disagrees with runtime/metrics' %s/step over the same steps (%d GC cycles) by more than 2x; "+
		"the probe's class holds %s/step and the runtime's %s/step: go_heap_allocs_per_step and the sites table are not to be trusted for this run",
		table.FormatBytes(prog), table.FormatBytes(all), rt.Steady.GCCycles,
		table.FormatBytes(float64(s.ProbeBytes)/float64(s.Steps)), table.FormatBytes(float64(s.RuntimeBytes)/float64(s.Steps)))
}

func summarize(r *schema.Result, steps []trainer.StepStats) {
	if len(steps) == 0 {
		return
	}
	r.LossFirst = steps[0].Loss
	r.LossLast = steps[len(steps)-1].Loss
	r.Losses = make([]float32, len(steps))
	r.StepNs = make([]int64, len(steps))
	for i, s := range steps {
		r.Losses[i] = s.Loss
		r.StepNs[i] = int64(s.Duration)
	}
	// Steady state excludes the first step: start-up (page faults on fresh
	// buffers, lazy initialisation) is not the per-step cost.
	steady := steps
	if len(steps) > 1 {
		steady = steps[1:]
	}
	var ns int64
	d := make([]float64, len(steady))
	for i, s := range steady {
		ns += int64(s.Duration)
		d[i] = float64(s.Duration)
	}
	r.StepNsMedian = int64(math.Round(stats.Median(d)))
	r.TokensPerSec = float64(len(steady)*r.TokensPerStep) / (float64(ns) / 1e9)
	r.AchievedGFLOPS = r.GFLOPPerStep * float64(len(steady)) / (float64(ns) / 1e9)
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// stepAllocs brackets each step with two reads of the runtime's allocation
// counters (a reused two-sample slice: reading allocates nothing) and sums
// the steps after the warm-up. A nil *stepAllocs does nothing.
type stepAllocs struct {
	s             []metrics.Sample
	warmup, steps int
	objs0, bytes0 uint64
	objs, bytes   uint64
}

func newStepAllocs(warmup int) *stepAllocs {
	b := &stepAllocs{warmup: warmup, s: []metrics.Sample{{Name: "/gc/heap/allocs:objects"}, {Name: "/gc/heap/allocs:bytes"}}}
	b.before()
	return b
}

// before marks the start of the next step.
func (b *stepAllocs) before() {
	if b == nil {
		return
	}
	metrics.Read(b.s)
	b.objs0, b.bytes0 = b.s[0].Value.Uint64(), b.s[1].Value.Uint64()
}

// after ends step k (1-based within the run).
func (b *stepAllocs) after(k int) {
	if b == nil {
		return
	}
	metrics.Read(b.s)
	if k > b.warmup {
		b.steps++
		b.objs += b.s[0].Value.Uint64() - b.objs0
		b.bytes += b.s[1].Value.Uint64() - b.bytes0
	}
}

// perStep is the mean objects and bytes allocated per steady-state step.
func (b *stepAllocs) perStep() (objs, bytes float64) {
	if b == nil || b.steps == 0 {
		return 0, 0
	}
	return float64(b.objs) / float64(b.steps), float64(b.bytes) / float64(b.steps)
}
