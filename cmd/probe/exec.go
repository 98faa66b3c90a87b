package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"memprobe/internal/atomicfile"
	"memprobe/internal/table"
	"memprobe/outside"
	"memprobe/outside/sites"
	"memprobe/report/process"
	"memprobe/schema"
)

// outsideFlags are the options of `probe exec` and `probe attach`, kept
// apart from the commands so that parsing is testable.
type outsideFlags struct {
	fs         *pflag.FlagSet // to tell a flag given from its default
	interval   time.Duration
	smapsEvery time.Duration
	jsonPath   string
	outDir     string
	format     string
	pprof      string
	children   bool
	live       bool
	duration   time.Duration // attach only
	gpu        bool
	force      bool
	sites      outside.SitesOptions // exec only
}

func (f *outsideFlags) register(fs *pflag.FlagSet) {
	f.fs = fs
	fs.DurationVar(&f.interval, "interval", outside.DefaultInterval, "sampling period of RSS, VSZ and the status fields while they move (it doubles, up to 100 ms, while RSS and VmHWM stay flat; smaps_rollup at most every 10th sample and 0.25 % of wall time); watching sleep 1 cost the probe 4.4 ms of CPU on a 2-core AMD EPYC VM: the report's Cost line gives each run's")
	fs.DurationVar(&f.smapsEvery, "smaps-every", outside.DefaultSmapsEvery, "least time between full smaps walks taken when RSS moves (a new high 10 % above the highest walk is walked as soon as a sample reads it, the walks' CPU within 5 % of wall time, 25 % in the first second; and, where the watch ends before the process does (attach), one at the end); not given, it is the interval where that is longer")
	fs.StringVar(&f.jsonPath, "json", "", "write the result (schema memprobe.train/v3, kind process) to this file; - is stdout, which then carries the JSON only: the report goes to stderr, and so does exec's program's own stdout")
	fs.StringVar(&f.outDir, "out-dir", "", "write the raw smaps walks at the peak and the end, --pprof's heap profile and exec --sites' profiles to this directory; an earlier run's files there are not replaced without --force")
	fs.StringVar(&f.format, "format", "text", "report format: text or markdown")
	fs.StringVar(&f.pprof, "pprof", "", "a Go program's net/http/pprof heap URL (http://127.0.0.1:6060/debug/pprof/heap): fetched at the peak into --out-dir")
	fs.BoolVar(&f.children, "children", false, "watch the process's descendants too: a table of each one's peak RSS, command and lifetime, the tree's summed RSS as the headline, the largest named in the diagnosis, and the largest at each read walked at its new highs for a breakdown of its own (read every interval, a fifth of it in the first second, within 2 % of wall time; those reaped between two reads are counted as missed)")
	fs.BoolVar(&f.live, "live", false, "a live view on stderr, refreshed every second while the program runs: RSS and its parts, its growth rate, the last walk's largest parts (and with --children the tree, with exec --sites the top allocation sites in use); q quits (exec: sends the program SIGINT; attach: ends the watch); where stdin is a terminal it is read for q and exec's program gets /dev/null")
	fs.BoolVar(&f.gpu, "gpu", true, "where NVML is (an NVIDIA driver), also read the process's GPU memory and its GPUs' utilization every 100 ms")
	fs.BoolVar(&f.force, "force", false, "replace the files an earlier run wrote to --out-dir (without it the command refuses before starting anything)")
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
	o := outside.Options{Interval: f.interval, SmapsEvery: f.smapsEvery, Children: f.children, OutDir: f.outDir, PprofURL: f.pprof, CommandLine: os.Args, NoGPU: !f.gpu, Sites: f.sites}
	if f.interval <= 0 {
		return o, "", fmt.Errorf("--interval %v: must be positive", f.interval)
	}
	if f.smapsEvery <= 0 {
		return o, "", fmt.Errorf("--smaps-every %v: must be positive", f.smapsEvery)
	}
	if f.fs != nil && !f.fs.Changed("smaps-every") {
		// Not given: outside's default, which follows a long --interval
		// instead of refusing it for a flag the user never set.
		o.SmapsEvery = 0
	}
	if f.fs != nil && f.fs.Changed("sites-rate") && f.sites.Rate == 0 {
		return o, "", fmt.Errorf("--%w", sites.CheckRate(0)) // given: not outside's 0 for the default
	}
	if f.duration < 0 {
		return o, "", fmt.Errorf("--duration %v: must not be negative", f.duration)
	}
	if f.outDir == "" {
		// Refused rather than a default directory: files the user did
		// not ask for, which a second run would then refuse to replace.
		switch {
		case f.sites.Enabled:
			return o, "", fmt.Errorf("--sites needs --out-dir DIR: where the profiles go (%s)", strings.Join(sites.ProfileNames(), ", "))
		case f.pprof != "":
			return o, "", fmt.Errorf("--pprof needs --out-dir DIR: where the heap profile goes (heap-peak.pprof)")
		}
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
		if there := f.outputsThere(); len(there) > 0 && !f.force {
			return o, "", fmt.Errorf("--out-dir %s: holds an earlier run's %s: --force replaces them, or name another directory", f.outDir, strings.Join(there, ", "))
		}
	}
	return o, fmtOut, nil
}

