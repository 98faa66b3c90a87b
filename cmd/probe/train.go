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
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"memprobe/instrument/procfs"
	"memprobe/internal/atomicfile"
	"memprobe/ledger"
	"memprobe/report"
	"memprobe/run/job"
	"memprobe/trainer"
	"memprobe/trainer/data"
	"memprobe/trainer/gemm"
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
	format                          string
	logEvery                        int
	memLimit                        string

	phase       phaseFlags
	instruments instrumentFlags
	decode      decodeFlags

	fs *pflag.FlagSet // tells which flags were given
}

func (f *trainFlags) register(fs *pflag.FlagSet) {
	f.fs = fs
	f.shape.register(fs, "model preset: seed, tiny, micro or gpt2-head", "context length T (0: preset)", "sequences per step B (0: preset)")
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
	fs.StringVar(&f.gemm, "gemm", "auto", gemmHelp("GEMM backend"))
	fs.StringVar(&f.checkpoint, "checkpoint", "", "write a checkpoint to this file at the end")
	fs.StringVar(&f.resume, "resume", "", "resume from this checkpoint")
	fs.IntVar(&f.generate, "generate", 0, "generate this many tokens after training")
	fs.StringVar(&f.jsonPath, "json", "", "write the result JSON to this file (- is stdout); the path is checked before training")
	fs.StringVar(&f.format, "format", "", "what stdout gets: text (the summary's tables) or json (the result); default json, text when stdout is a terminal")
	fs.IntVar(&f.logEvery, "log-every", 0, "progress line every N steps (0: about 20 lines)")
	fs.StringVar(&f.memLimit, "mem-limit", "", "refuse a configuration predicted above this, set the Go memory limit to 90 % of it, and stop training (a partial result) once RSS passes it (e.g. 8GiB; default: no limit beyond refusing what is predicted above MemAvailable)")
	f.phase.register(fs)
	f.instruments.register(fs)
	f.decode.register(fs)
}

