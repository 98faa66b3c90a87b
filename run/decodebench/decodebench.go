// Package decodebench measures the LM-head decode modes of design note 003
// on a device: the runner behind `probe decode`, beside [memprobe/run/job]
// (which runs training). cmd/probe turns its flags into Options and calls
// Run; the trainer's decode head ([memprobe/trainer/decode]) and devices
// ([memprobe/trainer/device]) are the subject and know nothing of this
// package.
//
// The pipeline:
//
//  1. Run builds the model (fresh parameters from a seed, or those of a
//     checkpoint), loads the data, and computes on the host, with the
//     model's body (model.ForwardBody), the hidden states of B sequences
//     of T positions and their targets.
//  2. For each mode Run opens the device, makes a decode.Decoder, and
//     MeasureBatch times passes over the B sequences after a warm-up one:
//     tokens per second, device syncs, kernel launches and bytes copied
//     each way (the device's counters), host heap allocations by site
//     ([memprobe/instrument/allocsite]) and the device's peak memory,
//     each mode's as the JSON record package schema owns
//     (schema.DecodeRecord): there is no type of this package's own.
//  3. Records adds the configuration and environment to the records;
//     report.WriteDecode prints them, as `probe decode` and `probe report`
//     do.
package decodebench

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"slices"
	"time"

	"memprobe/internal/atomicfile"
	"memprobe/ledger"
	"memprobe/schema"
	"memprobe/trainer"
	"memprobe/trainer/data"
	"memprobe/trainer/decode"
	"memprobe/trainer/device"
	"memprobe/trainer/gemm"
	"memprobe/trainer/model"
)

// Options is one `probe decode` run: which model, which sequences, and
// how to decode them.
type Options struct {
	// Preset names the shape Config came from (for the record; "" with
	// Checkpoint).
	Preset string
	// Config is the model without Checkpoint (validated by the caller).
	// With Checkpoint only Batch and Context are read, 0 keeping the
	// checkpoint's: Batch replaces the checkpoint's; Context, if set, must
	// be the checkpoint's, whose position embedding has that many rows.
	Config     model.Config
	Checkpoint string // decode with this checkpoint's parameters ("": fresh ones from Seed)
	Seed       uint64 // seed of the parameter initialisation without Checkpoint
	Data       string // sequences to decode: "synthetic:SIZE" or a text file
	DataSeed   uint64 // seed of the synthetic corpus
	GEMM       string // GEMM backend of the model body and the cpu device: auto or a name of gemm.Names
	Modes      []decode.Mode
	Device     string // device name: cpu or cuda
	Passes     int    // timed passes over the B sequences, after one warm-up pass
	// Probs copies each position's V probabilities back, as training
	// does; without it only tokens and losses come back.
	Probs bool
	// PinnedHost takes the host buffers of the per-token-prealloc and
	// batch modes (the decoder's, decode.PinnedHost, and the
	// probabilities' MeasureBatch copies back into) from the device's
	// page-locked memory where it has some (device.HostMemory: cuda), so
	// their copies go straight by DMA; false keeps Go slices, copied
	// through the device's pinned staging (the path before page-locked
	// buffers, kept to measure both). The per-token-copy and
	// per-token-view modes use Go slices either way. Check decodes the
	// same way.
	PinnedHost bool
	CPUProfile string // write a CPU profile of the timed decoding here ("": none)
	// Check "cpu" decodes the first sequences of each mode on the cpu
	// device too and compares (CheckResult); "" does not.
	Check string
}

