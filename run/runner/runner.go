package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"memprobe/internal/atomicfile"
	"memprobe/outside/sites"
	"memprobe/run/job"
	"memprobe/run/planfile"
	"memprobe/schema"
	"memprobe/trainer/data"
)

// Defaults of Options.
const (
	DefaultCount   = 3
	DefaultThreads = 63
	DefaultTimeout = 10 * time.Minute
	// quickCount is --quick's repetitions.
	quickCount = 1
)

// ErrInterrupted is Run's error when its context ended before every
// configuration ran: the report of what finished is returned and written
// beside it. The command exits 130.
var ErrInterrupted = errors.New("interrupted")

// Options is one `probe run`.
type Options struct {
	// Executable is the probe binary each child re-executes as `probe
	// train` ("": os.Executable()); Env is added to each child's
	// environment (the tests' crash hook).
	Executable string
	Env        []string
	// Diagnose words the findings of a plan file's program watched from
	// outside (report/process.Diagnose; the command sets it, so that the
	// runner does not import report/): nil leaves them empty.
	Diagnose func(r *schema.Result, timelineCut bool) []schema.Finding

	// Threads is every configuration's logical workers (a threads sweep
	// overrides it); 0 is DefaultThreads.
	Threads int
	// Plans are plan names ("all" or none: every plan); Phases are phase
	// names of them, or "after" for each plan's fixed state (none: every
	// phase, or before and after with a sweep).
	Plans  []string
	Phases []string
	Sweep  []Axis
	// Preset, Steps and Data override every plan's scale ("", 0: the
	// plan's own, PlanScale). Quick runs every plan at a tiny scale,
	// once (unless Count is set).
	Preset string
	Steps  int
	Data   string
	Quick  bool
	// Count is the repetitions of each configuration (0: DefaultCount, or
	// 1 with Quick).
	Count int

	// Out is the report's path ("": not written); ProfileDir, when set,
	// is every child's --profile-dir.
	Out        string
	ProfileDir string
	// Timeout bounds one child's wall time (0: DefaultTimeout); MemLimit
	// its RSS, and configurations predicted above it are not started (0:
	// DefaultMemLimit, MemAvailable less 10 %).
	Timeout  time.Duration
	MemLimit int64
	// Shard and Shards select every Shards-th configuration from the
	// Shard-th (Shards 0 or 1: all).
	Shard, Shards int
	// ShardSource is where Shard and Shards came from: "flag" (--shard
	// I/N) or the scheduler's variable (ShardFromEnv); "" is "flag".
	ShardSource string
	// PlanFile, when set, replaces the built-in plans by a plan file's
	// phases (--plan-file): each configuration is a program of the user's,
	// watched from outside as probe exec watches it. Threads, Plans,
	// Sweep and the scale do not apply to it; Phases selects its phases
	// by name; Count 0 is the plan's count, else DefaultCount.
	PlanFile *planfile.Plan
	// Sites records each plan-file program's allocation sites, as probe
	// exec --sites does (profiles in ProfileDir's, else the run's
	// temporary, directory; the top sites in each result).
	Sites bool

	// Resume is an earlier report (--resume): a configuration it holds
	// with status ok and at least Count repetitions, at the same scale
	// (resumeKey), is copied from it instead of run again.
	Resume string

	// Stderr receives progress (nil: none); Terminal makes it one
	// updating line. Verbose copies the children's stderr there too.
	Stderr   io.Writer
	Terminal bool
	Verbose  bool
	// CommandLine is recorded in the report.
	CommandLine []string
	// SampleInterval is the parent's sampler period (0: 10 ms).
	SampleInterval time.Duration
	// FileSize sizes a --data file for the prediction (nil: os.Stat).
	FileSize func(string) (int64, error)

	// tmp is the run's temporary directory ({tmp} of a plan file).
	tmp string
	// whole is the unsharded plan, for the report's Shard (Prepare).
	whole struct {
		n             int
		digest, label string
	}
}

