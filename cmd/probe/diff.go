package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"memprobe/metric"
	"memprobe/report"
	"memprobe/run/runner"
	"memprobe/schema"
)

// diffCmdFlags are the command-line options of `probe diff`.
type diffCmdFlags struct {
	metrics []string
	failOn  string
	alpha   float64
	format  string
	reports string
	strict  bool
}

// breachError is a --fail-on breach: exit status 1, the breaches already
// written on stderr. n counts the regressions, unjudged the changes of the
// medians past a limit that the runs do not establish (undecided; they
// fail only with --strict), unchecked what the limits could not be checked
// on (a configuration that failed in head or that head did not run, a
// limited metric head did not measure).
type breachError struct{ n, unjudged, unchecked int }

func (b breachError) Error() string {
	var parts []string
	if b.n > 0 || b.unchecked+b.unjudged == 0 {
		parts = append(parts, fmt.Sprintf("%d %s past --fail-on", b.n, plural(b.n, "regression", "regressions")))
	}
	if b.unjudged > 0 {
		parts = append(parts, fmt.Sprintf("%d %s past --fail-on by the medians that the runs do not establish (undecided, --strict)", b.unjudged, plural(b.unjudged, "change", "changes")))
	}
	if b.unchecked > 0 {
		parts = append(parts, fmt.Sprintf("%d unchecked by --fail-on (failed or missing in head)", b.unchecked))
	}
	return "diff: " + strings.Join(parts, "; ")
}

// plural is one when n is 1, else many: "1 regression", "2 regressions".
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func newDiffCmd(stdout, stderr io.Writer) *cobra.Command {
	var f diffCmdFlags
	cmd := &cobra.Command{
		Use:   "diff BASE HEAD | diff BASE..HEAD [--reports DIR]",
		Short: "compare two run reports (or decode results) configuration by configuration; --fail-on makes it a CI gate",
		Long:  diffLong,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && isRange(args[0]) {
				return nil
			}
			if err := cobra.ExactArgs(2)(cmd, args); err != nil {
				return usageError{fmt.Errorf("diff: want two report files or directories, BASE and HEAD, or one git range BASE..HEAD: %w", err)}
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) == 1 {
				return runDiff(stdout, stderr, args[0], "", f)
			}
			return runDiff(stdout, stderr, args[0], args[1], f)
		},
	}
	f.register(cmd.Flags())
	return cmd
}

// register adds probe diff's flags to fs, bound to f.
func (f *diffCmdFlags) register(fs *pflag.FlagSet) {
	fs.StringSliceVar(&f.metrics, "metric", nil, "metrics to compare, comma-separated (default: "+strings.Join(metric.Defaults(metric.Run), ",")+
		"; for decode results "+strings.Join(metric.Defaults(metric.Decode), ",")+")")
	fs.StringVar(&f.failOn, "fail-on", "", "regression limits, e.g. 'peak_rss_bytes:+5%,go_heap_allocs_per_step:+0': exit 1 past one, or where head cannot be checked (a configuration failed or missing)")
	fs.Float64Var(&f.alpha, "alpha", report.DefaultAlpha, "significance level of the U test")
	fs.StringVar(&f.format, "format", "text", "output format: "+strings.Join(report.DiffFormats, ", "))
	fs.BoolVar(&f.strict, "strict", false, "with --fail-on: an undecided change (the medians past a limit, the runs unable to tell it from noise) fails too")
	fs.StringVar(&f.reports, "reports", ".", "with a range BASE..HEAD: the directory of the probe-<commit>.json reports")
}

