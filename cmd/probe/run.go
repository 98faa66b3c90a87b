package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"memprobe/internal/atomicfile"
	"memprobe/internal/table"
	"memprobe/report/process"
	"memprobe/run/job"
	"memprobe/run/runner"
	"memprobe/schema"
	"memprobe/trainer/data"
)

// runFlags are the command-line options of `probe run`.
type runFlags struct {
	fs         *pflag.FlagSet
	planFile   string
	threads    int
	plans      string
	phases     string
	data       string
	preset     string
	steps      int
	count      int
	sweeps     []string
	out        string
	profileDir string
	format     string
	timeout    time.Duration
	memLimit   string
	shard      string
	resume     string
	dryRun     bool
	sites      bool
	quick      bool
	force      bool
	verbose    bool
}

func (f *runFlags) register(fs *pflag.FlagSet) {
	f.fs = fs
	fs.StringVar(&f.planFile, "plan-file", "", "run the phases of a plan file (TOML: your own program's command lines, docs/run.md) instead of the built-in plans; --sweep then sets its variables")
	fs.IntVar(&f.threads, "threads", runner.DefaultThreads, "logical worker threads of every configuration, 1 to 1024")
	fs.StringVar(&f.plans, "plan", "all", "plans to run: threads, arena, embedding, decode or all (comma-separated)")
	fs.StringVar(&f.phases, "phases", "", "phases to run, comma-separated: before, P1, ... (each plan runs those it has), or after (each plan's fixed state); default every phase, or before,after with --sweep")
	fs.StringVar(&f.data, "data", "", "training data of every plan (default: each plan's scale, see --dry-run)")
	fs.StringVar(&f.preset, "preset", "", "model preset of every plan: seed, tiny, micro or gpt2-head (default: each plan's scale)")
	fs.IntVar(&f.steps, "steps", 0, "optimizer steps of every plan (0: each plan's scale)")
	fs.IntVar(&f.count, "count", 0, fmt.Sprintf("repetitions of each configuration, each in a fresh process (0: %d, or 1 with --quick)", runner.DefaultCount))
	fs.StringArrayVar(&f.sweeps, "sweep", nil, "sweep a knob: AXIS=V1,V2,... with AXIS threads, cache-scale, decode or batch-alloc (with --plan-file: a variable of the file); repeat for a grid")
	fs.StringVar(&f.out, "out", "", "report file (default probe-<short commit>.json, probe-nocommit.json without VCS stamping; with --quick probe-<short commit>-quick.json); an existing file is not replaced without --force")
	fs.StringVar(&f.profileDir, "profile-dir", "", "every child writes its pprof profiles here, named <configuration>-r<repetition>")
	fs.StringVar(&f.format, "format", "text", "stdout: the report's tables as text, markdown or csv, or the report itself as json")
	fs.DurationVar(&f.timeout, "timeout", runner.DefaultTimeout, "kill a child (its process group) that runs longer than this")
	fs.StringVar(&f.memLimit, "mem-limit", "", "kill a child whose RSS passes this, and refuse configurations predicted above it (e.g. 8GiB; default MemAvailable less 10 %)")
	fs.StringVar(&f.shard, "shard", "", "run shard I/N: every N-th configuration from the I-th (join the reports with probe merge); auto or auto/N: I and N from a Kubernetes Indexed Job (JOB_COMPLETION_INDEX, N given), a Slurm array (SLURM_ARRAY_TASK_*) or GitLab parallel (CI_NODE_INDEX, CI_NODE_TOTAL)")
	fs.StringVar(&f.resume, "resume", "", "an earlier report of this run: configurations it holds finished (status ok, --count repetitions, same scale) are copied from it, not run again")
	fs.BoolVar(&f.sites, "sites", false, "with --plan-file: record each program's allocation sites as probe exec --sites does (LD_PRELOAD; the top sites in each result, the profiles in --profile-dir)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "print the children, their command lines, predicted peak RSS and estimated time, and exit without running")
	fs.BoolVar(&f.quick, "quick", false, "every plan at a tiny scale (tiny preset, 200 KB of data, 2 steps), once: a smoke test in under a minute")
	fs.BoolVar(&f.force, "force", false, "replace the --out file if one is there (without it probe run refuses before running anything)")
	fs.BoolVar(&f.verbose, "verbose", false, "copy the children's stderr to stderr")
}

// options turns the flags into the runner's options; it parses (a size,
// a sweep, a shard) and leaves the ranges to the runner.
func (f *runFlags) options() (runner.Options, error) {
	o := runner.Options{
		Threads: f.threads, Data: f.data, Preset: f.preset, Steps: f.steps, Count: f.count,
		Quick: f.quick, Out: f.out, ProfileDir: f.profileDir, Timeout: f.timeout, Verbose: f.verbose,
		Resume: f.resume, Sites: f.sites, Diagnose: process.Diagnose,
	}
	if f.threads < 1 { // 0 would mean the runner's default
		return o, fmt.Errorf("--threads %d out of range [1, 1024]", f.threads)
	}
	if f.timeout <= 0 {
		return o, fmt.Errorf("--timeout %v must be positive", f.timeout)
	}
	if f.count < 0 {
		return o, fmt.Errorf("--count %d must be positive", f.count)
	}
	o.Plans = splitList(f.plans)
	o.Phases = splitList(f.phases)
	if err := f.shardOptions(&o); err != nil {
		return o, err
	}
	if f.planFile != "" {
		if err := f.planFileOptions(&o); err != nil {
			return o, err
		}
	}
	for _, s := range f.sweeps {
		if o.PlanFile != nil {
			break // the plan file's variables
		}
		a, err := runner.ParseAxis(s)
		if err != nil {
			return o, err
		}
		for _, b := range o.Sweep {
			if b.Name == a.Name {
				return o, fmt.Errorf("--sweep %s given twice", a.Name)
			}
		}
		o.Sweep = append(o.Sweep, a)
	}
	if f.memLimit != "" {
		n, err := data.ParseSize(f.memLimit)
		if err != nil {
			return o, fmt.Errorf("--mem-limit: %w", err)
		}
		if n <= 0 {
			return o, fmt.Errorf("--mem-limit %s must be positive", f.memLimit)
		}
		o.MemLimit = n
	}
	switch f.format {
	case "json", string(table.Text), string(table.Markdown), string(table.CSV):
	default:
		return o, fmt.Errorf("--format %q: want text, markdown, csv or json", f.format)
	}
	return o, nil
}

// shardOptions reads --shard: I/N, or auto from the scheduler's
// variables.
func (f *runFlags) shardOptions(o *runner.Options) error {
	if f.shard == "" {
		return nil
	}
	i, n, src, err := runner.ParseShardSpec(f.shard, getenv)
	if err != nil {
		return err
	}
	o.Shard, o.Shards, o.ShardSource = i, n, src
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// interruptedError is probe run's error after Ctrl-C or SIGTERM: the
// report of what finished was written; exit status 130 (SIGINT) or 143
// (SIGTERM).
type interruptedError struct {
	out   string
	cause error
}

func (e interruptedError) Error() string {
	return fmt.Sprintf("interrupted (%v); the report of what finished is in %s", e.cause, e.out)
}
func (e interruptedError) ExitCode() int {
	var sig signalError
	if errors.As(e.cause, &sig) {
		return sig.ExitCode()
	}
	return 130
}

func newRunCmd(stdout, stderr io.Writer) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run",
		Short: "run every plan's phases, each in fresh child processes, repeated, and write a run report",
		Long: `run is the experiment runner: it runs the reference trainer through the
phases of every plan (probe train --list-phases), each configuration in a
fresh child process (this binary, re-executed as probe train --json),
--count times, one child at a time. Each child is measured from inside
(its JSON result) and from outside (this process samples its RSS and VSZ,
and reads its peak RSS and CPU times from wait4). Each plan runs at the
scale at which its before state is affordable (see --dry-run); --preset,
--steps and --data override it.

Before any child starts, the report's path, the --sweep values (the
ranges of probe train's flags), --data and --profile-dir are checked (a
bad one is a usage error, not a failure of every child), and each
configuration's peak RSS is predicted by the analytical model; one above
--mem-limit is not started (skipped), and a run in which every one is
exits 1. A child past --timeout or
--mem-limit is killed with its process group and recorded (timeout,
killed); one that crashes or writes no result is recorded as failed, with
its exit status and the last line of its stderr; the run goes on. Ctrl-C
or SIGTERM kills the current child, writes the report of what finished,
and exits 130 (SIGINT) or 143 (SIGTERM). --resume REPORT copies the
configurations an earlier report finished and runs the rest.

The report (memprobe.report/v1, docs/report-schema.md) is written
atomically to --out (default probe-<short commit>.json; with --quick
probe-<short commit>-quick.json, apart from a full run's); a file already
there is never replaced without --force (or being the --resume report):
probe run refuses before starting a child, and --dry-run names the file.
stdout gets its tables (--format text, markdown, csv) or the report itself
(--format json).

--plan-file PLAN.toml runs the phases of a plan file instead: your own
program's command lines, each watched from outside as probe exec watches
it, with the same repetitions, limits, claims and report; --sweep sets
the file's variables. A bad plan file is refused before any child starts,
as FILE:LINE: what is wrong. --shard auto takes the shard from a
Kubernetes Indexed Job, a Slurm array or GitLab parallel. See
docs/run.md.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := f.options()
			if err != nil {
				return usageError{err}
			}
			o.CommandLine = os.Args
			o.Stderr = stderr
			o.Terminal = isTerminal(stderr)
			if o.Out == "" {
				o.Out = defaultOut(job.Environment(), f.quick)
				if o.PlanFile != nil {
					o.Out = planFileOut(job.Environment(), o.PlanFile.Name)
				}
			}
			if f.dryRun {
				return dryRun(stdout, o, f.format, f.force)
			}
			if err := checkReplace(o.Out, o.Resume, f.force); err != nil {
				return usageError{err}
			}
			ctx, stop := notifyContext()
			defer stop()
			rep, err := runner.Run(ctx, o)
			if oe := (*runner.OptionsError)(nil); errors.As(err, &oe) {
				return usageError{err}
			}
			if rep == nil {
				return err
			}
			if werr := writeRunOutput(stdout, rep, f.format); werr != nil && err == nil {
				err = werr
			}
			fmt.Fprintf(stderr, "report: %s\n", o.Out)
			if errors.Is(err, runner.ErrInterrupted) {
				return interruptedError{out: o.Out, cause: context.Cause(ctx)}
			}
			if err != nil {
				return err
			}
			limit := "--mem-limit " + f.memLimit
			if f.memLimit == "" {
				limit = "the default --mem-limit (MemAvailable less 10 %)"
			}
			return unfinished(rep, o.Out, limit)
		},
	}
	f.register(cmd.Flags())
	return cmd
}

// unfinished is the error of a run in which some configuration failed,
// timed out or was killed, or in which every configuration was refused
// up front (skipped: predicted above limit, which names the memory limit)
// so that nothing ran. One refusal among configurations that ran is not
// an error. The report has the reasons; the exit status is 1.
func unfinished(rep *schema.Report, out, limit string) error {
	var bad []string
	refused := 0
	for _, r := range rep.Runs {
		switch r.Status {
		case schema.StatusOK:
		case schema.StatusSkipped: // the runner's only skip: above the memory limit
			refused++
		default:
			bad = append(bad, r.Name+": "+string(r.Status))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%d of %d configurations did not finish (%s); the reasons are in %s", len(bad), len(rep.Runs), strings.Join(bad, ", "), out)
	}
	if refused > 0 && refused == len(rep.Runs) {
		what := fmt.Sprintf("all %d configurations were", refused)
		if refused == 1 {
			what = "the one configuration was"
		}
		return fmt.Errorf("nothing ran: %s refused by %s (predicted peak RSS above it); the predictions are in %s", what, limit, out)
	}
	return nil
}

// defaultOut is the report's file when --out is not given: the runner's
// probe-<short commit>.json, and for a --quick smoke test
// probe-<short commit>-quick.json, so that one never takes the name (or,
// in probe diff's BASE..HEAD, the place) of a full run's report.
func defaultOut(env schema.Environment, quick bool) string {
	out := runner.DefaultOut(env)
	if quick {
		out = strings.TrimSuffix(out, ".json") + "-quick.json"
	}
	return out
}

// checkReplace refuses an --out file that already exists, unless force
// asks to replace it or it is the --resume report, which the new one
// holds: a report costs minutes to remake, and a default name is shared
// by every run of one commit.
func checkReplace(out, resume string, force bool) error {
	st, err := os.Stat(out)
	if err != nil || force {
		return nil
	}
	if rs, err := os.Stat(resume); resume != "" && err == nil && os.SameFile(st, rs) {
		return nil
	}
	return fmt.Errorf("--out %s: a report is already there (%s, %s); --force replaces it, --out names another file", out, table.FormatBytes(float64(st.Size())), st.ModTime().UTC().Format(time.RFC3339))
}

// dryRun prints the plan of children and the report's file, and runs
// nothing.
func dryRun(stdout io.Writer, o runner.Options, format string, force bool) error {
	cs, err := runner.Prepare(&o)
	if err != nil {
		return usageError{err}
	}
	exe, err := os.Executable()
	if err != nil {
		exe = "probe"
	}
	if format == "json" {
		b, err := schema.Marshal(cs)
		if err != nil {
			return err
		}
		_, err = stdout.Write(b)
		return err
	}
	if err := runner.WritePlan(stdout, cs, o, exe, table.Format(format)); err != nil || format == string(table.CSV) {
		return err
	}
	line := "\nreport: " + o.Out
	if err := checkReplace(o.Out, o.Resume, force); err != nil {
		line += " (already there: probe run refuses to replace it without --force)"
	} else if _, serr := os.Stat(o.Out); serr == nil {
		line += " (already there: replaced)"
	}
	_, err = fmt.Fprintln(stdout, line)
	return err
}

// writeRunOutput prints the report's tables, or the report as JSON.
func writeRunOutput(w io.Writer, rep *schema.Report, format string) error {
	if format == "json" {
		b, err := schema.Marshal(rep)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	return writeReportTables(w, rep, table.Format(format))
}

// isTerminal reports whether w is a terminal (the test golang.org/x/term
// makes, on the x/sys we already link).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

func newMergeCmd(stdout io.Writer) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "merge A.json B.json ... --out ALL.json",
		Short: "join the reports of probe run --shard I/N into one, or pool decode results",
		Long: `merge reads run reports (memprobe.report/v1), typically the shards of one
run, and writes one report with every configuration in the order an
unsharded run gives them. The reports must be of the same schema version
and the same build (commit), run each plan at the same scale (preset,
steps, data; a plan file's variables), and, as shards, be of one plan
and one split, each shard once; a configuration in two of them is an
error. Another machine, or a missing shard (named by its index), is a
warning in the merged report. The output is written atomically.

Given decode results (probe decode --json, memprobe.decode/v1), merge
pools them: the records of one mode, device, shape, probs and pinned
host memory (config.pinned_host) become one record of all their runs, as
probe decode --runs N makes (each figure the median of the runs', each
run's kept in the _runs arrays), and the other records are kept. They must come from one build on one machine,
and records of one mode must have measured the same configuration. The
output is a decode result: one record, or an array.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 {
				return usageError{errors.New("merge: want one or more report files")}
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			if out == "" {
				return usageError{errors.New("merge: --out is required")}
			}
			if err := atomicfile.CheckWritable(out); err != nil {
				return usageError{fmt.Errorf("--out %w", err)}
			}
			ins := make([]atomicfile.Path, len(args))
			for i, a := range args {
				ins[i] = atomicfile.Path{Path: a}
			}
			if err := atomicfile.CheckDistinct([]atomicfile.Path{{Flag: "--out", Path: out}}, ins); err != nil {
				return usageError{err}
			}
			if decodeArgs(args) {
				return mergeDecode(stdout, args, out)
			}
			reps := make([]*schema.Report, len(args))
			for i, a := range args {
				r, err := schema.ReadReport(a)
				if err != nil {
					return err
				}
				reps[i] = r
			}
			m, err := runner.Merge(args, reps, os.Args)
			if err != nil {
				return err
			}
			if err := schema.WriteReport(out, m); err != nil {
				return err
			}
			if _, err := fmt.Fprintf(stdout, "%s: %d configurations from %d reports\n", out, len(m.Runs), len(reps)); err != nil {
				return err
			}
			if w := runner.MissingShards(reps); w != "" {
				_, err = fmt.Fprintf(stdout, "warning: %s (the merged report says so too)\n", w)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "the merged report's file")
	return cmd
}

// decodeArgs says whether merge's arguments are decode results: any one
// is, and mergeDecode refuses the others.
func decodeArgs(args []string) bool {
	return slices.ContainsFunc(args, isDecodeFile)
}

// mergeDecode pools decode result files into out (an array when more than
// one record results).
func mergeDecode(stdout io.Writer, files []string, out string) error {
	for _, f := range files {
		if !isDecodeFile(f) {
			return fmt.Errorf("merge: %s is %s and %s a decode result of probe decode; merge one kind", f, describeDiffFile(f), files[slices.IndexFunc(files, isDecodeFile)])
		}
	}
	recs, err := poolDecodeFiles(files, os.Args)
	if err != nil {
		return err
	}
	var v any = recs
	if len(recs) == 1 {
		v = recs[0]
	}
	if err := writeJSON(nil, out, v); err != nil {
		return err
	}
	runs := 0
	for _, r := range recs {
		runs = max(runs, r.Runs, 1)
	}
	_, err = fmt.Fprintf(stdout, "%s: %d decode modes from %d results, up to %d runs each\n", out, len(recs), len(files), runs)
	return err
}
