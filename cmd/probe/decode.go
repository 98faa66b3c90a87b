package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"memprobe/internal/atomicfile"
	"memprobe/internal/table"
	"memprobe/report"
	"memprobe/run/decodebench"
	"memprobe/run/runner"
	"memprobe/schema"
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
	runs       int
	probs      bool
	pinnedHost bool
	jsonPath   string
	format     string
	cpuprofile string
	check      string
}

func (f *decodeCmdFlags) register(fs *pflag.FlagSet) {
	f.shape.register(fs, "model preset: seed, tiny, micro or gpt2-head (not with --checkpoint)",
		"context length T: positions per sequence (0: preset or checkpoint)", "sequences B to decode per pass (0: preset or checkpoint)")
	fs.StringVar(&f.checkpoint, "checkpoint", "", "decode with the parameters of this checkpoint (default: fresh weights from --seed)")
	fs.Uint64Var(&f.seed, "seed", 1337, "seed of the parameter initialisation without --checkpoint")
	fs.StringVar(&f.data, "data", "synthetic:1MB", "sequences to decode: synthetic:SIZE or a text file")
	fs.Uint64Var(&f.dataSeed, "data-seed", 1, "seed of the synthetic corpus")
	fs.StringVar(&f.gemm, "gemm", "auto", gemmHelp("GEMM backend of the model body and the cpu device"))
	fs.StringVar(&f.mode, "decode", "all", "decode mode: per-token-copy, per-token-view, per-token-prealloc, batch, or all (each in turn)")
	fs.StringVar(&f.device, "device", "cpu", "device: cpu, or cuda (needs the NVIDIA driver and a GPU)")
	fs.IntVar(&f.passes, "passes", 3, "timed passes over the B sequences, after one warm-up pass")
	fs.IntVar(&f.runs, "runs", 1, "measure in this many fresh processes, one after another, and pool them: independent samples for probe diff")
	fs.BoolVar(&f.probs, "probs", true, "copy each position's V probabilities back, as training does (false: tokens and losses only)")
	fs.BoolVar(&f.pinnedHost, "pinned-host", true, "in the per-token-prealloc and batch modes, copy through page-locked host buffers the device allocates (cuda), straight by DMA (false: Go slices through the device's pinned staging, the path before them; no effect on cpu)")
	fs.StringVar(&f.jsonPath, "json", "", `also write the figures as JSON to this file (one object, or an array for --decode all); "-" writes the JSON to stdout and the tables to stderr`)
	fs.StringVar(&f.format, "format", "text", "table format on stdout: text, markdown or csv")
	fs.StringVar(&f.cpuprofile, "cpuprofile", "", "write a CPU profile of the timed decoding to this file")
	fs.StringVar(&f.check, "check", "", "also decode the first sequences of each mode on this reference device (cpu) and compare probabilities, losses and tokens within stated tolerances; exit 1 if they disagree")
}

// decodeOptions is a checked `probe decode` command line.
type decodeOptions struct {
	bench    decodebench.Options
	all      bool // --decode all: JSON is an array
	format   table.Format
	jsonPath string
	// runs > 1 measures in that many child processes (runner.RunDecode),
	// each given childArgs: this command line's flags but those the
	// parent keeps (--runs, --json, --format).
	runs      int
	childArgs []string
}

// checkDecodeOutputs refuses, before any work, an output that could not
// be written (--json, --cpuprofile) or that would replace an input
// (--checkpoint, a --data file) or the other output.
func checkDecodeOutputs(f *decodeCmdFlags) error {
	outs := []atomicfile.Path{{Flag: "--json", Path: f.jsonPath}, {Flag: "--cpuprofile", Path: f.cpuprofile}}
	for _, o := range outs {
		if o.Path != "" && o.Path != "-" {
			if err := atomicfile.CheckWritable(o.Path); err != nil {
				return fmt.Errorf("%s %w", o.Flag, err)
			}
		}
	}
	if f.cpuprofile == "-" {
		return fmt.Errorf("--cpuprofile -: a profile is binary; name a file")
	}
	ins := []atomicfile.Path{{Flag: "--checkpoint", Path: f.checkpoint}}
	if !strings.HasPrefix(f.data, "synthetic:") {
		ins = append(ins, atomicfile.Path{Flag: "--data", Path: f.data})
	}
	return atomicfile.CheckDistinct(outs, ins)
}

