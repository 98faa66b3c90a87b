// Package job runs one training job in-process and measures it: the unit the
// probe repeats in fresh child processes. It builds the dataset and the
// trainer from Options, trains, optionally checkpoints and samples, and
// returns a [schema.Result] whose JSON is what `probe train` prints and what
// a parent process reads back: with the configuration that produced it
// (OptionsFromConfig runs it again) and the environment it ran in.
//
// Unless Options.NoInstruments is set, the job also runs the instruments
// (docs/instruments.md): the trainer's ledger set against the analytical
// model ([memprobe/probe/memmodel]), the Go runtime's counters read around
// every step ([memprobe/probe/rtstats]), the sampler watching RSS during
// the whole job ([memprobe/probe/sampler]), and the resident set explained
// at its peak and at the end ([memprobe/probe/reconcile]). Profiles
// ([memprobe/probe/profiling]) are separate: on only when asked for.
package job

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"sort"
	"sync/atomic"
	"time"
	"unsafe"

	"memprobe/internal/atomicfile"
	"memprobe/internal/table"
	"memprobe/probe/ledger"
	"memprobe/probe/memmodel"
	"memprobe/probe/procfs"
	"memprobe/probe/profiling"
	"memprobe/probe/sampler"
	"memprobe/schema"
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
func Run(ctx context.Context, o Options, progress io.Writer) (r *schema.Result, err error) {
	// The one validation of the run's configuration: the command and the
	// trainer below trust it.
	if err := o.Validate(); err != nil {
		return nil, &OptionsError{Err: err}
	}
	if err := checkMemory(&o); err != nil {
		return nil, err
	}
	// The watchdog's hard stop exits the process: the profiles' temporary
	// files are removed first. The session starts after the watchdog, so
	// it is handed over in an atomic.
	var hardStopProf atomic.Pointer[profiling.Session]
	if hard := o.MemHardStop; hard != nil {
		o.MemHardStop = func(e *MemLimitError) {
			hardStopProf.Load().Discard()
			hard(e)
		}
	}
	ctx, stopWatch := watchMemory(ctx, &o)
	defer stopWatch()
	o.Label = o.label()
	start := time.Now()
	env := environment()
	cfg := o.Trainer.Config
	var resumed trainer.CheckpointInfo
	if o.Resume != "" {
		if resumed, err = trainer.ReadCheckpointInfo(o.Resume); err != nil {
			return nil, err
		}
		// The batch size may change on resume; the model may not. The
		// message shows the checkpoint's own shape, batch included.
		same := resumed.Config
		same.Batch = cfg.Batch
		if same != cfg {
			return nil, fmt.Errorf("reading checkpoint %s: it holds a model with %v, this run is configured for %v", o.Resume, resumed.Config, cfg)
		}
	}
	switch {
	case o.NoInstruments:
		o.Trainer.Ledger = nil
	case o.Trainer.Ledger == nil:
		o.Trainer.Ledger = ledger.New()
	}
	led := o.Trainer.Ledger

	// Profiles and the sampler start before the dataset and the trainer
	// are built, so that set-up allocations are in them. They are written
	// only with a result (prof.Stop below, the partial result of an
	// interrupted job included): a job that fails discards them, leaving
	// the files named as they were.
	popts := o.profiling()
	var prof *profiling.Session
	if popts.Enabled() {
		if prof, err = profiling.Start(popts); err != nil {
			return nil, err
		}
		defer func() {
			if err != nil {
				prof.Discard() // nil once stopped
			}
		}()
		hardStopProf.Store(prof)
		if a := prof.Addr(); a != "" {
			fmt.Fprintf(progress, "pprof: serving http://%s/debug/pprof/\n", a)
		}
	}
	// The sampler runs until the result is built, through an interruption.
	inst, err := startInstruments(context.WithoutCancel(ctx), &o)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			inst.abort()
		}
	}()

	ds, err := data.Load(o.Data, cfg.Vocab, o.DataSeed)
	if err != nil {
		return nil, err
	}
	// Caveats about the data go to the progress stream now and into the
	// result's warnings at the end.
	dataNotes := slices.Clone(ds.Warnings)
	if o.Resume != "" {
		if err := trainer.CheckCheckpointData(o.Resume, resumed, ds); err != nil {
			return nil, err
		}
		dataNotes = append(dataNotes, trainer.CheckpointDataNotes(o.Resume, resumed, ds)...)
	}
	for _, n := range dataNotes {
		fmt.Fprintf(progress, "warning: %s\n", n)
	}
	ledger.Record(led.Account(ledger.DatasetTokens), ds.Tokens)
	tr, err := trainer.New(o.Trainer, ds)
	if err != nil {
		return nil, err
	}
	defer tr.Close()
	inst.noteHeap(unsafe.Pointer(&tr.Param.Memory[0]), unsafe.Pointer(&tr.Grad.Memory[0]),
		unsafe.Pointer(&tr.M.Memory[0]), unsafe.Pointer(&tr.V.Memory[0]), unsafe.Pointer(&ds.Tokens[0]))
	if o.Resume != "" {
		if err := tr.LoadCheckpoint(o.Resume); err != nil {
			return nil, err
		}
	}
	floor, perExec := Floor(cfg, tr.NumExecutors(), len(ds.Tokens))
	fmt.Fprintf(progress, "model %v: %d parameters (tied LM head, unpadded vocab)\n", cfg, cfg.NumParams())
	fmt.Fprintf(progress, "data %s: %d tokens, %d distinct, %s as uint16\n", ds.Source, len(ds.Tokens), ds.Vocab, mib(ds.Bytes()))
	fmt.Fprintf(progress, "threads %d logical workers on %d executors (GOMAXPROCS %d); gemm %s\n", o.Trainer.Threads, tr.NumExecutors(), runtime.GOMAXPROCS(0), tr.GEMM().Name())
	fmt.Fprintf(progress, "memory floor %s = params+grads+adam %s + %d executors x %s + tokens %s\n",
		mib(floor), mib(16*int64(cfg.NumParams())), tr.NumExecutors(), mib(perExec), mib(ds.Bytes()))

	logEvery := o.LogEvery
	if logEvery == 0 {
		logEvery = max(1, o.Steps/20)
	}
	// The warm-up leaves at least one step measured: the command's
	// default of 1 with --steps 1 is none (an explicit --warmup-steps of
	// --steps or more is refused by the command). The configuration
	// records the warm-up used.
	warmup := min(o.WarmupSteps, o.Steps-1)
	o.WarmupSteps = warmup
	startStep := tr.StepsDone()
	// The headline allocation figures count what the steps allocate, from
	// the end of the previous callback to the start of the next, so that
	// progress lines and instruments are not charged to the trainer. With
	// instruments on they are the instruments' steady state; without, two
	// reads of the runtime's allocation counters bracket each step.
	var bracket *stepAllocs
	if inst == nil {
		bracket = newStepAllocs(warmup)
	}
	// The step log, a table streamed a row per logged step; its write
	// errors are ignored, as the other progress lines' are.
	steps, err := table.NewStream(progress, "",
		table.Column{Name: "step", Kind: table.Int, Width: 5},
		table.Column{Name: "loss", Kind: table.Float, Decimals: 4, Width: 7},
		table.Column{Name: "tokens/s", Kind: table.Rate, Width: 9},
		table.Column{Name: "step time", Unit: "ms", Kind: table.Float, Width: 6},
		table.Column{Name: "RSS", Kind: table.Bytes, Width: 10},
	)
	if err != nil {
		return nil, err
	}
	inst.setUp(warmup)
	inst.beforeStep()
	stats, err := tr.Train(ctx, o.Steps, func(s trainer.StepStats) {
		k := s.Step - startStep
		inst.afterStep(s.Step, k) // first: the step's counters end here
		bracket.after(k)
		if k%logEvery == 0 || k == 1 || k == o.Steps {
			steps.Row(s.Step, s.Loss, s.TokensPerSecond, float64(s.Duration)/1e6, inst.rss())
		}
		if o.AfterStep != nil {
			o.AfterStep(s.Step)
		}
		inst.beforeStep() // last: the next step's counters start here
		bracket.before()
	})
	steps.Close()
	inst.endSites()
	var stopped *StoppedError
	if err != nil {
		stopped = &StoppedError{Cause: context.Cause(ctx), Steps: len(stats), Of: o.Steps}
		if stopped.Cause == nil {
			stopped.Cause = err
		}
		if len(stats) == 0 {
			return nil, stopped
		}
		fmt.Fprintf(progress, "stopped after %d of %d steps: %v\n", len(stats), o.Steps, stopped.Cause)
	}
	r = &schema.Result{
		Config: configOf(&o, tr.GEMM().Name()), Environment: env,
		CommandLine: commandLine(o.CommandLine), StartTime: start.Format(time.RFC3339),
		Optimizer: schema.Optimizer(o.Trainer.Optimizer), Params: cfg.NumParams(),
		Data: ds.Source, DataTokens: len(ds.Tokens), DataVocab: ds.Vocab,
		Threads: o.Trainer.Threads, Executors: tr.NumExecutors(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		GEMM: tr.GEMM().Name(), GEMMConfig: env.OpenBLASConfig, Seed: o.Trainer.Seed,
		Steps: len(stats), StartStep: startStep, TokensPerStep: cfg.Batch * cfg.Context,
		GFLOPPerStep: FLOPsPerStep(cfg) / 1e9,
		FloorBytes:   floor, ExecutorBytes: perExec,
		Instruments: inst != nil, Ledger: []schema.LedgerRow{},
		Schema: schema.ResultVersion, Label: o.Label, Counts: schema.Counts(tr.Counts()),
		Interrupted: stopped != nil,
	}
	if o.Trainer.Decode != "" {
		ds := schema.DecodeStats(tr.DecodeStats())
		r.DecodeStats = &ds
	}
	summarize(r, stats)
	r.HeapAllocsPerStep, r.HeapAllocBytesPerStep = bracket.perStep()

	// The ledger against the model, at the end of training. The model
	// takes the configuration and GOMAXPROCS, not the trainer's executor
	// count, which it checks instead: a trainer that makes the wrong
	// number of workspaces is a finding, not a prediction that follows it.
	modelIn := memmodel.Input{Config: configOf(&o, tr.GEMM().Name()), GOMAXPROCS: r.GOMAXPROCS, DatasetTokens: len(ds.Tokens)}
	expected := memmodel.Expected(modelIn)
	r.ExpectedTotalBytes = memmodel.TotalBytes(expected)
	if inst != nil {
		r.Ledger = memmodel.Compare(expected, led.Snapshot())
		if row, ok := memmodel.CheckExecutors(modelIn, tr.NumExecutors()); ok {
			r.Ledger = append(r.Ledger, row)
		}
		r.LedgerFindings = len(memmodel.Findings(r.Ledger))
		r.LedgerTotalBytes = led.TotalCurrentBytes()
		inst.finishSteps(r)
		r.HeapAllocsPerStep = r.Runtime.Steady.AllocsPerStepObjects
		r.HeapAllocBytesPerStep = r.Runtime.Steady.AllocsPerStepBytes
		if s := r.AllocsBySite; s != nil && s.Exact {
			r.HeapAllocsPerStep, r.HeapAllocBytesPerStep = s.ProgramObjectsPerStep(), s.ProgramBytesPerStep()
		}
	}

	if o.Checkpoint != "" {
		if err := tr.SaveCheckpoint(o.Checkpoint); err != nil {
			return nil, err
		}
		r.Checkpoint = o.Checkpoint
	}
	if o.Generate > 0 && stopped == nil {
		ids := tr.Generate(o.Generate, o.Trainer.Seed)
		r.GeneratedIDs = ids
		if ds.Tokenizer != nil {
			r.Generated = ds.Tokenizer.Decode(ids)
		}
	}
	inst.stopSampling() // its last sample before the high-water mark is read
	if st, serr := procfs.ReadStatus(procfs.Self); serr == nil {
		r.PeakRSSBytes, r.FinalRSSBytes, r.FinalVSZBytes, r.OSThreads = st.VmHWMBytes, st.VmRSSBytes, st.VmSizeBytes, st.Threads
	}
	inst.stop(r)
	if prof != nil {
		// A profile that cannot be written is a warning: the training
		// result is still worth having.
		rep, err := prof.Stop()
		prof = nil
		if err != nil {
			rep.Warnings = append(rep.Warnings, err.Error())
			fmt.Fprintf(progress, "warning: %v\n", err)
		}
		r.Profiles = &rep
	}
	r.Warnings = append(perturbations(r, popts), dataNotes...)
	if w := allocCrossCheck(r); w != "" {
		r.Warnings = append(r.Warnings, w)
	}
	// Every figure is taken. What the caller does next (the summary, the
	// JSON) allocates; returning the free heap to the system here (a GC
	// and a scavenge, a few milliseconds) makes that output fit under the
	// high-water mark the job already set, so the process's VmHWM at exit
	// (what probe exec and time(1) read from outside) stays the job's
	// peak_rss_bytes.
	debug.FreeOSMemory()
	if inst != nil {
		unaccountedHeap(r, led, o.Trainer.Device, inst.probeHeap.Bytes, progress)
	}
	if stopped != nil {
		r.Warnings = append(r.Warnings, fmt.Sprintf("interrupted after %d of %d steps (%v): every figure covers the steps that ran", len(stats), o.Steps, stopped.Cause))
		return r, stopped
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
	heap := int64(s[0].Value.Uint64()) - probeHeap
	inLedger := memmodel.GoHeapBytes(led.Snapshot(), device)
	rss := int64(r.FinalRSSBytes)
	fmt.Fprintf(progress, "go heap outside the ledger: %s of %s live, less the probe's own %s (finding above %s)\n",
		mib(heap-inLedger), mib(heap+probeHeap), mib(probeHeap), mib(memmodel.UnaccountedThreshold(rss)))
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
	prog, all := s.ProgramBytesPerStep(), rt.Steady.AllocsPerStepBytes
	if prog <= 2*all && all <= 2*prog {
		return ""
	}
	return fmt.Sprintf("allocs_by_site: the program's %s/step disagrees with runtime/metrics' %s/step over the same steps (%d GC cycles) by more than 2x; "+
		"the probe's class holds %s/step and the runtime's %s/step: go_heap_allocs_per_step and the sites table are not to be trusted for this run",
		table.FormatBytes(prog), table.FormatBytes(all), rt.Steady.GCCycles,
		table.FormatBytes(float64(s.ProbeBytes)/float64(s.Steps)), table.FormatBytes(float64(s.RuntimeBytes)/float64(s.Steps)))
}

func summarize(r *schema.Result, stats []trainer.StepStats) {
	if len(stats) == 0 {
		return
	}
	r.LossFirst = stats[0].Loss
	r.LossLast = stats[len(stats)-1].Loss
	r.Losses = make([]float32, len(stats))
	r.StepNs = make([]int64, len(stats))
	for i, s := range stats {
		r.Losses[i] = s.Loss
		r.StepNs[i] = int64(s.Duration)
	}
	// Steady state excludes the first step: start-up (page faults on fresh
	// buffers, lazy initialisation) is not the per-step cost.
	steady := stats
	if len(stats) > 1 {
		steady = stats[1:]
	}
	var ns int64
	d := make([]int64, len(steady))
	for i, s := range steady {
		ns += int64(s.Duration)
		d[i] = int64(s.Duration)
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	r.StepNsMedian = d[len(d)/2]
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