// resolve fills the defaults and checks the ranges.
func (o *Options) resolve() error {
	if o.Threads == 0 {
		o.Threads = DefaultThreads
	}
	if o.Threads < 1 || o.Threads > 1024 {
		return fmt.Errorf("threads %d out of range [1, 1024]", o.Threads)
	}
	if o.Count == 0 && o.PlanFile != nil && o.PlanFile.Count > 0 {
		o.Count = o.PlanFile.Count
	}
	if o.Count == 0 {
		o.Count = DefaultCount
		if o.Quick {
			o.Count = quickCount
		}
	}
	if o.Count < 1 || o.Count > 1000 {
		return fmt.Errorf("count %d out of range [1, 1000]", o.Count)
	}
	if o.Steps < 0 {
		return fmt.Errorf("steps %d must be positive", o.Steps)
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Timeout < 0 {
		return fmt.Errorf("timeout %v must be positive", o.Timeout)
	}
	if o.MemLimit < 0 {
		return fmt.Errorf("mem-limit %d must be positive", o.MemLimit)
	}
	if o.MemLimit == 0 {
		l, err := DefaultMemLimit()
		if err != nil {
			return err
		}
		o.MemLimit = l
	}
	if o.Sites && o.PlanFile == nil {
		return errors.New("--sites needs --plan-file: the built-in plans' children are probe train, whose Go heap --profile-dir profiles")
	}
	if o.Shards > 1 && (o.Shard < 0 || o.Shard >= o.Shards) {
		return fmt.Errorf("shard %d/%d: want 0 <= I < N", o.Shard, o.Shards)
	}
	if o.FileSize == nil {
		o.FileSize = func(p string) (int64, error) {
			fi, err := os.Stat(p)
			if err != nil {
				return 0, err
			}
			return fi.Size(), nil
		}
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	return nil
}

// checkInputs checks what every child would otherwise find wrong on its
// own, once per configuration and repetition: the --data file (a
// synthetic:SIZE spec is checked against each preset's vocabulary in
// Plan) and the --profile-dir directory.
func (o *Options) checkInputs() error {
	if err := checkDataFile(o.Data); err != nil {
		return err
	}
	return checkProfileDir(o.ProfileDir)
}

// checkDataFile fails when spec names a file the children could not
// train on: missing, unreadable, not a regular file, or empty (probe
// train's own checks of a file's contents, its text and its encoding,
// need the whole file and stay the child's). "" and synthetic:SIZE pass.
func checkDataFile(spec string) error {
	if spec == "" || strings.HasPrefix(spec, "synthetic:") {
		return nil
	}
	if err := data.CheckSpec(spec, 0); err != nil { // an unknown kind:
		return fmt.Errorf("--data: %w", err)
	}
	if err := data.CheckFile(spec); err != nil {
		return fmt.Errorf("--data %s: %w; want a text file or synthetic:SIZE", spec, err)
	}
	f, err := os.Open(spec) // readable by this user, as the child will need
	if err != nil {
		return fmt.Errorf("--data %s: %w", spec, unwrapPath(err))
	}
	return f.Close()
}

// checkProfileDir fails when dir could not receive the children's
// profiles: it exists and is not a directory or not writable, or it is
// missing and could not be created (a parent is a file, or the nearest
// existing one is not writable). It creates nothing: each child makes the
// directory as it does with probe train --profile-dir.
func checkProfileDir(dir string) error {
	if dir == "" {
		return nil
	}
	fi, err := os.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("--profile-dir %s: exists and is not a directory", dir)
		}
		// As atomicfile.CheckWritable does: a file made and removed.
		f, err := os.CreateTemp(dir, ".check-*")
		if err != nil {
			return fmt.Errorf("--profile-dir %s: not writable: %w", dir, unwrapPath(err))
		}
		f.Close()
		return os.Remove(f.Name())
	}
	if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("--profile-dir %s: %w", dir, unwrapPath(err))
	}
	// Missing: the nearest existing ancestor must be a directory the
	// children can create it in.
	for p := filepath.Dir(filepath.Clean(dir)); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		switch {
		case err == nil && !fi.IsDir():
			return fmt.Errorf("--profile-dir %s: cannot be created: %s is not a directory", dir, p)
		case err == nil:
			if err := unix.Access(p, unix.W_OK|unix.X_OK); err != nil {
				return fmt.Errorf("--profile-dir %s: cannot be created in %s: %w", dir, p, err)
			}
			return nil
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
			return fmt.Errorf("--profile-dir %s: %s: %w", dir, p, unwrapPath(err))
		}
		if p == filepath.Dir(p) {
			return nil // the root is missing: nothing left to check
		}
	}
}

// unwrapPath drops the path an *fs.PathError repeats.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// OptionsError is Prepare's and Run's error for options out of range or a
// plan that cannot be made: a usage error.
type OptionsError struct{ Err error }

func (e *OptionsError) Error() string { return e.Err.Error() }
func (e *OptionsError) Unwrap() error { return e.Err }

// Prepare resolves o's defaults and returns the configurations Run would
// start, sharded, each with its prediction. Errors in o are
// *OptionsError.
func Prepare(o *Options) ([]Config, error) {
	if err := o.resolve(); err != nil {
		return nil, &OptionsError{err}
	}
	if err := o.checkInputs(); err != nil {
		return nil, &OptionsError{err}
	}
	if o.Sites {
		if _, err := sites.FindLibrary(); err != nil {
			return nil, &OptionsError{fmt.Errorf("--sites: %w", err)}
		}
	}
	if o.PlanFile != nil && o.Executable == "" {
		exe, err := os.Executable() // {probe}
		if err != nil {
			return nil, fmt.Errorf("finding the probe binary for {probe}: %w", err)
		}
		o.Executable = exe
	}
	cs, err := Plan(*o)
	if err != nil {
		return nil, &OptionsError{err}
	}
	o.whole.n, o.whole.digest, o.whole.label = len(cs), planDigest(cs), planLabel(*o, cs)
	cs = Shard(cs, o.Shard, o.Shards)
	if len(cs) == 0 {
		return nil, &OptionsError{fmt.Errorf("shard %d/%d holds no configuration", o.Shard, o.Shards)}
	}
	if err := Predict(cs, o.FileSize); err != nil {
		return nil, &OptionsError{err}
	}
	return cs, nil
}

