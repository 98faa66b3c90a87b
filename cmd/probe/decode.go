package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"memprobe/internal/table"
	"memprobe/probe/ledger"
	"memprobe/schema"
	"memprobe/trainer"
	"memprobe/trainer/data"
	"memprobe/trainer/decode"
	"memprobe/trainer/device"
	"memprobe/trainer/gemm"
	"memprobe/trainer/model"
)

// decodeCmdFlags are the command-line options of `probe decode`, kept apart
// from the command so that parsing is testable without decoding.
type decodeCmdFlags struct {
	shape      shapeFlags // 0 fields keep the preset's (or checkpoint's) value
	checkpoint string
	seed       uint64
	data       string
	dataSeed   uint64
	gemm       string
	mode       string
	device     string
	passes     int
	probs      bool
	jsonPath   string
	format     string
	cpuprofile string
}

func (f *decodeCmdFlags) register(fs *pflag.FlagSet) {
	f.shape.register(fs, "model preset: seed, tiny or micro (not with --checkpoint)",
		"context length T: positions per sequence (0: preset or checkpoint)", "sequences B to decode per pass (0: preset or checkpoint)")
	fs.StringVar(&f.checkpoint, "checkpoint", "", "decode with the parameters of this checkpoint (default: fresh weights from --seed)")
	fs.Uint64Var(&f.seed, "seed", 1337, "seed of the parameter initialisation without --checkpoint")
	fs.StringVar(&f.data, "data", "synthetic:1MB", "sequences to decode: synthetic:SIZE or a text file")
	fs.Uint64Var(&f.dataSeed, "data-seed", 1, "seed of the synthetic corpus")
	fs.StringVar(&f.gemm, "gemm", "auto", "GEMM backend of the model body and the cpu device: auto, openblas, gonum or naive")
	fs.StringVar(&f.mode, "decode", "all", "decode mode: per-token-copy, per-token-view, per-token-prealloc, batch, or all (each in turn)")
	fs.StringVar(&f.device, "device", "cpu", "device: cpu, or cuda in a build with -tags cuda")
	fs.IntVar(&f.passes, "passes", 3, "timed passes over the B sequences, after one warm-up pass")
	fs.BoolVar(&f.probs, "probs", true, "copy each position's V probabilities back, as training does (false: tokens and losses only)")
	fs.StringVar(&f.jsonPath, "json", "", "also write the figures as JSON to this file (one object, or an array for --decode all)")
	fs.StringVar(&f.format, "format", "text", "table format on stdout: text, markdown or csv")
	fs.StringVar(&f.cpuprofile, "cpuprofile", "", "write a CPU profile of the timed decoding to this file")
}

// decodeOptions is a checked `probe decode` command line.
type decodeOptions struct {
	cfg        model.Config // without --checkpoint; with it, only Batch and Context are set (0: the checkpoint's)
	checkpoint string
	modes      []decode.Mode
	all        bool // --decode all: JSON is an array
	format     table.Format
	flags      *decodeCmdFlags
}

// options checks the flags; fs tells which were given. Errors are usage
// errors (exit status 2).
func (f *decodeCmdFlags) options(fs *pflag.FlagSet) (decodeOptions, error) {
	o := decodeOptions{checkpoint: f.checkpoint, flags: f}
	if err := f.shape.checkSigns(); err != nil {
		return o, err
	}
	for _, p := range f.shape.fields() {
		if f.checkpoint != "" && p.v > 0 && p.name != "batch" && p.name != "context" {
			return o, fmt.Errorf("--%s: the model's shape comes from --checkpoint %s; drop --%s", p.name, f.checkpoint, p.name)
		}
	}
	if f.checkpoint != "" {
		if fs != nil && fs.Changed("preset") {
			return o, fmt.Errorf("--preset: the model comes from --checkpoint %s; drop --preset", f.checkpoint)
		}
		o.cfg = model.Config{Context: f.shape.override.Context, Batch: f.shape.override.Batch}
	} else {
		cfg, err := f.shape.config()
		if err != nil {
			return o, fmt.Errorf("--preset: %w", err)
		}
		if err := cfg.Validate(); err != nil {
			return o, err
		}
		o.cfg = cfg
	}
	if f.mode == "all" {
		o.modes, o.all = decode.Modes(), true
	} else {
		m, err := decode.ParseMode(f.mode)
		if err != nil {
			return o, fmt.Errorf("--decode: %w (or all)", err)
		}
		o.modes = []decode.Mode{m}
	}
	if f.passes < 1 || f.passes > 1e6 {
		return o, fmt.Errorf("--passes %d out of range [1, 1e6]", f.passes)
	}
	format, err := table.ParseFormat(f.format)
	if err != nil {
		return o, fmt.Errorf("--format: %w", err)
	}
	o.format = format
	return o, nil
}