// options turns the flags into a job. It parses (a size, a plan name)
// but leaves the ranges to job.Options.Validate, which job.Run calls once;
// what it checks itself is what Validate cannot see: a value given
// explicitly that the options would read as "unset" (--gemm "", whose ""
// means auto), and a --warmup-steps given explicitly that leaves no step
// measured (job.Run shortens the default warm-up to fit --steps).
func (f *trainFlags) options() (job.Options, error) {
	cfg, err := f.shape.config()
	if err != nil {
		return job.Options{}, err
	}
	if f.changed("gemm") && f.gemm == "" {
		return job.Options{}, fmt.Errorf(`--gemm "": want auto or one of %s`, strings.Join(gemm.Names(), ", "))
	}
	if w := f.instruments.warmup; f.changed("warmup-steps") && w > 0 && f.steps >= 1 && w >= f.steps {
		return job.Options{}, fmt.Errorf("--warmup-steps %d must be below --steps %d: the per-step costs are measured over the steps after the warm-up", w, f.steps)
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
	if f.memLimit != "" {
		n, err := data.ParseSize(f.memLimit)
		if err != nil {
			return job.Options{}, fmt.Errorf("--mem-limit: %w", err)
		}
		if n <= 0 {
			return job.Options{}, fmt.Errorf("--mem-limit %s must be positive", f.memLimit)
		}
		o.MemLimit = n
	}
	for _, apply := range []func(*job.Options) error{f.phase.apply, f.instruments.apply, f.decode.apply} {
		if err := apply(&o); err != nil {
			return job.Options{}, err
		}
	}
	return o, nil
}

// changed reports whether the flag was given on the command line.
func (f *trainFlags) changed(name string) bool { return f.fs != nil && f.fs.Changed(name) }

// outputs are the files train writes, with their flags: --json (unless it
// is standard output), the checkpoint and the profiles.
func (f *trainFlags) outputs(o *job.Options) []atomicfile.Path {
	out := []atomicfile.Path{{Flag: "--json", Path: f.jsonPath}}
	return append(out, o.Outputs()...)
}

func newTrainCmd(stdout, stderr io.Writer) *cobra.Command {
	var f trainFlags
	cmd := &cobra.Command{
		Use:   "train",
		Short: "train the reference GPT in this process and print its tables or one JSON result",
		Long:  trainLong,
		Args:  noArgs,
		RunE:  func(*cobra.Command, []string) error { return runTrain(stdout, stderr, &f) },
	}
	f.register(cmd.Flags())
	return cmd
}

// trainLong is probe train's help: where its output goes, what stops
// it, and how its files are written.
const trainLong = `train runs one training job in-process: progress lines (step, loss,
tokens/s, RSS) go to stderr, and at the end the summary's tables go to
stderr and one JSON object to stdout, or to --json FILE (written to a
temporary file, then renamed). On a terminal stdout gets the tables and
no JSON (--format json or --json - prints it there; --format text prints
the tables to stdout anywhere).

Before anything is built, the configuration's peak RSS is predicted by
the analytical model; one above --mem-limit or the memory available is
refused with the figure. Ctrl-C or SIGTERM stops the training at the next
step boundary: the result of the steps that ran is written, marked
interrupted, and the exit status is 130 (SIGINT) or 143 (SIGTERM). Past
--mem-limit the training stops the same way and exits 1.

Profiles (--cpuprofile, --memprofile, --allocprofile, --mutexprofile,
--blockprofile, --profile-dir) are written with the result, a partial
one included, each through a temporary file beside it: a run that fails
leaves the files they name as they were. Every output is checked before
anything is built: it must be writable and name no input (--resume, a
--data file) and no other output.`

// runTrain is probe train with the flags f: the outputs checked before
// anything is built, the job run, the summary's tables and the JSON
// written where the flags say.
func runTrain(stdout, stderr io.Writer, f *trainFlags) error {
	if done, err := f.phase.listPhases(stdout); done {
		return err
	}
	o, err := f.options()
	if err != nil {
		return usageError{err}
	}
	if err := checkDevice(&o); err != nil {
		return err
	}
	format, err := f.stdoutFormat(stdout)
	if err != nil {
		return usageError{err}
	}
	if f.jsonPath == "-" {
		f.jsonPath = ""
	}
	// No output may replace an input or another output (the
	// checkpoint overwritten by the JSON, the data file by a
	// profile); job.Run checks the rest of the files.
	if err := atomicfile.CheckDistinct(f.outputs(&o), o.Inputs()); err != nil {
		return usageError{err}
	}
	if f.jsonPath != "" {
		if err := atomicfile.CheckWritable(f.jsonPath); err != nil {
			return usageError{fmt.Errorf("--json %w", err)}
		}
	}
	o.CommandLine = os.Args
	crashHook(&o)
	o.MemHardStop = func(e *job.MemLimitError) {
		fmt.Fprintln(stderr, "probe:", e)
		os.Exit(1)
	}
	ctx, stop := notifyContext()
	defer stop()
	r, err := job.Run(ctx, o, stderr)
	if oe := (*job.OptionsError)(nil); errors.As(err, &oe) {
		return usageError{err}
	}
	if r == nil {
		return stoppedExit(err, "")
	}
	tables := stderr
	if format == "text" {
		tables = stdout
	}
	if werr := report.WriteSummary(tables, r); werr != nil && err == nil {
		return werr
	}
	// The summary's tables are garbage now: returned to the
	// system, their pages make room for the JSON's, so that
	// writing it does not raise VmHWM past the peak_rss_bytes it
	// reports (job.Run did the same before the summary).
	debug.FreeOSMemory()
	where := "the tables above (--json FILE writes the result)"
	switch {
	case f.jsonPath != "":
		where = f.jsonPath
	case format == "json":
		where = "stdout"
	}
	if f.jsonPath != "" || format == "json" {
		if werr := writeJSON(stdout, f.jsonPath, r); werr != nil {
			return werr
		}
	} else if f.format == "" {
		fmt.Fprintln(stderr, "probe train: stdout is a terminal: the tables, not the result JSON (--format json or --json FILE writes it)")
	}
	return stoppedExit(err, where)
}

// stdoutFormat is what stdout gets, from --format and --json: "json" (the
// result) or "text" (the summary's tables). Unset, it is json unless
// stdout is a terminal and --json names no file or "-": a person at a
// terminal reads tables, a pipe (probe run's children write to --json
// anyway) gets JSON.
func (f *trainFlags) stdoutFormat(stdout io.Writer) (string, error) {
	switch f.format {
	case "json", "text":
	case "":
		if f.jsonPath == "" && stdoutIsTerminal(stdout) {
			return "text", nil
		}
		return "json", nil
	default:
		return "", fmt.Errorf("--format %q: want text or json", f.format)
	}
	if f.format == "text" && f.jsonPath == "-" {
		return "", fmt.Errorf("--format text and --json -: stdout gets the tables or the JSON, not both")
	}
	if f.jsonPath == "-" {
		return "json", nil
	}
	return f.format, nil
}

// stdoutIsTerminal is isTerminal, a variable so that a test can be a
// terminal.
var stdoutIsTerminal = isTerminal

// signalError is the cause of a context ended by a signal: the exit
// status is 128 plus the signal's number (130 for SIGINT, 143 for
// SIGTERM), as a shell reports a process killed by it.
type signalError struct{ sig syscall.Signal }

func (e signalError) Error() string { return unix.SignalName(e.sig) + " received" }
func (e signalError) ExitCode() int { return 128 + int(e.sig) }

// notifyContext is a context that SIGINT or SIGTERM cancels with a
// signalError cause. After the first signal the default action is
// restored, so that a second Ctrl-C kills the process at once. stop
// releases the signals and the goroutine.
func notifyContext() (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case s := <-ch:
			signal.Stop(ch)
			sig, _ := s.(syscall.Signal)
			cancel(signalError{sig})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		<-exited
		cancel(nil)
	}
}