// Run builds the model and the hidden states and measures each mode in
// o.Modes in turn, in that order: one decode record per mode, with its
// figures, the model and the GEMM backend that ran (Records adds the rest
// of the configuration). Progress lines (the model, then one line per
// mode) go to progress, which may be nil.
func Run(o Options, progress io.Writer) (recs []schema.DecodeRecord, err error) {
	if progress == nil {
		progress = io.Discard
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	g, err := gemm.Get(o.GEMM)
	if err != nil {
		return nil, err
	}
	cfg, params, ckInfo, err := loadModel(o)
	if err != nil {
		return nil, err
	}
	ds, err := loadData(o, cfg, ckInfo, progress)
	if err != nil {
		return nil, err
	}
	hidden, targets := hiddenStates(g, cfg, params, ds.Tokens)
	fmt.Fprintf(progress, "model %v: %s; data %s; gemm %s\n", cfg, modelSource(o), ds.Source, g.Name())

	if o.CPUProfile != "" {
		// The profile streams to a temporary file beside its path,
		// renamed over it once every mode is measured: a failed run
		// leaves what was there before.
		stop, perr := startCPUProfile(o.CPUProfile)
		if perr != nil {
			return nil, perr
		}
		defer func() { // err is Run's result
			if serr := stop(err == nil); err == nil && serr != nil {
				recs, err = nil, serr
			}
		}()
	}
	var watch *gpuWatch
	if o.Device == "cuda" {
		// Before the first device: the GPU's memory without our context.
		watch = newGPUWatch()
		defer watch.close()
	}
	recs = make([]schema.DecodeRecord, 0, len(o.Modes))
	for _, m := range o.Modes {
		r, err := measureMode(o.Device, g, m, cfg, params.WTE, hidden, targets, o.Probs, o.PinnedHost, o.Passes, watch)
		if err != nil {
			return nil, err
		}
		// The whole model (layers and heads too), the shape decoded as
		// the measurement has it.
		shape := r.Config.Model
		r.Config.Model = schema.Model(cfg)
		r.Config.Model.Vocab, r.Config.Model.Dim, r.Config.Model.Context, r.Config.Model.Batch = shape.Vocab, shape.Dim, shape.Context, shape.Batch
		r.Config.GEMMUsed = g.Name()
		tokens := r.Config.Passes * shape.Batch * shape.Context
		fmt.Fprintf(progress, "%s: %.0f tokens/s over %d tokens (%.2f s)\n", m, r.TokensPerSec, tokens, float64(tokens)/r.TokensPerSec)
		if o.Check == "cpu" {
			c, err := checkMode(o.Device, g, m, cfg.Vocab, cfg.Dim, cfg.Context, params.WTE, hidden, targets, cfg.Batch, o.PinnedHost)
			if err != nil {
				return nil, fmt.Errorf("checking %s against cpu: %w", m, err)
			}
			r.Check = &c
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// check says what makes o unfit to run, before any work: no modes, no
// passes, a reference other than cpu, a CPU profile that could not be
// written, a device this machine lacks.
func (o Options) check() error {
	switch {
	case len(o.Modes) == 0:
		return errors.New("measuring decode: no modes")
	case o.Passes < 1:
		return fmt.Errorf("measuring decode: %d passes is not positive", o.Passes)
	case o.Check != "" && o.Check != "cpu":
		return fmt.Errorf("measuring decode: check against %q: only cpu is a reference", o.Check)
	}
	if o.CPUProfile != "" {
		// Before any work: a profile that could not be written fails
		// now (the command checks it too, with the other files).
		if err := atomicfile.CheckWritable(o.CPUProfile); err != nil {
			return fmt.Errorf("--cpuprofile %w", err)
		}
	}
	return device.Available(o.Device)
}

// loadData loads the sequences of o for the model cfg, printing its
// caveats to progress: data other than the checkpoint's (ckInfo, nil
// without one) is a caveat here, not an error as it is for resuming
// training, since the figures measure speed, which the tokens' meaning
// does not change. A dataset with more distinct tokens than the vocab, or
// too short for one context, is an error.
func loadData(o Options, cfg model.Config, ckInfo *trainer.CheckpointInfo, progress io.Writer) (*data.Dataset, error) {
	ds, err := data.Load(o.Data, cfg.Vocab, o.DataSeed)
	if err != nil {
		return nil, err
	}
	notes := slices.Clone(ds.Warnings)
	if ckInfo != nil {
		if err := trainer.CheckCheckpointData(o.Checkpoint, *ckInfo, ds); err != nil {
			notes = append(notes, err.Error())
		} else {
			notes = append(notes, trainer.CheckpointDataNotes(o.Checkpoint, *ckInfo, ds)...)
		}
	}
	for _, n := range notes {
		fmt.Fprintf(progress, "warning: %s\n", n)
	}
	if ds.Vocab > cfg.Vocab {
		return nil, fmt.Errorf("dataset %s has %d distinct tokens but the model's vocab is %d", ds.Source, ds.Vocab, cfg.Vocab)
	}
	if T := cfg.Context; len(ds.Tokens) < T+1 {
		return nil, fmt.Errorf("dataset %s has %d tokens, fewer than context+1 = %d", ds.Source, len(ds.Tokens), T+1)
	}
	return ds, nil
}

// hiddenStates computes on the host, with the model's body, the hidden
// states (B, T, C) of B sequences and their targets (B, T): sequence b
// starts at token b*T, wrapping as the trainer's steps do.
func hiddenStates(g gemm.Backend, cfg model.Config, params *model.Params, tokens []uint16) (hidden []float32, targets []uint16) {
	B, T, C := cfg.Batch, cfg.Context, cfg.Dim
	hidden = make([]float32, B*T*C)
	targets = make([]uint16, B*T)
	acts := model.NewActs(cfg, make([]float32, cfg.ActsSize()))
	n := len(tokens) - T
	for b := 0; b < B; b++ {
		p := (b * T) % n
		model.ForwardBody(g, cfg, params, acts, tokens[p:p+T])
		copy(hidden[b*T*C:], acts.LNF)
		copy(targets[b*T:], tokens[p+1:p+T+1])
	}
	return hidden, targets
}

// startCPUProfile starts the CPU profile of --cpuprofile path, written to
// a temporary file in path's directory. stop(true) ends it and renames the
// file over path (an error names path); stop(false) ends it and removes
// the file, leaving path as it was.
func startCPUProfile(path string) (stop func(keep bool) error, err error) {
	f, err := atomicfile.CreateStaged(path)
	if err != nil {
		return nil, fmt.Errorf("writing cpu profile %s: %w", path, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("writing cpu profile %s: %w", path, err)
	}
	return func(keep bool) error {
		pprof.StopCPUProfile()
		err := f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if !keep || err != nil {
			os.Remove(f.Name())
		}
		if err == nil && keep {
			err = atomicfile.CommitStaged(f.Name(), path)
		}
		if err != nil {
			return fmt.Errorf("writing cpu profile %s: %w", path, err)
		}
		return nil
	}, nil
}

func modelSource(o Options) string {
	if o.Checkpoint != "" {
		return "parameters from " + o.Checkpoint
	}
	return fmt.Sprintf("fresh parameters (seed %d)", o.Seed)
}

// loadModel returns the configuration and parameters: from the checkpoint
// (with Batch applied; Context, if given, must be the checkpoint's), with
// what it says of itself, or fresh from the seed (a nil info).
func loadModel(o Options) (model.Config, *model.Params, *trainer.CheckpointInfo, error) {
	if o.Checkpoint == "" {
		p := model.NewParams(o.Config, make([]float32, o.Config.NumParams()))
		model.Init(o.Config, p, o.Seed)
		return o.Config, p, nil, nil
	}
	info, p, err := trainer.ReadCheckpointParams(o.Checkpoint, nil)
	if err != nil {
		return model.Config{}, nil, nil, err
	}
	cfg := info.Config
	if o.Config.Context > 0 && o.Config.Context != cfg.Context {
		// Named after the flag: the command passes this error through.
		return model.Config{}, nil, nil, fmt.Errorf("--context %d: checkpoint %s holds a model with context %d", o.Config.Context, o.Checkpoint, cfg.Context)
	}
	if o.Config.Batch > 0 {
		cfg.Batch = o.Config.Batch
	}
	return cfg, p, &info, nil
}

// measureMode opens the device, makes a decoder in mode m (with page-locked
// host buffers where pinned asks and the device has them), measures it and
// closes both. With watch (cuda), the device memory is sampled from NVML
// during the mode and reconciled at its end.
func measureMode(devName string, g gemm.Backend, m decode.Mode, cfg model.Config, wte, hidden []float32, targets []uint16, probs, pinned bool, passes int, watch *gpuWatch) (rec schema.DecodeRecord, err error) {
	if watch != nil {
		watch.start()
	}
	dev, err := device.Open(devName, g, ledger.New().Account(ledger.DeviceBuffers))
	if err != nil {
		if watch != nil {
			watch.finish(nil, 0)
		}
		return rec, err
	}
	if watch != nil {
		watch.stage(dev)
	}
	defer func() {
		if cerr := dev.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	d, err := decode.New(dev, m, cfg.Vocab, cfg.Dim, cfg.Context, wte, decode.PinnedHost(pinned))
	if err != nil {
		if watch != nil {
			watch.finish(nil, 0)
		}
		return rec, err
	}
	defer func() {
		if cerr := d.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	if watch != nil {
		watch.stage(dev)
	}
	rec, err = MeasureBatch(dev, d, hidden, cfg.Batch, cfg.Context, targets, probs, passes)
	if watch != nil {
		var ledgerBytes int64
		for _, b := range rec.Buffers {
			ledgerBytes += b.Bytes
		}
		rec.DeviceMemory = watch.finish(dev, ledgerBytes)
		if dm := rec.DeviceMemory; dm != nil && dm.ProcessPeakBytes > 0 {
			rec.DevicePeakBytes, rec.DevicePeakSource = dm.ProcessPeakBytes, "nvml"
		}
	}
	return rec, err
}

// Records are the JSON records of `probe decode --json` (package schema
// owns the format): Run's records, one per mode, with the configuration o
// ran, this machine's environment, the command line and the time the run
// started. The records given are not changed.
func (o Options) Records(measured []schema.DecodeRecord, commandLine []string, start time.Time) []schema.DecodeRecord {
	env := schema.CurrentEnvironment()
	env.OpenBLASConfig = gemm.OpenBLASConfig()
	preset := o.Preset
	if o.Checkpoint != "" {
		preset = ""
	}
	recs := make([]schema.DecodeRecord, len(measured))
	for i, r := range measured {
		c := &r.Config
		c.Preset, c.Checkpoint, c.Seed, c.Data, c.DataSeed = preset, o.Checkpoint, o.Seed, o.Data, o.DataSeed
		c.GEMM, c.Probs, c.Check = o.GEMM, o.Probs, o.Check
		r.Environment, r.CommandLine, r.StartTime = env, slices.Clone(commandLine), start.UTC().Format(time.RFC3339)
		if r.CommandLine == nil {
			r.CommandLine = []string{}
		}
		recs[i] = r
	}
	return recs
}