// options checks the flags; fs tells which were given. Errors are usage
// errors (exit status 2).
func (f *decodeCmdFlags) options(fs *pflag.FlagSet) (decodeOptions, error) {
	o := decodeOptions{jsonPath: f.jsonPath, bench: decodebench.Options{
		Preset: f.shape.preset, Checkpoint: f.checkpoint, Seed: f.seed, Data: f.data, DataSeed: f.dataSeed, GEMM: f.gemm,
		Device: f.device, Passes: f.passes, Probs: f.probs, PinnedHost: f.pinnedHost, CPUProfile: f.cpuprofile, Check: f.check,
	}}
	if f.check != "" && f.check != "cpu" {
		return o, fmt.Errorf("--check %s: the only reference device is cpu", f.check)
	}
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
		o.bench.Config = model.Config{Context: f.shape.override.Context, Batch: f.shape.override.Batch}
	} else {
		cfg, err := f.shape.config()
		if err != nil {
			return o, fmt.Errorf("--preset: %w", err)
		}
		if err := cfg.Validate(); err != nil {
			return o, err
		}
		o.bench.Config = cfg
	}
	if f.mode == "all" {
		o.bench.Modes, o.all = decode.Modes(), true
	} else {
		m, err := decode.ParseMode(f.mode)
		if err != nil {
			return o, fmt.Errorf("--decode: %w (or all)", err)
		}
		o.bench.Modes = []decode.Mode{m}
	}
	if f.passes < 1 || f.passes > 1e6 {
		return o, fmt.Errorf("--passes %d out of range [1, 1e6]", f.passes)
	}
	format, err := table.ParseFormat(f.format)
	if err != nil {
		return o, fmt.Errorf("--format: %w", err)
	}
	o.format = format
	if err := checkDecodeOutputs(f); err != nil {
		return o, err
	}
	// The backend and the device are the command line's too: a name this
	// build lacks is a usage error (exit 2), as in probe train. A device
	// this build has but this machine cannot open (cuda without a driver)
	// fails later, at the device (exit 1).
	if err := gemm.Check(f.gemm); err != nil {
		return o, fmt.Errorf("--gemm: %w", err)
	}
	if err := device.Check(f.device); err != nil {
		return o, fmt.Errorf("--device: %w", err)
	}
	if f.runs < 1 || f.runs > maxDecodeRuns {
		return o, fmt.Errorf("--runs %d out of range [1, %d]", f.runs, maxDecodeRuns)
	}
	o.runs = f.runs
	if f.runs > 1 {
		if f.cpuprofile != "" {
			return o, fmt.Errorf("--cpuprofile with --runs %d: a profile is of one process; profile one run", f.runs)
		}
		o.childArgs = decodeChildArgs(fs)
	}
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
launches per token, the host's time blocked in those syncs per token,
the share of the wall time the device was busy (cpu: its stream thread
running commands; cuda: timed by CUDA events), host heap allocations per
token, bytes copied to and from the device to decode the B sequences
once, and the device's peak memory. One Decode call per sequence: the batch mode syncs once per T
positions, the per-token modes once per position.

With --json FILE the same figures go to FILE (written to a temporary file,
then renamed) as a decode result (schema memprobe.decode/v1): one JSON
object per mode with the fields tokens_per_sec (and each pass's in
tokens_per_sec_passes), syncs_per_token, launches_per_token,
host_wait_ns_per_token, device_busy_ns_per_token and device_busy_pct
(absent where the device cannot time its work), host_allocs_per_token,
h2d_bytes, d2h_bytes (bytes per pass over the B sequences),
device_peak_bytes, decode and device, then the config, environment,
command_line and start_time that produced them (config.pinned_host says
whether the mode's host buffers were page-locked: --pinned-host, in the
per-token-prealloc and batch modes, on a device that has such memory);
--decode all writes a JSON array of them, slowest mode first. probe report FILE prints the tables
again; probe diff BASE HEAD compares two, mode by mode.

The passes of one process share its heap, caches and moment on the
machine, so their spread understates the spread between runs. --runs N
measures N times, each in a fresh process (this program run again with
the same flags), one after another, and pools them: each figure is the
median of the runs', with each run's in tokens_per_sec_runs,
host_wait_ns_per_token_runs, device_busy_ns_per_token_runs and
device_busy_pct_runs, and probe diff compares those runs as independent
samples. probe merge pools decode results measured separately the same
way.`,
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

// runDecode measures each mode (decodebench.Run, progress on stderr),
// prints the tables on stdout (report.WriteDecode, as probe report prints
// a decode result) and writes the JSON.
func runDecode(stdout, stderr io.Writer, o decodeOptions) error {
	var recs []schema.DecodeRecord
	if o.runs > 1 {
		var err error
		if recs, err = runner.RunDecode(stderr, o.childArgs, o.runs); err != nil {
			return err
		}
	} else {
		start := time.Now()
		ms, err := decodebench.Run(o.bench, stderr)
		if err != nil {
			return err
		}
		recs = o.bench.Records(ms, os.Args, start)
	}
	// With --json -, the JSON goes to stdout and the tables to stderr, as
	// probe exec does.
	tablesTo := stdout
	if o.jsonPath == "-" {
		tablesTo = stderr
	}
	if err := report.WriteDecode(tablesTo, recs, o.format); err != nil {
		return err
	}
	if o.jsonPath != "" {
		// One record, or an array for --decode all.
		var v any = recs[0]
		if o.all {
			v = recs
		}
		path := o.jsonPath
		if path == "-" {
			path = ""
		}
		if err := writeJSON(stdout, path, v); err != nil {
			return err
		}
	}
	for _, r := range recs {
		if c := r.Check; c != nil && !c.Pass {
			return fmt.Errorf("decode check: %s on %s disagrees with %s: max |Δp| %.3g (tolerance %g), max |Δloss| rel %.3g (%g), %d tokens differ (%d at near-ties)",
				r.Decode, r.Device, c.Against, c.MaxProbDiff, c.ProbTol, c.MaxLossDiff, c.LossTol, c.TokensDiffer, c.TokensNearTie)
		}
	}
	return nil
}