// diffLong is probe diff's help: what it compares, how, and what makes
// --fail-on fail.
const diffLong = `diff compares two run reports (probe run's memprobe.report/v1 JSON; a job
result of probe train or probe exec is read as a report of one run), matching
configurations by plan, phase and sweep values. Per metric it prints the base
and head medians with their 95 % intervals, the change in percent and the
p-value of a Mann-Whitney U test (as benchstat does); "~" marks a change that
is not significant at --alpha, and a side with fewer than 4 repetitions gets a
warning beside the row. Deterministic metrics (go_heap_allocs_per_step,
ledger_total_bytes, decode_stats.syncs) are compared exactly, any change a
change, as long as each side has 2 or more repetitions and they agree; where the repetitions of
one build disagree (allocations the tiny allocator packs into shared heap
blocks, as the per-token decode modes make), the row says so and the metric
is compared as a measurement, so give a gate on it 3 or more repetitions.

--fail-on 'peak_rss_bytes:+5%,go_heap_allocs_per_step:+0' lists limits: "+"
means an increase is a regression, "-" a decrease; a limit is a percentage of
the base's median or an amount in the metric's unit. A significant change past
a limit is written on stderr, one line each, and the exit status is 1.

A regression is what the runs establish. Where the U test can decide at the
repetitions given, its verdict; where it cannot (its smallest p is
2/C(n+m, n): 0.100 at 3+3, probe run's default --count, and 1 at 1+1,
--quick's), every head repetition must be past every base repetition by more
than the limit (the ranges apart, as asv's continuous asks; 2 or more a
side). A change of the medians past a limit that the runs cannot tell from
noise is printed as undecided ("undecided: ...", with the metric's spread
and about how many repetitions a side would decide it) and passes; --strict
makes it fail. A change within the noise floor (no larger than the spread of
either side's repetitions and under 1 % of the base) is not printed. See
docs/run.md for the rule's false-alarm and miss rates. A deterministic
metric is compared exactly only where each side has 2 or more repetitions
and they agree; one run a side is a measurement.

A gate must not pass what it cannot check, so with --fail-on these are
breaches too, each a line on stderr ("unchecked: ..."): a configuration
that finished in base but failed, timed out, was killed or skipped in
head; one base ran and head did not (so a partial head, one shard of probe
run --shard I/N or a --phases subset, fails against a full base: merge the
shards with probe merge first, or compare like with like); and a metric
with a limit that base measured and head did not. A configuration only
head ran is no breach. Without --fail-on they are only listed.

Two results of probe exec (or attach) compare as reports of one run each;
besides peak_rss_bytes and final_vsz_bytes, the outside view's figures are
metrics of their own: process.vm_hwm_bytes, process.rusage_maxrss_bytes,
process.tree_peak_rss_bytes, process.rusage_user_ms,
process.rusage_system_ms, process.duration_ms and the sampler's peaks
(sampler.peaks.rss_bytes, vsz_bytes, rss_anon_bytes, pss_bytes), so
--fail-on 'process.vm_hwm_bytes:+10%' gates a program's memory.

A metric (of --metric or --fail-on) that no run report or decode result
can have, a typo, is a usage error (exit 2); one that no configuration of
BASE or HEAD measured is an error (exit 1), never a table of dashes or a
limit that passes unchecked.

BASE and HEAD may be directories: the reports in each are pooled, every
repetition of a configuration counting (repeated runs of one commit). One
argument BASE..HEAD is a git range: the reports probe run wrote for those two
commits (probe-<commit>.json) are read from --reports DIR.

Reports of different schema versions, or whose matched configurations ran at
different presets, are refused. Configurations only one report ran are listed;
two inputs with no configuration in common are an error (exit 1).
Matched configurations whose settings differ beyond the commit (the
configuration's fields, --data above all, and the tokens of data read) get a
warning naming the setting and both values, and so does a diff of a file with
itself (one path, the same bytes, or a range of one commit).

BASE and HEAD may also be two decode results (probe decode --json,
memprobe.decode/v1: one mode's record, or the array of --decode all). Records
are matched by mode, device, shape (B, T, C, V) and whether probabilities were
copied back. The default decode metrics are tokens_per_sec,
host_wait_ns_per_token, device_busy_pct, syncs_per_token, launches_per_token,
host_allocs_per_token and device_peak_bytes. tokens_per_sec,
host_wait_ns_per_token and device_busy_pct are compared over their per-pass
samples (passes of one process, not independent runs: a warning says so);
device_busy_ns_per_token has one value a side, too few for the test to call
a change. syncs_per_token, launches_per_token,
host_allocs_per_token, h2d_bytes, d2h_bytes and ledger_peak_bytes (and
device_peak_bytes where both sides took it from the ledger) are fixed by the
shape and compared exactly, so --fail-on 'host_allocs_per_token:+0,
tokens_per_sec:-10%' gates a decode change. Allocations are counted in heap
blocks, which tiny ones (under 16 B) share, so the modes that make them
(per-token-copy, per-token-view) move by a fraction between runs of one
build: between two modes that allocate, a change under 0.5 a token is shown
with that caveat and not counted as significant (one more 8-byte allocation
a token is +0.5); any change from 0 is. Where both sides pool several runs
(probe decode --runs N, or a directory of decode results, each file a run,
pooled as probe merge pools them), the measured figures are compared over
the runs, independent samples, instead of the passes. A decode result
against a run report is refused, and so is a directory that mixes them.`

