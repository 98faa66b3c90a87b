package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"memprobe/schema"
)

// TestRunPlanFileUsage: a bad plan file, or a flag of the built-in plans
// beside --plan-file, is a usage error before any child starts, and no
// report is written.
func TestRunPlanFileUsage(t *testing.T) {
	bad := filepath.Join("..", "..", "run", "planfile", "testdata", "bad", "05-duplicate-phase.toml")
	good := filepath.Join("..", "..", "examples", "c-threads.toml")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--plan-file", bad}, bad + `:8: phase "a" is named twice (first at line 4)`},
		{[]string{"--plan-file", "no-such.toml"}, "--plan-file no-such.toml: no such file or directory"},
		{[]string{"--plan-file", good, "--threads", "8"}, "--threads does not apply to --plan-file"},
		{[]string{"--plan-file", good, "--sweep", "stack=1M"}, "--sweep stack: " + good + " uses no {stack}"},
		{[]string{"--plan-file", good, "--phases", "P9"}, `has no phase "P9"`},
		{[]string{"--plan-file", good, "--shard", "auto"}, "none of JOB_COMPLETION_INDEX"},
	}
	for _, c := range cases {
		out := filepath.Join(t.TempDir(), "r.json")
		_, _, err := runProbe(append([]string{"run", "--out", out}, c.args...)...)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("probe run %q: %v, want a usage error with %q", c.args, err, c.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("probe run %q wrote a report", c.args)
		}
	}
}

// phaseRun is the run of a phase in a report.
func phaseRun(t *testing.T, rep *schema.Report, phase string) schema.Run {
	t.Helper()
	for _, r := range rep.Runs {
		if r.Phase == phase {
			if r.Status != schema.StatusOK {
				t.Fatalf("%s: %s: %s", r.Name, r.Status, r.Reason)
			}
			return r
		}
	}
	t.Fatalf("no phase %s in the report", phase)
	return schema.Run{}
}

func medianMetric(r schema.Run, name string) float64 {
	for _, m := range r.Summary.Metrics {
		if m.Name == name {
			return m.Median
		}
	}
	return math.NaN()
}

// TestRunPlanFileCThreads runs examples/c-threads.toml at a small scale
// (8 threads): the stack fix moves the address space by 7 MiB a thread
// and not the resident set, which the claims column footnotes against
// the note's claimed 455 MB; MALLOC_ARENA_MAX=2 removes arenas' reservations; lazy
// batches save about 63 x 48 KiB of RSS.
func TestRunPlanFileCThreads(t *testing.T) {
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler (cc): the example plan compiles its program")
	}
	rep, stdout, stderr, err := probeRun(t, "--plan-file", filepath.Join("..", "..", "examples", "c-threads.toml"),
		"--count", "1", "--sweep", "threads=8", "--sweep", "hold_ms=400")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	before, p1, p2, p3 := phaseRun(t, rep, "before"), phaseRun(t, rep, "P1"), phaseRun(t, rep, "P2"), phaseRun(t, rep, "P3")
	const mib = 1 << 20
	if d := medianMetric(before, "final_vsz_bytes") - medianMetric(p1, "final_vsz_bytes"); d < 40*mib || d > 72*mib {
		t.Errorf("8 stacks of 8 MiB -> 1 MiB: VSZ down %.1f MiB, want about 56", d/mib)
	}
	if d := medianMetric(before, "peak_rss_bytes") - medianMetric(p1, "peak_rss_bytes"); math.Abs(d) > 8*mib {
		t.Errorf("stacks: peak RSS moved %.1f MiB: a reservation, not resident memory", d/mib)
	}
	if d := medianMetric(p1, "final_vsz_bytes") - medianMetric(p2, "final_vsz_bytes"); d < 3*64*mib {
		t.Errorf("MALLOC_ARENA_MAX=2 with 8 threads: VSZ down %.1f MiB, want several 64 MiB arenas", d/mib)
	}
	if d := medianMetric(p2, "peak_rss_bytes") - medianMetric(p3, "peak_rss_bytes"); d < 1*mib || d > 6*mib {
		t.Errorf("lazy batches: peak RSS down %.2f MiB, want about 62 x 48 KiB = 2.9 MiB", d/mib)
	}
	for _, want := range []string{"the note claims -433.9 MiB (-455 MB)", "stacks.threads", "c.malloc.arenas"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the tables lack %q:\n%s", want, stdout)
		}
	}
}

