package job

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"slices"
	"sync/atomic"
	"time"
	"unsafe"

	"memprobe/instrument/memmodel"
	"memprobe/instrument/procfs"
	"memprobe/instrument/profiling"
	"memprobe/internal/table"
	"memprobe/ledger"
	"memprobe/schema"
	"memprobe/trainer"
	"memprobe/trainer/data"
)

// jobRun is one Run in progress: what each stage sets up for the next.
type jobRun struct {
	o        Options
	progress io.Writer
	start    time.Time
	env      schema.Environment

	// hardStopProf hands the profile session to the watchdog's hard stop,
	// which exits the process: the session starts after the watchdog.
	hardStopProf atomic.Pointer[profiling.Session]

	resumed trainer.CheckpointInfo // prepare, with Options.Resume
	led     *ledger.Ledger         // prepare: nil without instruments
	popts   profiling.Options      // instrument
	prof    *profiling.Session     // instrument; nil once its profiles are written
	inst    *instruments           // instrument; nil without instruments

	ds        *data.Dataset // build
	dataNotes []string      // build: caveats about the data, for the warnings
	tr        *trainer.Trainer
	floor     int64 // build: the analytical floor and one executor's share
	perExec   int64

	startStep int                 // train
	bracket   *stepAllocs         // train: the allocation counters without instruments
	stats     []trainer.StepStats // train
	stopped   *StoppedError       // train: set when the steps stopped early
}

// watch starts the memory watchdog (Options.MemLimit); its hard stop
// removes the profiles' temporary files before it exits the process.
func (j *jobRun) watch(ctx context.Context) (context.Context, func()) {
	if hard := j.o.MemHardStop; hard != nil {
		j.o.MemHardStop = func(e *MemLimitError) {
			j.hardStopProf.Load().Discard()
			hard(e)
		}
	}
	return watchMemory(ctx, &j.o)
}

// prepare reads what the options point at before anything is built: a
// checkpoint to resume must hold this run's model; the ledger is made
// (or dropped, without instruments).
func (j *jobRun) prepare() error {
	o := &j.o
	o.Label = o.label()
	j.env = environment()
	if o.Resume != "" {
		var err error
		if j.resumed, err = trainer.ReadCheckpointInfo(o.Resume); err != nil {
			return err
		}
		// The batch size may change on resume; the model may not. The
		// message shows the checkpoint's own shape, batch included.
		same := j.resumed.Config
		same.Batch = o.Trainer.Config.Batch
		if same != o.Trainer.Config {
			return fmt.Errorf("reading checkpoint %s: it holds a model with %v, this run is configured for %v", o.Resume, j.resumed.Config, o.Trainer.Config)
		}
	}
	switch {
	case o.NoInstruments:
		o.Trainer.Ledger = nil
	case o.Trainer.Ledger == nil:
		o.Trainer.Ledger = ledger.New()
	}
	j.led = o.Trainer.Ledger
	return nil
}

// instrument starts the profiles and the sampler before the dataset and
// the trainer are built, so that set-up allocations are in them. Profiles
// are written only with a result (assemble); the sampler runs until the
// result is built, through an interruption.
func (j *jobRun) instrument(ctx context.Context) error {
	j.popts = j.o.profiling()
	if j.popts.Enabled() {
		prof, err := profiling.Start(j.popts)
		if err != nil {
			return err
		}
		j.prof = prof
		j.hardStopProf.Store(prof)
		if a := prof.Addr(); a != "" {
			fmt.Fprintf(j.progress, "pprof: serving http://%s/debug/pprof/\n", a)
		}
	}
	inst, err := startInstruments(context.WithoutCancel(ctx), &j.o)
	if err != nil {
		return err
	}
	j.inst = inst
	return nil
}

// newTrainer builds the job's trainer; a variable so that a test can
// plant a trainer that makes more executors than its configuration asks
// for.
var newTrainer = trainer.New

