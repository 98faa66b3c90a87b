package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"memprobe/internal/atomicfile"
	"memprobe/probe/job"
	"memprobe/probe/ledger"
	"memprobe/report"
	"memprobe/trainer"
	"memprobe/trainer/model"
)

// trainFlags are the command-line options of `probe train`, kept apart from
// the command so that parsing is testable without training.
type trainFlags struct {
	shape                           shapeFlags
	threads                         int
	execs                           int
	data                            string
	dataSeed                        uint64
	steps                           int
	seed                            uint64
	lr, beta1, beta2, eps, wd, clip float32
	gemm                            string
	checkpoint                      string
	resume                          string
	generate                        int
	jsonPath                        string
	logEvery                        int

	phase       phaseFlags
	instruments instrumentFlags
	decode      decodeFlags
}

func (f *trainFlags) register(fs *pflag.FlagSet) {
	f.shape.register(fs, "model preset: seed, tiny or micro", "context length T (0: preset)", "sequences per step B (0: preset)")
	fs.IntVar(&f.threads, "threads", 2, "logical worker threads, 1 to 1024")
	fs.IntVar(&f.execs, "executors", 0, "executors holding one sequence's workspace each (0: min(threads, GOMAXPROCS, batch))")
	fs.StringVar(&f.data, "data", "synthetic:24MB", "training data: synthetic:SIZE or a text file")
	fs.Uint64Var(&f.dataSeed, "data-seed", 1, "seed of the synthetic corpus")
	fs.IntVar(&f.steps, "steps", 20, "optimizer steps")
	fs.Uint64Var(&f.seed, "seed", 1337, "seed of the parameter initialisation and sampling")
	fs.Float32Var(&f.lr, "lr", model.DefaultAdamW.LR, "AdamW learning rate")
	fs.Float32Var(&f.beta1, "beta1", model.DefaultAdamW.Beta1, "AdamW beta1")
	fs.Float32Var(&f.beta2, "beta2", model.DefaultAdamW.Beta2, "AdamW beta2")
	fs.Float32Var(&f.eps, "eps", model.DefaultAdamW.Eps, "AdamW epsilon")
	fs.Float32Var(&f.wd, "weight-decay", model.DefaultAdamW.WeightDecay, "AdamW weight decay")
	fs.Float32Var(&f.clip, "clip", 0, "clip the gradient's global L2 norm to this (0: off)")
	fs.StringVar(&f.gemm, "gemm", "auto", "GEMM backend: auto, openblas, gonum or naive")
	fs.StringVar(&f.checkpoint, "checkpoint", "", "write a checkpoint to this file at the end")
	fs.StringVar(&f.resume, "resume", "", "resume from this checkpoint")
	fs.IntVar(&f.generate, "generate", 0, "generate this many tokens after training")
	fs.StringVar(&f.jsonPath, "json", "", "write the result JSON to this file instead of stdout (- is stdout); the path is checked before training")
	fs.IntVar(&f.logEvery, "log-every", 0, "progress line every N steps (0: about 20 lines)")
	f.phase.register(fs)
	f.instruments.register(fs)
	f.decode.register(fs)
}

// options turns the flags into a job. It parses (a size, a plan name)
// but leaves the ranges to job.Options.Validate, which job.Run calls once.
func (f *trainFlags) options() (job.Options, error) {
	cfg, err := f.shape.config()
	if err != nil {
		return job.Options{}, err
	}
	o := job.Options{
		Trainer: trainer.Options{
			Config:    cfg,
			Optimizer: model.AdamW{LR: f.lr, Beta1: f.beta1, Beta2: f.beta2, Eps: f.eps, WeightDecay: f.wd, ClipNorm: f.clip},
			Threads:   f.threads,
			Executors: f.execs,
			Seed:      f.seed,
			GEMM:      f.gemm,
			Ledger:    ledger.New(),
		},
		Data: f.data, DataSeed: f.dataSeed, Steps: f.steps,
		Checkpoint: f.checkpoint, Resume: f.resume, Generate: f.generate, LogEvery: f.logEvery,
		Preset: f.shape.preset, Plan: f.phase.plan, Phase: f.phase.phase,
	}
	for _, apply := range []func(*job.Options) error{f.phase.apply, f.instruments.apply, f.decode.apply} {
		if err := apply(&o); err != nil {
			return job.Options{}, err
		}
	}
	return o, nil
}

func newTrainCmd(stdout, stderr io.Writer) *cobra.Command {
	var f trainFlags
	cmd := &cobra.Command{
		Use:   "train",
		Short: "train the reference GPT in this process and print one JSON result",
		Long: `train runs one training job in-process: progress lines (step, loss,
tokens/s, RSS) go to stderr, and at the end one JSON object goes to stdout,
or to --json FILE (written to a temporary file, then renamed).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if done, err := f.phase.listPhases(stdout); done {
				return err
			}
			o, err := f.options()
			if err != nil {
				return usageError{err}
			}
			if f.jsonPath == "-" {
				f.jsonPath = ""
			}
			if f.jsonPath != "" {
				if err := atomicfile.CheckWritable(f.jsonPath); err != nil {
					return usageError{fmt.Errorf("--json %w", err)}
				}
			}
			o.CommandLine = os.Args
			crashHook(&o)
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			r, err := job.Run(ctx, o, stderr)
			if oe := (*job.OptionsError)(nil); errors.As(err, &oe) {
				return usageError{err}
			}
			if err != nil {
				return err
			}
			if err := report.WriteSummary(stderr, r); err != nil {
				return err
			}
			return writeJSON(stdout, f.jsonPath, r)
		},
	}
	f.register(cmd.Flags())
	return cmd
}

// crashEnv names the test-only crash hook: with MEMPROBE_TEST_CRASH set
// to "<plan>-<phase>" (the phase as resolved: P6, not after), `probe train`
// of that configuration panics after its first step. The runner's tests
// set it to see a child die mid-run (run_test.go); nothing else should.
const crashEnv = "MEMPROBE_TEST_CRASH"

// crashHook arms the crash of crashEnv when it names o's configuration.
func crashHook(o *job.Options) {
	want := os.Getenv(crashEnv)
	if want == "" || o.Plan == "" || want != o.Plan+"-"+o.Phase {
		return
	}
	o.AfterStep = func(step int) {
		panic(fmt.Sprintf("%s=%s: test crash after step %d", crashEnv, want, step))
	}
}

// writeJSON writes v as indented JSON to path (atomically: temp file then
// rename, so a reader never sees half a report) or to w when path is "".
func writeJSON(w io.Writer, path string, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	if path == "" {
		_, err := w.Write(buf.Bytes())
		return err
	}
	return atomicfile.WriteBytes(path, buf.Bytes())
}