// outputsThere are the files this run would write to --out-dir that are
// already there: an earlier run's profiles, which a rerun into the same
// directory would replace (the one to compare with, say).
func (f *outsideFlags) outputsThere() []string {
	names := []string{"smaps-peak.txt", "smaps-end.txt"}
	if f.pprof != "" {
		names = append(names, "heap-peak.pprof")
	}
	if f.sites.Enabled {
		names = append(names, sites.ProfileNames()...)
	}
	var there []string
	for _, n := range names {
		if _, err := os.Lstat(filepath.Join(f.outDir, n)); err == nil {
			there = append(there, n)
		}
	}
	return there
}

// exitStatus is the watched program's non-zero exit status: probe exec
// exits with it.
type exitStatus struct {
	code int
	what string
}

func (e exitStatus) Error() string { return e.what }
func (e exitStatus) ExitCode() int { return e.code }

// programStatus says how the program ended, for a message: "/bin/sh
// exited with status 3", "/bin/sh was killed by SIGTERM (signal 15)".
func programStatus(name string, p *schema.Process) string {
	switch {
	case p == nil || p.ExitCode == nil:
		return name + " exited with an unknown status"
	case outside.KilledBy(p) != "":
		return fmt.Sprintf("%s was killed by %s", name, outside.KilledBy(p))
	}
	return fmt.Sprintf("%s exited with status %d", name, *p.ExitCode)
}

// outputError is exec's failure to write its output (--json, the report)
// after the program ran. It says the program's status too, which would
// otherwise be lost, and exits with it where that is not 0 (the status
// probe exec promises, and a failure either way); a program that
// succeeded gives 1, the probe's own error. docs/exec.md.
type outputError struct {
	status string // programStatus
	code   int    // the program's exit status
	err    error
}

func (e outputError) Error() string {
	return fmt.Sprintf("exec: %s, but its result was not all written: %v", e.status, e.err)
}

func (e outputError) Unwrap() error { return e.err }

func (e outputError) ExitCode() int {
	if e.code != 0 {
		return e.code
	}
	return 1
}

var catchSIGPIPE sync.Once

// survivePipe makes a write to a closed stdout or stderr fail with EPIPE
// instead of killing the probe: Go's runtime kills a program that writes
// to a broken pipe on fd 1 or 2 unless it has asked for SIGPIPE, and the
// probe must still write --json and exit with the program's status when
// its reader went away (probe exec ... | head). signal.Notify, not
// signal.Ignore: an ignored signal stays ignored across execve, so the
// program (and its children) would lose their SIGPIPE; a caught one is
// reset to the default by execve. The channel is never read: a signal
// that finds it full is dropped, which is all that is wanted.
func survivePipe() {
	catchSIGPIPE.Do(func() { signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE) })
}