// exitError carries an exit status other than 1 for main.
type exitError struct {
	err  error
	code int
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }
func (e exitError) ExitCode() int { return e.code }

// stoppedExit is the command's error for job.Run's err: a job stopped by
// a signal exits 128+signal, one stopped by the memory watchdog 1; where
// names the partial result ("" when there is none).
func stoppedExit(err error, where string) error {
	var st *job.StoppedError
	if !errors.As(err, &st) {
		return err
	}
	msg := err.Error()
	if where != "" {
		msg += "; the result of the steps that ran (marked interrupted) is in " + where
	} else {
		msg += "; no result"
	}
	var sig signalError
	if errors.As(err, &sig) {
		return exitError{errors.New(msg), sig.ExitCode()}
	}
	return errors.New(msg)
}

// crashEnv names the test-only crash hook: with MEMPROBE_TEST_CRASH set
// to "<plan>-<phase>" (the phase as resolved: P6, not after), `probe train`
// of that configuration panics after its first step. The runner's tests
// set it to see a child die mid-run (run_test.go); nothing else should.
// hangEnv is its twin: the configuration it names blocks for ever after
// its first step, deaf to its context (a wedged child, for the tests of
// timeouts and interruptions: reliability_test.go). growEnv's
// configuration leaks 4 MiB a step until its RSS is past
// --mem-limit (the memory watchdog's test).
const (
	crashEnv = "MEMPROBE_TEST_CRASH"
	hangEnv  = "MEMPROBE_TEST_HANG"
	growEnv  = "MEMPROBE_TEST_GROW"
)

// crashHook arms the crash of crashEnv or the hang of hangEnv when it
// names o's configuration.
func crashHook(o *job.Options) {
	if o.Plan == "" {
		return
	}
	name := o.Plan + "-" + o.Phase
	if want := os.Getenv(crashEnv); want == name {
		o.AfterStep = func(step int) {
			panic(fmt.Sprintf("%s=%s: test crash after step %d", crashEnv, want, step))
		}
	}
	if os.Getenv(growEnv) == name && o.MemLimit > 0 {
		var leak [][]byte
		limit := uint64(o.MemLimit)
		o.AfterStep = func(int) {
			if st, err := procfs.ReadStatus(procfs.Self); err == nil && st.VmRSSBytes > limit {
				return
			}
			b := make([]byte, 4<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			leak = append(leak, b)
		}
	}
	if os.Getenv(hangEnv) == name {
		o.AfterStep = func(step int) {
			fmt.Fprintf(os.Stderr, "%s=%s: hanging after step %d\n", hangEnv, name, step)
			for {
				time.Sleep(time.Hour)
			}
		}
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