// TestRunPlanFileTrainAgrees: the reference trainer's threads plan run
// as outside programs (examples/train-threads.toml) measures each phase
// as the built-in plan does: its peak RSS, and its peak RSS against
// before (the claims' figure), within the two runs' spread plus 5 % of
// the figure: three repetitions of a 30 MiB process on a shared machine
// spread less than two runs minutes apart differ, and the built-in
// child's own figure is read before it writes its result, the outside
// one over its whole life (about 1 MiB more at the tiny preset). wait4's
// maxrss is not compared: for a program smaller than the probe that
// starts it, it is the probe's own peak (docs/exec.md).
func TestRunPlanFileTrainAgrees(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 42 trainer runs")
	}
	builtin, _, stderr, err := probeRun(t, "--plan", "threads", "--preset", "tiny", "--steps", "2",
		"--data", "synthetic:100KB", "--threads", "4", "--count", "3")
	if err != nil {
		t.Fatalf("built-in: %v\n%s", err, stderr)
	}
	outside, _, stderr, err := probeRun(t, "--plan-file", filepath.Join("..", "..", "examples", "train-threads.toml"),
		"--sweep", "preset=tiny", "--sweep", "steps=2", "--sweep", "data=synthetic:100KB", "--sweep", "threads=4", "--count", "3")
	if err != nil {
		t.Fatalf("plan file: %v\n%s", err, stderr)
	}
	if len(builtin.Runs) != len(outside.Runs) {
		t.Fatalf("%d phases built in, %d in the plan file", len(builtin.Runs), len(outside.Runs))
	}
	spread := func(m schema.Metric) float64 { return m.Max - m.Min }
	const mib = 1 << 20
	b0, o0 := metricOf(builtin.Runs[0], "peak_rss_bytes"), metricOf(outside.Runs[0], "peak_rss_bytes")
	for i, b := range builtin.Runs {
		o := outside.Runs[i]
		if b.Phase != o.Phase {
			t.Fatalf("phase %d: %s built in, %s in the plan file", i, b.Phase, o.Phase)
		}
		if o.Repetitions[0].Kind != schema.KindProcess {
			t.Errorf("%s: the plan file's result is of kind %q", o.Phase, o.Repetitions[0].Kind)
		}
		pb, po := metricOf(b, "peak_rss_bytes"), metricOf(o, "peak_rss_bytes")
		if d, tol := math.Abs(pb.Median-po.Median), max(spread(pb), spread(po))+0.05*pb.Median; d > tol {
			t.Errorf("%s: peak RSS %.1f MiB built in, %.1f MiB from outside: %.2f MiB apart, more than %.2f", b.Phase, pb.Median/mib, po.Median/mib, d/mib, tol/mib)
		}
		db, do := pb.Median-b0.Median, po.Median-o0.Median
		if d, tol := math.Abs(db-do), spread(pb)+spread(po)+spread(b0)+spread(o0)+0.05*b0.Median; d > tol {
			t.Errorf("%s: peak RSS against before %+.1f MiB built in, %+.1f MiB from outside: %.2f MiB apart, more than %.2f", b.Phase, db/mib, do/mib, d/mib, tol/mib)
		}
	}
}

func metricOf(r schema.Run, name string) schema.Metric {
	for _, m := range r.Summary.Metrics {
		if m.Name == name {
			return m
		}
	}
	return schema.Metric{Median: math.NaN()}
}