func runDiff(stdout, stderr io.Writer, basePath, headPath string, f diffCmdFlags) error {
	if !slices.Contains(report.DiffFormats, f.format) {
		return usageError{fmt.Errorf("--format %q: not one of %s", f.format, strings.Join(report.DiffFormats, ", "))}
	}
	if !(f.alpha > 0 && f.alpha < 1) {
		return usageError{fmt.Errorf("--alpha %v out of range (0, 1)", f.alpha)}
	}
	ths, err := report.ParseThresholds(f.failOn)
	if err != nil {
		return usageError{fmt.Errorf("--fail-on: %w", err)}
	}
	for _, m := range f.metrics {
		if strings.TrimSpace(m) == "" {
			return usageError{fmt.Errorf("--metric: empty metric name")}
		}
		if err := checkMetricName("--metric", m, "probe diff"); err != nil {
			return err
		}
	}
	var extra []string
	for _, t := range ths {
		if err := checkMetricName("--fail-on", t.Metric, "probe diff"); err != nil {
			return err
		}
		extra = append(extra, t.Metric) // a metric with a limit is compared even when --metric leaves it out
	}
	opt := report.DiffOptions{Metrics: f.metrics, Extra: extra, Alpha: f.alpha, BaseName: basePath, HeadName: headPath}
	d, sites, err := diffInputs(basePath, headPath, f.reports, opt)
	if ue, ok := errors.AsType[*report.UnmeasuredError](err); ok {
		return unmeasuredError(ue, f.metrics)
	}
	if err != nil {
		return err
	}
	if err := nothingInCommon(d, basePath, headPath); err != nil {
		return err
	}
	if err := report.WriteDiff(stdout, d, f.format); err != nil {
		return err
	}
	if err := writeSitesDiff(stdout, sites[0], sites[1], f.format); err != nil {
		return err
	}
	var be breachError
	for _, b := range d.Breaches(ths) {
		what := "regression:"
		switch {
		case b.Undecided:
			what = "undecided:"
			be.unjudged++
		case b.Reason != "":
			what = "unchecked:"
			be.unchecked++
		default:
			be.n++
		}
		if _, err := fmt.Fprintln(stderr, what, b); err != nil {
			return err
		}
	}
	if !f.strict {
		be.unjudged = 0
	}
	if be.n+be.unjudged+be.unchecked > 0 {
		return be
	}
	return nil
}

// checkMetricName refuses a metric name that no run report nor decode
// result can have (report.KnownMetric): a usage error naming the flag,
// with some names that exist.
func checkMetricName(flag, m, cmd string) error {
	if run, decode := report.KnownMetric(m); run || decode {
		return nil
	}
	return usageError{fmt.Errorf("%s %s: no run report or decode result has a metric of that name (a metric is the JSON name of a figure; see %s --help); the metrics are %s", flag, m, cmd, strings.Join(metric.Names(-1), ", "))}
}

// unmeasuredError says which named metrics (of --metric, else of
// --fail-on) no configuration of the inputs measured: a runtime error
// (exit 1), the names being possible ones.
func unmeasuredError(ue *report.UnmeasuredError, metricFlag []string) error {
	var names []string
	for _, m := range ue.Metrics {
		flag := "--fail-on"
		if slices.Contains(metricFlag, m) {
			flag = "--metric"
		}
		names = append(names, flag+" "+m)
	}
	return fmt.Errorf("%s: %s", strings.Join(names, ", "), ue.Detail())
}

// diffInputs compares two inputs of one kind (report.Compare): run
// reports or decode results, each a file or a directory of them pooled,
// or the reports of a git range BASE..HEAD (headPath ""). Each side is
// read once (schema.Open); a decode result against anything else is
// refused in one line naming both, before any pooling. sites are each
// side's allocation sites where it is one probe exec --sites result
// (sitesOf), for writeSitesDiff.
func diffInputs(basePath, headPath, reportsDir string, opt report.DiffOptions) (d *report.Diff, sites [2]*schema.Sites, err error) {
	var base, head *report.Rows
	var same string
	if headPath == "" {
		b, h, baseName, headName, s, err := rangeReports(basePath, reportsDir)
		if err != nil {
			return nil, sites, err
		}
		base, head, opt.BaseName, opt.HeadName, same = report.ReportRows(b), report.ReportRows(h), baseName, headName, s
	} else {
		var in [2]diffInput
		for i, p := range []string{basePath, headPath} {
			if in[i], err = readDiffInput(p); err != nil {
				return nil, sites, err
			}
		}
		if in[0].decode != in[1].decode {
			return nil, sites, fmt.Errorf("diff: %s is %s and %s %s; compare like with like", basePath, in[0].what, headPath, in[1].what)
		}
		for i, side := range []**report.Rows{&base, &head} {
			if *side, err = in[i].rows(); err != nil {
				return nil, sites, err
			}
			sites[i] = sitesOf(in[i])
		}
		same = sameInput(basePath, headPath)
	}
	d, err = report.Compare(base, head, opt)
	if err == nil && same != "" {
		d.Warnings = append([]string{same}, d.Warnings...)
	}
	return d, sites, err
}