// build loads the data and builds the trainer (from the checkpoint, when
// resuming), and says what was built. The caller closes j.tr.
func (j *jobRun) build() error {
	o, cfg, progress := &j.o, j.o.Trainer.Config, j.progress
	ds, err := data.Load(o.Data, cfg.Vocab, o.DataSeed)
	if err != nil {
		return err
	}
	j.ds = ds
	// Caveats about the data go to the progress stream now and into the
	// result's warnings at the end.
	j.dataNotes = slices.Clone(ds.Warnings)
	if o.Resume != "" {
		if err := trainer.CheckCheckpointData(o.Resume, j.resumed, ds); err != nil {
			return err
		}
		j.dataNotes = append(j.dataNotes, trainer.CheckpointDataNotes(o.Resume, j.resumed, ds)...)
	}
	for _, n := range j.dataNotes {
		fmt.Fprintf(progress, "warning: %s\n", n)
	}
	ledger.Record(j.led.Account(ledger.DatasetTokens), ds.Tokens)
	tr, err := newTrainer(o.Trainer, ds)
	if err != nil {
		return err
	}
	j.tr = tr
	j.inst.noteHeap(unsafe.Pointer(&tr.Param.Memory[0]), unsafe.Pointer(&tr.Grad.Memory[0]),
		unsafe.Pointer(&tr.M.Memory[0]), unsafe.Pointer(&tr.V.Memory[0]), unsafe.Pointer(&ds.Tokens[0]))
	if o.Resume != "" {
		if err := tr.LoadCheckpoint(o.Resume); err != nil {
			return err
		}
	}
	// The floor is the configuration's: the executors it asks for
	// (PredictedExecutors), not those the trainer made, which the model
	// checks against them (memmodel.CheckExecutors).
	execs := PredictedExecutors(configOf(o, ""))
	j.floor, j.perExec = Floor(cfg, execs, len(ds.Tokens))
	fmt.Fprintf(progress, "model %v: %d parameters (tied LM head, unpadded vocab)\n", cfg, cfg.NumParams())
	fmt.Fprintf(progress, "data %s: %d tokens, %d distinct, %s as uint16\n", ds.Source, len(ds.Tokens), ds.Vocab, mib(ds.Bytes()))
	fmt.Fprintf(progress, "threads %d logical workers on %d executors (GOMAXPROCS %d); gemm %s\n", o.Trainer.Threads, tr.NumExecutors(), runtime.GOMAXPROCS(0), tr.GEMM().Name())
	fmt.Fprintf(progress, "memory floor %s = params+grads+adam %s + %d executors x %s + tokens %s\n",
		mib(j.floor), mib(16*int64(cfg.NumParams())), execs, mib(j.perExec), mib(ds.Bytes()))
	return nil
}

// train runs the steps, logging a row per logged step. A stop before any
// step finished is its error; a later one is j.stopped, and the steps
// that ran make the result.
func (j *jobRun) train(ctx context.Context) error {
	o, tr, inst := &j.o, j.tr, j.inst
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
	j.startStep = tr.StepsDone()
	// The headline allocation figures count what the steps allocate, from
	// the end of the previous callback to the start of the next, so that
	// progress lines and instruments are not charged to the trainer. With
	// instruments on they are the instruments' steady state; without, two
	// reads of the runtime's allocation counters bracket each step.
	if inst == nil {
		j.bracket = newStepAllocs(warmup)
	}
	bracket := j.bracket
	// The step log, a table streamed a row per logged step; its write
	// errors are ignored, as the other progress lines' are.
	steps, err := table.NewStream(j.progress, "",
		table.Column{Name: "step", Kind: table.Int, Width: 5},
		table.Column{Name: "loss", Kind: table.Float, Decimals: 4, Width: 7},
		table.Column{Name: "tokens/s", Kind: table.Rate, Width: 9},
		table.Column{Name: "step time", Kind: table.Duration, Width: 9},
		table.Column{Name: "RSS", Kind: table.Bytes, Width: 10},
	)
	if err != nil {
		return err
	}
	inst.setUp(warmup)
	inst.beforeStep()
	j.stats, err = tr.Train(ctx, o.Steps, func(s trainer.StepStats) {
		k := s.Step - j.startStep
		inst.afterStep(s.Step, k) // first: the step's counters end here
		bracket.after(k)
		if k%logEvery == 0 || k == 1 || k == o.Steps {
			steps.Row(s.Step, s.Loss, s.TokensPerSecond, s.Duration, inst.rss())
		}
		if o.AfterStep != nil {
			o.AfterStep(s.Step)
		}
		inst.beforeStep() // last: the next step's counters start here
		bracket.before()
	})
	steps.Close()
	inst.endSites()
	if err != nil {
		j.stopped = &StoppedError{Cause: context.Cause(ctx), Steps: len(j.stats), Of: o.Steps}
		if j.stopped.Cause == nil {
			j.stopped.Cause = err
		}
		if len(j.stats) == 0 {
			return j.stopped
		}
		fmt.Fprintf(j.progress, "stopped after %d of %d steps: %v\n", len(j.stats), o.Steps, j.stopped.Cause)
	}
	return nil
}