// TestRunShardAutoSchedulers: the probe's side of docs/run.md's
// Kubernetes Indexed Job and Slurm array: four shards, each run with the
// variables the scheduler sets and --shard auto, and probe merge of their
// reports give the configurations of the unsharded run; a missing shard
// is named.
func TestRunShardAutoSchedulers(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.toml")
	os.WriteFile(plan, []byte(`
name = "cheap"
[vars]
n = 1
[[phase]]
name = "a"
command = ["/bin/sh", "-c", "exit 0 # {n}"]
[[phase]]
name = "b"
command = ["/bin/sh", "-c", "exit 0 # {n}"]
`), 0o644)
	args := []string{"--plan-file", plan, "--sweep", "n=1,2,3", "--count", "1", "--format", "json"}
	whole, _, _, err := probeRun(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	schedulers := map[string]func(k int) map[string]string{
		// An Indexed Job with completions: 4 sets JOB_COMPLETION_INDEX.
		"kubernetes": func(k int) map[string]string { return map[string]string{"JOB_COMPLETION_INDEX": fmt.Sprint(k)} },
		// sbatch --array=0-3
		"slurm": func(k int) map[string]string {
			return map[string]string{"SLURM_ARRAY_TASK_ID": fmt.Sprint(k), "SLURM_ARRAY_TASK_MIN": "0",
				"SLURM_ARRAY_TASK_MAX": "3", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_STEP": "1"}
		},
	}
	for name, env := range schedulers {
		var shards []string
		for k := range 4 {
			for v, x := range env(k) {
				t.Setenv(v, x)
			}
			out := filepath.Join(dir, fmt.Sprintf("%s-%d.json", name, k))
			spec := "auto"
			if name == "kubernetes" {
				spec = "auto/4" // the Job's completions: Kubernetes does not set it
			}
			if _, _, err := runProbe(append([]string{"run", "--out", out, "--shard", spec}, args...)...); err != nil {
				t.Fatalf("%s shard %d: %v", name, k, err)
			}
			for v := range env(k) {
				os.Unsetenv(v)
			}
			shards = append(shards, out)
		}
		merged := filepath.Join(dir, name+"-all.json")
		stdout, _, err := runProbe(append([]string{"merge", "--out", merged}, shards...)...)
		if err != nil {
			t.Fatalf("%s: merge: %v", name, err)
		}
		m, err := schema.ReadReport(merged)
		if err != nil {
			t.Fatal(err)
		}
		var got, want []string
		for i := range m.Runs {
			got = append(got, m.Runs[i].Name+" "+strings.Join(m.Runs[i].Command, " "))
		}
		for i := range whole.Runs {
			want = append(want, whole.Runs[i].Name+" "+strings.Join(whole.Runs[i].Command, " "))
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: merged %q, want the unsharded %q (%s)", name, got, want, stdout)
		}
		partial := filepath.Join(dir, name+"-partial.json")
		stdout, _, err = runProbe("merge", "--out", partial, shards[0], shards[1], shards[3])
		if err != nil || !strings.Contains(stdout, "incomplete: shard 2/4") {
			t.Errorf("%s: merge without shard 2: %v, %q", name, err, stdout)
		}
	}
}

// TestPlanFileCommittedReport: examples/testdata/c-threads-report.json.gz
// is `probe run --plan-file examples/c-threads.toml --count 3` on the
// 2-core development machine (docs/run.md). probe report reads it as
// any run report: the note's 455 MB stack saving is refuted in peak RSS
// and the stacks' reservation is what moved.
func TestPlanFileCommittedReport(t *testing.T) {
	stdout, _, err := runProbe("report", filepath.Join("..", "..", "examples", "testdata", "c-threads-report.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"[1] P1, no: peak RSS changed by",
		"the note claims -433.9 MiB (-455 MB)",
		"c.malloc.arenas",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("probe report lacks %q:\n%s", want, stdout)
		}
	}
	// The phase table shows the fixes where they act: the stacks' and the
	// arenas' reservations at the peak walk, each claim checked by name.
	if !regexp.MustCompile(`(?m)^phase .*final VSZ\s+stacks reserved\s+stacks resident\s+arenas reserved\s+arenas resident$`).MatchString(stdout) {
		t.Errorf("the phase table has no stacks and arenas columns:\n%s", stdout)
	}
	// Text folds the table to 120 columns: the verdict in the first part,
	// the reservations in the second.
	if !regexp.MustCompile(`(?m)^P2 .*yes `).MatchString(stdout) || !regexp.MustCompile(`(?m)^P2 .*\s64 MiB\s+\S+ MiB$`).MatchString(stdout) {
		t.Errorf("P2: want its arenas' claim agreeing and 64 MiB of arenas reserved:\n%s", stdout)
	}
	// The threads' stacks, resident and reserved, before and after.
	if !regexp.MustCompile(`(?m)^stacks\.threads\s+4\.43 MiB\s+504\.2 MiB\s+4\.43 MiB\s+63\.2 MiB`).MatchString(stdout) {
		t.Errorf("probe report lacks the stacks' line:\n%s", stdout)
	}
}

// TestPlanFileReportGate: probe diff --fail-on gates a plan file's report
// as any run report: a 20 % larger peak RSS planted in P1 of the
// committed report fails the gate naming c-threads/P1; probe export
// writes its phases.
func TestPlanFileReportGate(t *testing.T) {
	base := filepath.Join("..", "..", "examples", "testdata", "c-threads-report.json.gz")
	rep, err := schema.ReadReport(base)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rep.Runs {
		r := &rep.Runs[i]
		if r.Phase != "P1" {
			continue
		}
		for k := range r.Repetitions {
			r.Repetitions[k].PeakRSSBytes = r.Repetitions[k].PeakRSSBytes * 6 / 5
		}
		for k := range r.Summary.Metrics {
			if m := &r.Summary.Metrics[k]; m.Name == "peak_rss_bytes" {
				for j := range m.Values {
					m.Values[j] *= 1.2
				}
				m.Median, m.Min, m.Max, m.CILow, m.CIHigh = m.Median*1.2, m.Min*1.2, m.Max*1.2, m.CILow*1.2, m.CIHigh*1.2
			}
		}
	}
	head := filepath.Join(t.TempDir(), "head.json")
	if err := schema.WriteReport(head, rep); err != nil {
		t.Fatal(err)
	}
	_, _, err = runProbe("diff", base, head, "--fail-on", "peak_rss_bytes:+5%")
	if err == nil || !strings.Contains(err.Error(), "past --fail-on") {
		t.Errorf("probe diff of the planted P1: %v, want the gate to fail", err)
	}
	if _, _, err := runProbe("diff", base, base, "--fail-on", "peak_rss_bytes:+5%"); err != nil {
		t.Errorf("probe diff of the report with itself: %v", err)
	}
	stdout, _, err := runProbe("export", base)
	if err != nil || !strings.Contains(stdout, "BenchmarkC-threads/phase=P1 1 ") {
		t.Errorf("probe export: %v\n%s", err, stdout)
	}
}