// CheckOutput fails at once when path cannot be written: its directory
// is missing, not a directory or not writable, or path is a directory.
// It writes and removes a temporary file beside path.
func CheckOutput(path string) error {
	if err := atomicfile.CheckWritable(path); err != nil {
		return fmt.Errorf("report %w", err)
	}
	return nil
}

// DefaultOut is the report's default file name: probe-<short commit>.json
// from the build's VCS revision, probe-nocommit.json without one.
func DefaultOut(env schema.Environment) string {
	rev := env.VCSRevision
	if rev == "" {
		return "probe-nocommit.json"
	}
	return "probe-" + rev[:min(7, len(rev))] + ".json"
}

// Run runs every configuration o asks for and returns the report; with
// o.Out set it also writes it there (atomically), whatever happened to
// the children. Before any child starts it checks o.Out and refuses the
// configurations predicted above the memory limit (status skipped). When
// ctx ends it kills the current child, writes the report of what
// finished and returns it with ErrInterrupted.
func Run(ctx context.Context, o Options) (*schema.Report, error) {
	tmp, err := os.MkdirTemp("", "probe-run-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	o.tmp = tmp
	cs, err := Prepare(&o)
	if err != nil {
		return nil, err
	}
	if err := checkOut(o); err != nil {
		return nil, err
	}
	if o.Executable == "" {
		if o.Executable, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("finding the probe binary to re-execute: %w", err)
		}
	}
	var done, partial map[string]schema.Run
	var resumed *schema.Report
	if o.Resume != "" {
		if resumed, err = schema.ReadReport(o.Resume); err != nil {
			return nil, fmt.Errorf("--resume: %w", err)
		}
		done, partial = measured(resumed, o.Count), started(resumed, o.Count)
	}
	if err := runSetup(ctx, o); err != nil {
		return nil, err
	}

	rep := newReport(o, cs)
	if resumed != nil {
		rep.Warnings = append(rep.Warnings, resumeWarnings(o.Resume, resumed, rep, cs, done, partial)...)
	}
	prog := newProgress(o.Stderr, o.Terminal && !o.Verbose, cs, o.Count)
	interrupted := false
	for i, c := range cs {
		if ctx.Err() != nil {
			interrupted = true
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("interrupted: %d of %d configurations not run", len(cs)-i, len(cs)))
			break
		}
		if old, ok := done[c.identity()]; ok {
			prog.note(c.Name + ": measured in " + o.Resume + "; not run again")
			prog.skip(c)
			rep.Runs = append(rep.Runs, old)
			continue
		}
		rep.Runs = append(rep.Runs, runConfig(ctx, o, i, c, partial, prog))
		if ctx.Err() != nil && i+1 < len(cs) {
			interrupted = true
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("interrupted: %d of %d configurations not run", len(cs)-i-1, len(cs)))
			break
		}
	}
	prog.done(len(rep.Runs))
	rep.EndTime = time.Now().Format(time.RFC3339)
	if o.Out != "" {
		if err := schema.WriteReport(o.Out, rep); err != nil {
			return rep, err
		}
	}
	if interrupted || ctx.Err() != nil {
		return rep, ErrInterrupted
	}
	return rep, nil
}

// checkOut refuses, before any child starts, an --out that could not be
// written or that names the data (the report may replace --resume's: it
// holds it).
func checkOut(o Options) error {
	if o.Out == "" {
		return nil
	}
	if err := CheckOutput(o.Out); err != nil {
		return &OptionsError{err}
	}
	var in []atomicfile.Path
	if o.Data != "" && !strings.HasPrefix(o.Data, "synthetic:") {
		in = append(in, atomicfile.Path{Flag: "--data", Path: o.Data})
	}
	if err := atomicfile.CheckDistinct([]atomicfile.Path{{Flag: "--out", Path: o.Out}}, in); err != nil {
		return &OptionsError{err}
	}
	return nil
}