// measure builds the result from the steps: throughput, allocations, the
// ledger against the model at the end of training, and the instruments'
// figures (runtime counters, sites, reconciliations).
func (j *jobRun) measure() *schema.Result {
	o, tr, cfg := &j.o, j.tr, j.o.Trainer.Config
	r := &schema.Result{
		Config: configOf(o, tr.GEMM().Name()), Environment: j.env,
		CommandLine: commandLine(o.CommandLine), StartTime: j.start.Format(time.RFC3339),
		Optimizer: schema.Optimizer(o.Trainer.Optimizer), Params: cfg.NumParams(),
		Data: j.ds.Source, DataTokens: len(j.ds.Tokens), DataVocab: j.ds.Vocab,
		Threads: o.Trainer.Threads, Executors: tr.NumExecutors(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		GEMM: tr.GEMM().Name(), GEMMConfig: j.env.OpenBLASConfig, Seed: o.Trainer.Seed,
		Steps: len(j.stats), StartStep: j.startStep, TokensPerStep: cfg.Batch * cfg.Context,
		GFLOPPerStep: FLOPsPerStep(cfg) / 1e9,
		FloorBytes:   j.floor, ExecutorBytes: j.perExec,
		Instruments: j.inst != nil, Ledger: []schema.LedgerRow{},
		Schema: schema.ResultVersion, Label: o.Label, Counts: schema.Counts(tr.Counts()),
		Interrupted: j.stopped != nil,
	}
	if o.Trainer.Decode != "" {
		ds := schema.DecodeStats(tr.DecodeStats())
		r.DecodeStats = &ds
	}
	summarize(r, j.stats)
	r.HeapAllocsPerStep, r.HeapAllocBytesPerStep = j.bracket.perStep()

	// The model takes the configuration and GOMAXPROCS, not the trainer's
	// executor count, which it checks instead: a trainer that makes the
	// wrong number of workspaces is a finding, not a prediction that
	// follows it.
	modelIn := memmodel.Input{Config: configOf(o, tr.GEMM().Name()), GOMAXPROCS: r.GOMAXPROCS, DatasetTokens: len(j.ds.Tokens)}
	expected := memmodel.Expected(modelIn)
	r.ExpectedTotalBytes = memmodel.TotalBytes(expected)
	if j.inst != nil {
		r.Ledger = memmodel.Compare(expected, j.led.Snapshot())
		if row, ok := memmodel.CheckExecutors(modelIn, tr.NumExecutors()); ok {
			r.Ledger = append(r.Ledger, row)
		}
		r.LedgerFindings = len(memmodel.Findings(r.Ledger))
		r.LedgerTotalBytes = j.led.TotalCurrentBytes()
		j.inst.finishSteps(r)
		r.HeapAllocsPerStep = r.Runtime.Steady.AllocsPerStepObjects
		r.HeapAllocBytesPerStep = r.Runtime.Steady.AllocsPerStepBytes
		if s := r.AllocsBySite; s != nil && s.Exact {
			r.HeapAllocsPerStep, r.HeapAllocBytesPerStep = s.ProgramObjectsPerStep(), s.ProgramBytesPerStep()
		}
	}
	return r
}

// assemble finishes r with what comes after the figures: the checkpoint
// and generated text, the process's final status (after the sampler's
// last sample), the profiles, the warnings, and, once the job's own GC
// has run, the Go heap outside the ledger.
func (j *jobRun) assemble(r *schema.Result) error {
	o, tr := &j.o, j.tr
	if o.Checkpoint != "" {
		if err := tr.SaveCheckpoint(o.Checkpoint); err != nil {
			return err
		}
		r.Checkpoint = o.Checkpoint
	}
	if o.Generate > 0 && j.stopped == nil {
		ids := tr.Generate(o.Generate, o.Trainer.Seed)
		r.GeneratedIDs = ids
		if j.ds.Tokenizer != nil {
			r.Generated = j.ds.Tokenizer.Decode(ids)
		}
	}
	j.inst.stopSampling() // its last sample before the high-water mark is read
	if st, err := procfs.ReadStatus(procfs.Self); err == nil {
		r.PeakRSSBytes, r.FinalRSSBytes, r.FinalVSZBytes, r.OSThreads = st.VmHWMBytes, st.VmRSSBytes, st.VmSizeBytes, st.Threads
	}
	j.inst.stop(r)
	if j.prof != nil {
		// A profile that cannot be written is a warning: the training
		// result is still worth having.
		rep, err := j.prof.Stop()
		j.prof = nil
		if err != nil {
			rep.Warnings = append(rep.Warnings, err.Error())
			fmt.Fprintf(j.progress, "warning: %v\n", err)
		}
		r.Profiles = &rep
	}
	r.Warnings = append(perturbations(r, j.popts), j.dataNotes...)
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
	if j.inst != nil {
		unaccountedHeap(r, j.led, o.Trainer.Device, j.inst.probeHeap.Bytes, j.progress)
	}
	if j.stopped != nil {
		r.Warnings = append(r.Warnings, fmt.Sprintf("interrupted after %d of %d steps (%v): every figure covers the steps that ran", len(j.stats), o.Steps, j.stopped.Cause))
	}
	return nil
}