func newDecodeCmd(stdout, stderr io.Writer) *cobra.Command {
	var f decodeCmdFlags
	cmd := &cobra.Command{
		Use:   "decode",
		Short: "measure the LM-head decode modes of design note 003 on a device",
		Long: `decode computes the hidden states of B sequences of T positions with the
model's body (model.ForwardBody, on the host), then runs the LM head
(logits = hidden · wteᵀ, softmax, token, loss) on a device in each
decode mode and prints one row per mode (--format text, markdown or csv;
csv has exact byte counts): tokens/s, device syncs and kernel
launches per token, host heap allocations per token, bytes copied to and
from the device to decode the B sequences once, and the device's peak
memory. One Decode call per sequence: the batch mode syncs once per T
positions, the per-token modes once per position.

With --json FILE the same figures go to FILE (written to a temporary file,
then renamed) as one JSON object per mode with the fields tokens_per_sec,
syncs_per_token, launches_per_token, host_allocs_per_token, h2d_bytes,
d2h_bytes (bytes per pass over the B sequences), device_peak_bytes, decode
and device; --decode all writes a JSON array of them, slowest mode first.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := f.options(cmd.Flags())
			if err != nil {
				return usageError{err}
			}
			return runDecode(stdout, stderr, o)
		},
	}
	f.register(cmd.Flags())
	return cmd
}

// decodeRecord is the JSON of one mode's measurement; package schema
// owns the format.
type decodeRecord = schema.DecodeRecord

func recordOf(m decode.Measurement) decodeRecord {
	return decodeRecord{
		TokensPerSec: m.TokensPerSecond, SyncsPerToken: m.SyncsPerToken, LaunchesPerToken: m.LaunchesPerToken,
		HostAllocsPerToken: m.HostAllocsPerToken, H2DBytes: m.H2DBytesPerPass, D2HBytes: m.D2HBytesPerPass,
		DevicePeakBytes: m.DeviceBytesPeak, Decode: m.Mode, Device: m.Device,
	}
}

// runDecode builds the model and the hidden states, measures each mode and
// prints the table.
func runDecode(stdout, stderr io.Writer, o decodeOptions) error {
	f := o.flags
	if err := device.Available(f.device); err != nil {
		return err
	}
	g, err := gemm.Get(f.gemm)
	if err != nil {
		return err
	}
	cfg, params, err := decodeModel(o)
	if err != nil {
		return err
	}
	ds, err := data.Load(f.data, cfg.Vocab, f.dataSeed)
	if err != nil {
		return err
	}
	if ds.Vocab > cfg.Vocab {
		return fmt.Errorf("dataset %s has %d distinct tokens but the model's vocab is %d", ds.Source, ds.Vocab, cfg.Vocab)
	}
	B, T, C := cfg.Batch, cfg.Context, cfg.Dim
	if len(ds.Tokens) < T+1 {
		return fmt.Errorf("dataset %s has %d tokens, fewer than context+1 = %d", ds.Source, len(ds.Tokens), T+1)
	}
	// Hidden states (B, T, C) and targets (B, T): sequence b starts at b*T,
	// wrapping as the trainer's steps do.
	hidden := make([]float32, B*T*C)
	targets := make([]uint16, B*T)
	acts := model.NewActs(cfg, make([]float32, cfg.ActsSize()))
	n := len(ds.Tokens) - T
	for b := 0; b < B; b++ {
		p := (b * T) % n
		model.ForwardBody(g, cfg, params, acts, ds.Tokens[p:p+T])
		copy(hidden[b*T*C:], acts.LNF)
		copy(targets[b*T:], ds.Tokens[p+1:p+T+1])
	}
	acts = nil
	fmt.Fprintf(stderr, "model %v: %s; data %s; gemm %s\n", cfg, modelSource(o, f), ds.Source, g.Name())

	if f.cpuprofile != "" {
		pf, err := os.Create(f.cpuprofile)
		if err != nil {
			return fmt.Errorf("writing cpu profile: %w", err)
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return fmt.Errorf("writing cpu profile %s: %w", f.cpuprofile, err)
		}
		defer pprof.StopCPUProfile()
	}
	var ms []decode.Measurement
	for _, m := range o.modes {
		meas, err := measureMode(f.device, g, m, cfg, params.WTE, hidden, targets, f.probs, f.passes)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "%s: %.0f tokens/s over %d tokens (%.2f s)\n", m, meas.TokensPerSecond, meas.Tokens, meas.Seconds)
		ms = append(ms, meas)
	}
	if err := writeDecodeTable(stdout, ms, f.probs, o.format); err != nil {
		return err
	}
	if f.jsonPath == "" {
		return nil
	}
	recs := make([]decodeRecord, len(ms))
	for i, m := range ms {
		recs[i] = recordOf(m)
	}
	if o.all {
		return writeJSON(nil, f.jsonPath, recs)
	}
	return writeJSON(nil, f.jsonPath, recs[0])
}

func modelSource(o decodeOptions, f *decodeCmdFlags) string {
	if o.checkpoint != "" {
		return "parameters from " + o.checkpoint
	}
	return fmt.Sprintf("fresh parameters (seed %d)", f.seed)
}

// decodeModel returns the configuration and parameters: from the
// checkpoint (with --batch applied; --context, if given, must be the
// checkpoint's, whose position embedding has that many rows), or fresh from
// the seed.
func decodeModel(o decodeOptions) (model.Config, *model.Params, error) {
	if o.checkpoint == "" {
		p := model.NewParams(o.cfg, make([]float32, o.cfg.NumParams()))
		model.Init(o.cfg, p, o.flags.seed)
		return o.cfg, p, nil
	}
	cfg, p, err := trainer.ReadCheckpointParams(o.checkpoint, nil)
	if err != nil {
		return model.Config{}, nil, err
	}
	if o.cfg.Context > 0 && o.cfg.Context != cfg.Context {
		return model.Config{}, nil, fmt.Errorf("--context %d: checkpoint %s holds a model with context %d", o.cfg.Context, o.checkpoint, cfg.Context)
	}
	if o.cfg.Batch > 0 {
		cfg.Batch = o.cfg.Batch
	}
	return cfg, p, nil
}

// measureMode opens the device, makes a decoder in mode m, measures it and
// closes both.
func measureMode(devName string, g gemm.Backend, m decode.Mode, cfg model.Config, wte, hidden []float32, targets []uint16, probs bool, passes int) (meas decode.Measurement, err error) {
	dev, err := device.Open(devName, g, ledger.New().Account(ledger.DeviceBuffers))
	if err != nil {
		return meas, err
	}
	defer func() {
		if cerr := dev.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	d, err := decode.New(dev, m, cfg.Vocab, cfg.Dim, cfg.Context, wte)
	if err != nil {
		return meas, err
	}
	defer func() {
		if cerr := d.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	return decode.MeasureBatch(d, hidden, cfg.Batch, cfg.Context, targets, probs, passes)
}

// writeDecodeTable prints one row per measurement in format f, the first
// row's mode being the baseline of the speedup column. Every figure but
// tokens/s and the speedup is deterministic for a given shape.
func writeDecodeTable(w io.Writer, ms []decode.Measurement, probs bool, f table.Format) error {
	if len(ms) == 0 {
		return errors.New("decode table: no measurements")
	}
	m0 := ms[0]
	back := "tokens, losses and probabilities copied back"
	if !probs {
		back = "tokens and losses copied back"
	}
	t := table.New(fmt.Sprintf("decode on %s: B=%d sequences x T=%d positions, C=%d, V=%d; timed passes %d; %s",
		m0.Device, m0.Sequences, m0.T, m0.C, m0.V, m0.Passes, back),
		table.Column{Name: "mode"},
		table.Column{Name: "tokens/s", Kind: table.Rate},
		table.Column{Name: "vs " + m0.Mode, Kind: table.Float, Decimals: 1, Unit: "×"},
		table.Column{Name: "syncs/token", Kind: table.Rate, Decimals: 4},
		table.Column{Name: "launches/token", Kind: table.Rate, Decimals: 4},
		table.Column{Name: "host allocs/token", Kind: table.Rate, Decimals: 3},
		table.Column{Name: "h2d per pass", Kind: table.Bytes},
		table.Column{Name: "d2h per pass", Kind: table.Bytes},
		table.Column{Name: "device peak", Kind: table.Bytes},
	)
	for _, m := range ms {
		var speedup any
		if m0.TokensPerSecond > 0 {
			speedup = m.TokensPerSecond / m0.TokensPerSecond
		}
		t.Add(m.Mode, m.TokensPerSecond, speedup, m.SyncsPerToken, m.LaunchesPerToken,
			m.HostAllocsPerToken, m.H2DBytesPerPass, m.D2HBytesPerPass, m.DeviceBytesPeak)
	}
	return t.Render(w, f)
}
