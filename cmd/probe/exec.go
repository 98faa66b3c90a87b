package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"memprobe/internal/atomicfile"
	"memprobe/internal/table"
	"memprobe/probe/outside"
	"memprobe/schema"
)

// outsideFlags are the options of `probe exec` and `probe attach`, kept
// apart from the commands so that parsing is testable.
type outsideFlags struct {
	interval   time.Duration
	smapsEvery time.Duration
	jsonPath   string
	outDir     string
	format     string
	pprof      string
	children   bool
	duration   time.Duration // attach only
	gpu        bool
}

func (f *outsideFlags) register(fs *pflag.FlagSet) {
	fs.DurationVar(&f.interval, "interval", outside.DefaultInterval, "sampling period of RSS, VSZ and the /proc fields (about 1 µs of the probe's time per sample, status every 10th, smaps_rollup at most 0.25 % of wall time)")
	fs.DurationVar(&f.smapsEvery, "smaps-every", outside.DefaultSmapsEvery, "least time between full smaps walks (taken at new RSS highs, when RSS moves, and at the end)")
	fs.StringVar(&f.jsonPath, "json", "", "write the result (schema memprobe.train/v3, kind process) to this file; - is stdout (the report then goes to stderr)")
	fs.StringVar(&f.outDir, "out-dir", "", "write the raw smaps walks at the peak and the end (and --pprof's heap profile) to this directory")
	fs.StringVar(&f.format, "format", "text", "report format: text or markdown")
	fs.StringVar(&f.pprof, "pprof", "", "a Go program's net/http/pprof heap URL (http://127.0.0.1:6060/debug/pprof/heap): fetched at the peak into --out-dir")
	fs.BoolVar(&f.children, "children", false, "watch the process's descendants too (their peaks and the tree's summed RSS)")
	fs.BoolVar(&f.gpu, "gpu", true, "where NVML is (an NVIDIA driver), also read the process's GPU memory and its GPUs' utilization every 100 ms")
}

// options checks the flags and turns them into outside.Options and the
// report's format; everything it refuses is a usage error.
func (f *outsideFlags) options() (outside.Options, table.Format, error) {
	var fmtOut table.Format
	switch f.format {
	case "text", "markdown":
		fmtOut = table.Format(f.format)
	default:
		return outside.Options{}, "", fmt.Errorf("--format %q: want text or markdown", f.format)
	}
	o := outside.Options{Interval: f.interval, SmapsEvery: f.smapsEvery, Children: f.children, OutDir: f.outDir, PprofURL: f.pprof, CommandLine: os.Args, NoGPU: !f.gpu}
	if f.interval <= 0 {
		return o, "", fmt.Errorf("--interval %v: must be positive", f.interval)
	}
	if f.smapsEvery <= 0 {
		return o, "", fmt.Errorf("--smaps-every %v: must be positive", f.smapsEvery)
	}
	if f.duration < 0 {
		return o, "", fmt.Errorf("--duration %v: must not be negative", f.duration)
	}
	if err := o.Validate(); err != nil {
		return o, "", fmt.Errorf("--%w", err)
	}
	if f.jsonPath != "" && f.jsonPath != "-" {
		if err := atomicfile.CheckWritable(f.jsonPath); err != nil {
			return o, "", fmt.Errorf("--json %w", err)
		}
	}
	if f.outDir != "" {
		if err := os.MkdirAll(f.outDir, 0o755); err != nil {
			return o, "", fmt.Errorf("--out-dir %s: %w", f.outDir, errors.Unwrap(err))
		}
		if err := atomicfile.CheckWritable(filepath.Join(f.outDir, "smaps-peak.txt")); err != nil {
			return o, "", fmt.Errorf("--out-dir %w", err)
		}
	}
	return o, fmtOut, nil
}

// exitStatus is the watched program's non-zero exit status: probe exec
// exits with it.
type exitStatus struct {
	code int
	what string
}

func (e exitStatus) Error() string { return e.what }
func (e exitStatus) ExitCode() int { return e.code }

func newExecCmd(stdout, stderr io.Writer) *cobra.Command {
	var f outsideFlags
	cmd := &cobra.Command{
		Use:   "exec [flags] -- CMD [ARGS...]",
		Short: "run any program and explain its memory from outside: timeline, stacks, arenas, diagnosis",
		Long: `exec starts CMD, samples its memory from /proc until it exits (with
--children, its descendants too), forwards SIGINT, SIGTERM, SIGHUP and
SIGQUIT to it, prints the report (stdout, or stderr with --json -) and exits
with CMD's own status (128 + the signal when a signal killed it). See
docs/exec.md.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{errors.New("exec: no program: probe exec [flags] -- CMD [ARGS...]")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o, format, err := f.options()
			if err != nil {
				return usageError{err}
			}
			// The program's stderr and the probe's progress lines share
			// one writer, from two goroutines. A file is passed to the
			// program as it is (its stderr stays a terminal, or whatever
			// it is); another writer is serialised.
			if _, ok := stderr.(*os.File); !ok {
				stderr = &lockedWriter{w: stderr}
			}
			o.Progress = stderr
			// Catch the signals before the program starts, so none is lost.
			sigs := make(chan os.Signal, 4)
			signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
			defer signal.Stop(sigs)
			s, err := outside.Exec(outside.ExecOptions{Options: o, Args: args, Stdout: stdout, Stderr: stderr})
			if err != nil {
				return err
			}
			done := make(chan struct{})
			defer close(done)
			go func() {
				for {
					select {
					case sig := <-sigs:
						_ = s.Signal(sig)
					case <-done:
						return
					}
				}
			}()
			r, err := s.Wait(context.Background())
			if err != nil {
				return err
			}
			if err := writeOutside(stdout, stderr, f.jsonPath, format, r); err != nil {
				return err
			}
			if c := r.Process.ExitCode; c != nil && *c != 0 {
				what := fmt.Sprintf("exec: %s exited with status %d", args[0], *c)
				if by := outside.KilledBy(r.Process); by != "" {
					what = fmt.Sprintf("exec: %s was killed by %s", args[0], by)
				}
				return exitStatus{*c, what}
			}
			return nil
		},
	}
	f.register(cmd.Flags())
	// Everything after the program's name is the program's.
	cmd.Flags().SetInterspersed(false)
	return cmd
}

// writeOutside prints the report and writes the JSON: with --json -, the
// JSON goes to stdout and the report to stderr.
func writeOutside(stdout, stderr io.Writer, jsonPath string, format table.Format, r *schema.Result) error {
	reportTo := stdout
	if jsonPath == "-" {
		reportTo = stderr
	}
	if err := outside.Render(reportTo, r, format); err != nil {
		return err
	}
	switch jsonPath {
	case "":
		return nil
	case "-":
		return writeJSON(stdout, "", r)
	}
	return schema.WriteResult(jsonPath, r)
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