// newReport is the report before any run: the environment, the command
// line and start time, and the warnings of --quick and of a shard.
func newReport(o Options, cs []Config) *schema.Report {
	rep := &schema.Report{
		Schema: schema.ReportVersion, Environment: job.Environment(),
		CommandLine: nonNil(o.CommandLine), StartTime: time.Now().Format(time.RFC3339),
		Runs: []schema.Run{}, Warnings: []string{},
	}
	if o.Quick {
		reps := "one repetition"
		if o.Count > 1 {
			reps = fmt.Sprintf("%d repetitions", o.Count)
		}
		rep.Warnings = append(rep.Warnings, "--quick: tiny scale, "+reps+": a smoke test, not a measurement")
	}
	if o.Shards > 1 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("shard %d/%d: %d configurations; merge the shards with probe merge", o.Shard, o.Shards, len(cs)))
		src := o.ShardSource
		if src == "" {
			src = "flag"
		}
		rep.Shard = &schema.Shard{Index: o.Shard, Count: o.Shards, Source: src,
			Plan: o.whole.label, Configurations: o.whole.n, PlanDigest: o.whole.digest}
	}
	return rep
}

// runConfig is configuration i's run, c: the repetitions --resume's report
// holds of it (partial), then the rest, run one at a time, or none where
// its predicted peak is above the memory limit; summarized.
func runConfig(ctx context.Context, o Options, i int, c Config, partial map[string]schema.Run, prog *progress) schema.Run {
	run := newRun(c, o.Count)
	first := 1
	if old, ok := partial[c.identity()]; ok {
		run.Config = old.Config
		run.Repetitions = append(run.Repetitions, old.Repetitions...)
		run.Outside = keptOutside(old)
		first = len(run.Repetitions) + 1
		prog.note(fmt.Sprintf("%s: %d of %d repetitions measured in %s; running the rest", c.Name, first-1, o.Count, o.Resume))
		prog.skipRest(c, first-1)
	}
	if c.Prediction.PeakRSSBytes > o.MemLimit {
		run.Status = schema.StatusSkipped
		run.Reason = fmt.Sprintf("predicted peak RSS %s is above --mem-limit %s; not started", iec(c.Prediction.PeakRSSBytes), iec(o.MemLimit))
		prog.note(c.Name + ": skipped: " + run.Reason)
		prog.skip(c)
	} else {
		runRepetitions(ctx, o, i, c, &run, first, prog)
	}
	Summarize(&run, o.Count)
	return run
}

// runRepetitions runs c's repetitions first to o.Count into run, each in
// a child of its own (a process configuration: the process watched from
// outside). The first repetition that does not finish decides the status;
// the others are not run (a crash, a limit or an interruption would
// repeat).
func runRepetitions(ctx context.Context, o Options, i int, c Config, run *schema.Run, first int, prog *progress) {
	for r := first; r <= o.Count; r++ {
		prog.start(i, c, r)
		var out schema.Outside
		var res *schema.Result
		if c.Process != nil {
			out, res = runProcess(ctx, c, o, r)
		} else {
			ch := &child{
				exe: o.Executable, env: o.Env, timeout: o.Timeout, memLimit: o.MemLimit,
				interval: o.SampleInterval, jsonPath: filepath.Join(o.tmp, fmt.Sprintf("%d-r%d.json", c.Index, r)),
			}
			ch.args = c.childArgs(o, r, ch.jsonPath)
			if o.Verbose {
				ch.verbose = o.Stderr
			}
			out, res = ch.run(ctx, r)
			os.Remove(ch.jsonPath)
		}
		prog.finish(c)
		run.Outside = append(run.Outside, out)
		if res != nil {
			if c.Process == nil && len(run.Repetitions) == 0 {
				run.Config = res.Config // the child's record is complete
			}
			run.Repetitions = append(run.Repetitions, *res)
			continue
		}
		run.Status, run.Reason = out.Status, fmt.Sprintf("repetition %d of %d: %s", r, o.Count, out.Reason)
		prog.note(c.Name + ": " + string(run.Status) + ": " + run.Reason)
		prog.skipRest(c, o.Count-r)
		break
	}
	if run.Status == "" {
		run.Status = schema.StatusOK
	}
}

// newRun is c's Run before any repetition.
func newRun(c Config, count int) schema.Run {
	sc := c.Schema
	r := schema.Run{
		Name: c.Name, Plan: c.Plan, Phase: c.Phase, Description: c.Description, Config: sc,
		Repetitions: []schema.Result{}, Outside: []schema.Outside{},
		Summary: schema.Summary{Repetitions: count, Metrics: []schema.Metric{}, Warnings: []string{}},
		Claim:   c.Claim, Expect: c.Expect, Scale: c.scaleString(), Sweep: c.Sweep,
		PredictedPeakRSSBytes: c.Prediction.PeakRSSBytes,
	}
	if p := c.Process; p != nil {
		index, ph := c.Index, c.PhaseIndex
		r.Index, r.PhaseIndex, r.Command, r.Env = &index, &ph, p.RecordCommand, p.RecordEnv
	}
	return r
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