// diffInput is one side of probe diff as read (schema.Open): its files,
// whether they are decode results, and what the side is, in words, for
// the refusal to compare unlike kinds.
type diffInput struct {
	path   string
	dir    bool
	files  []schema.File
	decode bool
	what   string
}

// readDiffInput reads a diff argument: a file of any kind, or a
// directory whose *.json files are all of one kind (decode results, or
// run reports and job results), which it pools (rows).
func readDiffInput(path string) (diffInput, error) {
	st, err := os.Stat(path)
	in := diffInput{path: path, dir: err == nil && st.IsDir()}
	if !in.dir { // a missing file too: the reader says so
		f, err := openFile(path)
		if err != nil {
			return diffInput{}, err
		}
		in.files, in.decode, in.what = []schema.File{f}, f.Decode != nil, describeFile(f)
		return in, nil
	}
	in.files, err = schema.Open(path)
	if errors.Is(err, schema.ErrNoFiles) {
		return diffInput{}, fmt.Errorf("%s: a directory with no .json report in it", path)
	}
	if err != nil {
		return diffInput{}, err
	}
	dec := slices.IndexFunc(in.files, func(f schema.File) bool { return f.Decode != nil })
	other := slices.IndexFunc(in.files, func(f schema.File) bool { return f.Decode == nil })
	if dec >= 0 && other >= 0 {
		o := in.files[other]
		return diffInput{}, fmt.Errorf("diff: directory %s holds %s, a decode result of probe decode, and %s, %s: a directory pools one kind", path, in.files[dec].Path, o.Path, describeFile(o))
	}
	in.decode = dec >= 0
	in.what = "a directory of run reports"
	if in.decode {
		in.what = "a directory of decode results"
	}
	return in, nil
}

// describeFile says what a file read is, as schema.Describe words it.
func describeFile(f schema.File) string {
	switch {
	case f.Decode != nil:
		return schema.Describe(schema.DecodeVersion)
	case f.Result != nil:
		return schema.Describe(schema.ResultVersion)
	}
	return schema.Describe(schema.ReportVersion)
}

// rows are the side's rows: a file's, or a directory's pooled, run
// reports by runner.Pool (every repetition of a configuration counting),
// decode results run by run by runner.PoolDecode (each file a run, or
// the runs it pooled itself).
func (in diffInput) rows() (*report.Rows, error) {
	names := make([]string, len(in.files))
	for i, f := range in.files {
		names[i] = f.Path
	}
	if in.decode {
		if !in.dir {
			return report.DecodeRows(in.files[0].Decode), nil
		}
		sets := make([][]schema.DecodeRecord, len(in.files))
		for i, f := range in.files {
			sets[i] = f.Decode
		}
		recs, err := runner.PoolDecode(names, sets, nil)
		if err != nil {
			return nil, err
		}
		return report.DecodeRows(recs), nil
	}
	reps := make([]*schema.Report, len(in.files))
	for i, f := range in.files {
		var err error
		if reps[i], err = asReport(f); err != nil {
			return nil, err
		}
	}
	rep, err := poolReports(names, reps)
	if err != nil {
		return nil, err
	}
	return report.ReportRows(rep), nil
}

// poolDecodeFiles reads decode results and pools them (runner.PoolDecode),
// commandLine replacing theirs when not nil.
func poolDecodeFiles(files []string, commandLine []string) ([]schema.DecodeRecord, error) {
	sets := make([][]schema.DecodeRecord, len(files))
	for i, f := range files {
		if b, err := schema.ReadFile(f); err == nil {
			if err := notOurs(f, b); err != nil {
				return nil, err
			}
		}
		recs, err := schema.ReadDecode(f)
		if err != nil {
			return nil, err
		}
		sets[i] = recs
	}
	return runner.PoolDecode(files, sets, commandLine)
}

// isDecodeFile says, by peeking at its content, whether path is a file of
// probe decode --json (isDecodeResult: an array, or an object of the
// decode format of any version, which schema.ReadDecode then checks). A
// directory or an unreadable file is not: the report reader says what is
// wrong with it.
func isDecodeFile(path string) bool {
	st, err := os.Stat(path)
	if err != nil || st.IsDir() {
		return false
	}
	b, err := schema.ReadFile(path)
	return err == nil && isDecodeResult(b)
}

// describeDiffFile says what a file or directory is (readDiffInput's
// words), for probe merge's refusal to merge a decode result with
// something else; what it can of a file no reader takes.
func describeDiffFile(path string) string {
	if in, err := readDiffInput(path); err == nil {
		return in.what
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return "a directory of run reports"
	}
	b, err := schema.ReadFile(path)
	if err != nil {
		return "an unreadable file"
	}
	return schema.Describe(schemaOf(b))
}