func newExecCmd(stdout, stderr io.Writer) *cobra.Command {
	var f outsideFlags
	cmd := &cobra.Command{
		Use:   "exec [flags] -- CMD [ARGS...]",
		Short: "run any program and explain its memory from outside: timeline, stacks, arenas, diagnosis",
		Long: `exec starts CMD, samples its memory from /proc until it exits (with
--children, its descendants too), forwards SIGINT, SIGTERM, SIGHUP and
SIGQUIT to it, writes --json, prints the report (stdout, or stderr with
--json -, which also sends CMD's own stdout to stderr so that stdout carries
the JSON alone) and exits with CMD's own status (128 + the signal when a
signal killed it). If --json or the report cannot be written, it says so
with CMD's status and exits with that status, or 1 where CMD exited 0. See
docs/exec.md.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{errors.New("exec: no program: probe exec [flags] -- CMD [ARGS...]")}
			}
			if args[0] == "" {
				return usageError{errors.New("exec: the program's name is empty: probe exec [flags] -- CMD [ARGS...]")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExec(&f, args, stdout, stderr)
		},
	}
	f.register(cmd.Flags())
	cmd.Flags().BoolVar(&f.sites.Enabled, "sites", false, "record the program's allocation sites (C allocator and anonymous mmap, LD_PRELOAD): pprof profiles alloc, peak and exit in --out-dir, the top sites in the report (docs/exec.md)")
	cmd.Flags().Int64Var(&f.sites.Rate, "sites-rate", 0, fmt.Sprintf("with --sites, sample one allocation per this many bytes on average (default %d); 1 records every allocation, exactly", sites.DefaultRate))
	// Everything after the program's name is the program's.
	cmd.Flags().SetInterspersed(false)
	return cmd
}

// runExec is probe exec: the program started and watched (outside), the
// live view while it runs (--live), the result diagnosed and written
// (report/process), and the program's status as the probe's.
func runExec(f *outsideFlags, args []string, stdout, stderr io.Writer) error {
	o, format, err := f.options()
	if err != nil {
		return usageError{err}
	}
	f.live = liveWanted(f.live, stderr)
	// The program's stderr and the probe's progress lines share
	// one writer, from two goroutines. A file is passed to the
	// program as it is (its stderr stays a terminal, or whatever
	// it is); another writer is serialised.
	if _, ok := stderr.(*os.File); !ok {
		stderr = &lockedWriter{w: stderr}
	}
	o.Progress = stderr
	if f.live {
		o.Progress = nil // the view shows the walks
	}
	survivePipe()
	// With --json -, stdout is the JSON's: the program's own
	// output there would make it unreadable (the report moves to
	// stderr for the same reason), so the program writes to
	// stderr too.
	progOut := stdout
	if f.jsonPath == "-" {
		progOut = stderr
	}
	// Catch the signals before the program starts, so none is lost.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	eo := outside.ExecOptions{Options: o, Args: args, Stdout: progOut, Stderr: stderr}
	if f.live && liveKeys(liveStdin) {
		// The terminal is the view's, for its keys.
		null, err := os.Open(os.DevNull)
		if err != nil {
			return err
		}
		defer null.Close()
		eo.Stdin = null
	}
	s, err := outside.Exec(eo)
	if err != nil {
		return err
	}
	var view *liveView
	if f.live {
		view = startLive(s, liveStdin, stderr, func() { _ = s.Signal(os.Interrupt) })
		defer view.stop()
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
	r.Process.Diagnosis = process.Diagnose(r, s.TimelineCut())
	view.stop() // the view off and the terminal back before the report
	code := 0
	if c := r.Process.ExitCode; c != nil {
		code = *c
	}
	if err := writeOutside(stdout, stderr, f.jsonPath, format, r); err != nil {
		return outputError{status: programStatus(args[0], r.Process), code: code, err: err}
	}
	if code != 0 {
		return exitStatus{code, "exec: " + programStatus(args[0], r.Process)}
	}
	return nil
}

// writeOutside writes the JSON, then prints the report: with --json -,
// the JSON goes to stdout and the report to stderr. The JSON comes first
// so that a report that cannot be printed (a closed pipe: probe exec ...
// | head) does not cost the file; a JSON that cannot be written does not
// cost the report. Both failures are returned.
func writeOutside(stdout, stderr io.Writer, jsonPath string, format table.Format, r *schema.Result) error {
	reportTo := stdout
	if jsonPath == "-" {
		reportTo = stderr
	}
	var jerr error
	switch jsonPath {
	case "":
	case "-":
		if err := writeJSON(stdout, "", r); err != nil {
			jerr = fmt.Errorf("writing the JSON to stdout: %w", err)
		}
	default:
		jerr = schema.WriteResult(jsonPath, r)
	}
	var rerr error
	if err := process.Render(reportTo, r, format); err != nil {
		rerr = fmt.Errorf("printing the report: %w", err)
	}
	switch {
	case jerr != nil && rerr != nil:
		return fmt.Errorf("%w; %w", jerr, rerr)
	case jerr != nil:
		return jerr
	}
	return rerr
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
