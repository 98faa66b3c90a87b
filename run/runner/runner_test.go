package runner

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"memprobe/internal/golden"
	"memprobe/internal/table"
	"memprobe/run/job"
	"memprobe/schema"
	"memprobe/trainer/phase"
)

func names(cs []Config) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func plan(t *testing.T, o Options) []Config {
	t.Helper()
	if err := o.resolve(); err != nil {
		t.Fatal(err)
	}
	cs, err := Plan(o)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestPlanPhases: every plan's every phase by default, in plan order;
// "after" is each plan's last phase; a phase runs in the plans that have
// it; each child's command line carries the configuration.
func TestPlanPhases(t *testing.T) {
	var all []string
	for _, p := range phase.Plans() {
		for _, ph := range p.Phases {
			all = append(all, p.Name+"-"+ph.Name)
		}
	}
	if got := names(plan(t, Options{MemLimit: 1})); !slices.Equal(got, all) {
		t.Errorf("default plan:\n got %v\nwant %v", got, all)
	}
	after := plan(t, Options{MemLimit: 1, Phases: []string{"after"}})
	if got, want := names(after), []string{"threads-P6", "arena-P2", "embedding-P2", "decode-P3"}; !slices.Equal(got, want) {
		t.Errorf("--phases after: %v, want %v", got, want)
	}
	got := names(plan(t, Options{MemLimit: 1, Phases: []string{"P6", "before", "after"}, Plans: []string{"threads", "arena"}}))
	if want := []string{"threads-before", "threads-P6", "arena-before", "arena-P2"}; !slices.Equal(got, want) {
		t.Errorf("--plan threads,arena --phases P6,before,after: %v, want %v", got, want)
	}
	c := after[0]
	want := "train --preset seed --threads 63 --plan threads --phase P6 --steps 3 --data synthetic:24MB"
	if got := strings.Join(c.Args, " "); got != want {
		t.Errorf("threads-P6 command line:\n got %s\nwant %s", got, want)
	}
	if c.Claim != "" || after[1].Claim == "" || !strings.Contains(c.Scale.String(), "seed preset") {
		t.Errorf("claims %q, %q; scale %q", c.Claim, after[1].Claim, c.Scale)
	}
	// Quick, and explicit scale flags, apply to every plan.
	for _, c := range plan(t, Options{MemLimit: 1, Quick: true, Steps: 5}) {
		if c.Scale.Preset != "tiny" || c.Scale.Steps != 5 || !strings.HasPrefix(c.Scale.Why, "--steps from the command line") {
			t.Errorf("%s: --quick --steps 5 gives scale %v", c.Name, c.Scale)
		}
	}
	for _, bad := range []Options{
		{Phases: []string{"P9"}},
		{Plans: []string{"nope"}},
		{Plans: []string{"arena"}, Phases: []string{"P6"}},
		{Preset: "huge"},
	} {
		bad.MemLimit = 1
		if _, err := Prepare(&bad); err == nil {
			t.Errorf("%+v: no error", bad)
		} else if oe := (*OptionsError)(nil); !errors.As(err, &oe) {
			t.Errorf("%+v: %v is not an OptionsError", bad, err)
		}
	}
}

// TestPlanSweep: axes form a grid (the first varies slowest); with a
// sweep the default phases are before and after; the swept knobs are on
// the command line and in the configuration.
func TestPlanSweep(t *testing.T) {
	threads, err := ParseAxis("threads=1,4")
	if err != nil {
		t.Fatal(err)
	}
	cache, err := ParseAxis("cache-scale=1,2")
	if err != nil {
		t.Fatal(err)
	}
	cs := plan(t, Options{MemLimit: 1, Plans: []string{"threads"}, Sweep: []Axis{threads, cache}})
	want := []string{
		"threads-before threads=1 cache-scale=1", "threads-before threads=1 cache-scale=2",
		"threads-before threads=4 cache-scale=1", "threads-before threads=4 cache-scale=2",
		"threads-P6 threads=1 cache-scale=1", "threads-P6 threads=1 cache-scale=2",
		"threads-P6 threads=4 cache-scale=1", "threads-P6 threads=4 cache-scale=2",
	}
	if got := names(cs); !slices.Equal(got, want) {
		t.Fatalf("sweep grid:\n got %q\nwant %q", got, want)
	}
	c := cs[3]
	if c.Threads != 4 || c.Schema.Threads != 4 || c.Schema.Pathology.CacheScale != 2 || c.Sweep["threads"] != "4" || c.Sweep["cache-scale"] != "2" {
		t.Errorf("%s: threads %d, schema threads %d, cache scale %g, sweep %v", c.Name, c.Threads, c.Schema.Threads, c.Schema.Pathology.CacheScale, c.Sweep)
	}
	args := strings.Join(c.Args, " ")
	if !strings.Contains(args, "--threads 4 ") || !strings.HasSuffix(args, "--cache-scale 2") {
		t.Errorf("%s: command line %s", c.Name, args)
	}
	for _, s := range []string{"threads", "threads=", "threads=0", "cache-scale=x", "decode=fast", "batch-alloc=some", "color=1", "threads=2,2"} {
		if _, err := ParseAxis(s); err == nil {
			t.Errorf("--sweep %s: no error", s)
		}
	}
	if a, err := ParseAxis("decode=batch,per-token-copy"); err != nil || len(a.Values) != 2 {
		t.Errorf("decode axis: %v, %v", a, err)
	}
}

// TestShard: the shards of a split are disjoint and together hold every
// configuration, each in plan order.
func TestShard(t *testing.T) {
	all := plan(t, Options{MemLimit: 1})
	seen := map[string]int{}
	for i := range 3 {
		s := Shard(all, i, 3)
		for k, c := range s {
			seen[c.Name]++
			if c.Index%3 != i || k > 0 && s[k-1].Index >= c.Index {
				t.Errorf("shard %d/3 holds #%d %s out of place", i, c.Index, c.Name)
			}
		}
	}
	for _, c := range all {
		if seen[c.Name] != 1 {
			t.Errorf("%s is in %d shards", c.Name, seen[c.Name])
		}
	}
	for _, s := range []string{"1", "3/3", "-1/2", "a/b", "0/0"} {
		if _, _, err := ParseShard(s); err == nil {
			t.Errorf("--shard %s: no error", s)
		}
	}
	if i, n, err := ParseShard("1/4"); i != 1 || n != 4 || err != nil {
		t.Errorf("--shard 1/4: %d, %d, %v", i, n, err)
	}
}

// TestDryRun compares the plan --dry-run prints with
// testdata/dryrun.golden (GOMAXPROCS 2: the executors depend on it).
func TestDryRun(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	o := Options{MemLimit: 2 << 30, Count: 3}
	cs, err := Prepare(&o)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WritePlan(&b, cs, o, "/some/bin/probe", table.Text); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "dryrun.golden", b.Bytes())
	// The threads plan's before state is predicted near what it measures
	// (4.53 GiB at seed, 63 threads, docs/phases.md) and above 2 GiB, so
	// it is refused.
	if p := cs[0].Prediction.PeakRSSBytes; p < 44*(1<<30)/10 || p > 5*(1<<30) {
		t.Errorf("threads-before predicted at %s", iec(p))
	}
	if !strings.Contains(b.String(), "refused: above --mem-limit") {
		t.Errorf("no configuration refused at --mem-limit 2GiB")
	}
}

func TestDatasetTokens(t *testing.T) {
	size := func(string) (int64, error) { return 1234, nil }
	for spec, want := range map[string]int64{"synthetic:24MB": 4_800_000, "synthetic:100KB": 20_000, "file.txt": 1234} {
		if n, err := datasetTokens(spec, size); n != want || err != nil {
			t.Errorf("%s: %d tokens, %v; want %d", spec, n, err, want)
		}
	}
	if _, err := datasetTokens("synthetic:lots", size); err == nil {
		t.Error("synthetic:lots: no error")
	}
}

func TestMemAvailable(t *testing.T) {
	n, err := job.ParseMemAvailable([]byte("MemTotal:       24576000 kB\nMemFree:  100 kB\nMemAvailable:   20000000 kB\n"))
	if n != 20000000<<10 || err != nil {
		t.Errorf("MemAvailable: %d, %v", n, err)
	}
	if _, err := job.ParseMemAvailable([]byte("MemTotal: 1 kB\n")); err == nil {
		t.Error("no MemAvailable line: no error")
	}
}

// TestMemLimitRefusal: a configuration predicted above --mem-limit is
// skipped with the predicted figure in its reason, and never started.
func TestMemLimitRefusal(t *testing.T) {
	o := fakeOptions(t, "crash:decode-before") // would fail if it started
	o.Plans, o.Phases, o.MemLimit = []string{"decode"}, []string{"before"}, 10<<20
	rep, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Runs[0]
	if r.Status != schema.StatusSkipped || !strings.Contains(r.Reason, "predicted peak RSS") ||
		!strings.Contains(r.Reason, iec(r.PredictedPeakRSSBytes)) || !strings.Contains(r.Reason, "10.0 MiB") {
		t.Errorf("status %s, reason %q", r.Status, r.Reason)
	}
	if len(r.Outside) != 0 || len(r.Repetitions) != 0 || r.Summary.Repetitions != 1 || r.Summary.Completed != 0 {
		t.Errorf("a refused configuration ran: %d outside, %d results, summary %+v", len(r.Outside), len(r.Repetitions), r.Summary)
	}
	if _, err := schema.ReadReport(o.Out); err != nil {
		t.Errorf("report: %v", err)
	}

	// --quick's warning counts the repetitions asked for: --count 2 is
	// not "one repetition".
	for count, want := range map[int]string{0: "one repetition", 2: "2 repetitions"} {
		q := fakeOptions(t, "crash:decode-before")
		q.Plans, q.Phases, q.MemLimit, q.Quick, q.Count = []string{"decode"}, []string{"before"}, 10<<20, true, count
		rep, err := Run(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if w := "--quick: tiny scale, " + want + ": a smoke test, not a measurement"; !slices.Contains(rep.Warnings, w) {
			t.Errorf("--quick --count %d: warnings %q, want %q", count, rep.Warnings, w)
		}
	}
}

// TestChildren: a child that crashes and one that writes no readable
// result are recorded as failed with the reason, the run goes on, and the
// others' repetitions are summarised; no child is left behind.
func TestChildren(t *testing.T) {
	o := fakeOptions(t, "crash:decode-P1;badjson:decode-P2")
	o.Plans, o.Count = []string{"decode"}, 3
	var progress bytes.Buffer
	o.Stderr = &progress
	rep, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	noChildrenLeft(t)
	got := map[string]schema.Run{}
	for _, r := range rep.Runs {
		got[r.Name] = r
	}
	if len(rep.Runs) != 4 {
		t.Fatalf("%d runs, want 4", len(rep.Runs))
	}
	crash := got["decode-P1"]
	if crash.Status != schema.StatusFailed || !strings.Contains(crash.Reason, "exit status 2: panic: fake crash of decode-P1") ||
		len(crash.Outside) != 1 || crash.Outside[0].ExitCode != 2 || len(crash.Repetitions) != 0 {
		t.Errorf("crash: status %s, reason %q, %d outside", crash.Status, crash.Reason, len(crash.Outside))
	}
	bad := got["decode-P2"]
	if bad.Status != schema.StatusFailed || !strings.Contains(bad.Reason, "no readable result") {
		t.Errorf("bad JSON: status %s, reason %q", bad.Status, bad.Reason)
	}
	ok := got["decode-P3"]
	if ok.Status != schema.StatusOK || len(ok.Repetitions) != 3 || len(ok.Outside) != 3 || ok.Summary.Completed != 3 {
		t.Fatalf("ok run: status %s (%s), %d results", ok.Status, ok.Reason, len(ok.Repetitions))
	}
	m := ok.Summary.Metrics[0]
	if m.Name != "peak_rss_bytes" || !slices.Equal(m.Values, []float64{4e6 + 1, 4e6 + 2, 4e6 + 3}) || m.Median != 4e6+2 || m.CILow != m.Min || m.CIHigh != m.Max {
		t.Errorf("peak_rss_bytes summary %+v", m)
	}
	if len(ok.Summary.Warnings) == 0 || !strings.Contains(ok.Summary.Warnings[0], "3 repetitions") {
		t.Errorf("summary warnings %q", ok.Summary.Warnings)
	}
	for _, x := range ok.Outside {
		if x.Status != schema.StatusOK || x.MaxRSSBytes <= 0 || x.WallSeconds <= 0 || x.ExitCode != 0 {
			t.Errorf("outside %+v", x)
		}
	}
	if ok.Claim == "" || ok.Description == "" || ok.Scale == "" || ok.PredictedPeakRSSBytes <= 0 || ok.Config.Plan != "decode" {
		t.Errorf("run fields: claim %q, description %q, scale %q, predicted %d", ok.Claim, ok.Description, ok.Scale, ok.PredictedPeakRSSBytes)
	}
	if !strings.Contains(progress.String(), "run 4/4 decode-P3 rep 3/3") || !strings.Contains(progress.String(), "decode-P1: failed") {
		t.Errorf("progress:\n%s", progress.String())
	}
	if _, err := schema.ReadReport(o.Out); err != nil {
		t.Errorf("report: %v", err)
	}
}

// TestTimeout: a child past --timeout is killed with its process group
// (a grandchild too) and recorded as timed out.
func TestTimeout(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "grandchild")
	o := fakeOptions(t, "spawn:decode-before")
	o.Env = append(o.Env, fakePidEnv+"="+pidFile)
	o.Plans, o.Phases, o.Timeout = []string{"decode"}, []string{"before"}, 2*time.Second
	rep, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	noChildrenLeft(t)
	r := rep.Runs[0]
	if r.Status != schema.StatusTimeout || !strings.Contains(r.Reason, "--timeout 2s") || r.Outside[0].Signal != "SIGKILL" || r.Outside[0].ExitCode != -1 {
		t.Errorf("status %s, reason %q, outside %+v", r.Status, r.Reason, r.Outside[0])
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the child wrote no grandchild pid: %v", err)
	}
	pid, _ := strconv.Atoi(string(b))
	for range 50 { // init reaps it
		if !alive(pid) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if alive(pid) {
		t.Errorf("grandchild %d survived its process group's kill", pid)
	}
}

// TestMemWatchdog: a child whose RSS passes --mem-limit is killed.
func TestMemWatchdog(t *testing.T) {
	o := fakeOptions(t, "grow:decode-before")
	o.Plans, o.Phases, o.MemLimit = []string{"decode"}, []string{"before"}, 200<<20
	rep, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	noChildrenLeft(t)
	r := rep.Runs[0]
	x := r.Outside[0]
	if r.Status != schema.StatusKilled || !strings.Contains(r.Reason, "passed --mem-limit 200.0 MiB") || x.Signal != "SIGKILL" {
		t.Errorf("status %s, reason %q, signal %q", r.Status, r.Reason, x.Signal)
	}
	if x.MaxRSSBytes < 200<<20 || x.PeakRSSBytes < 100<<20 || len(x.Timeline) == 0 {
		t.Errorf("outside: max RSS %s, sampled peak %s, %d points", iec(x.MaxRSSBytes), iec(x.PeakRSSBytes), len(x.Timeline))
	}
}

// TestInterrupt: when the context ends, the current child is killed, the
// report of what finished is written, and Run says ErrInterrupted.
func TestInterrupt(t *testing.T) {
	o := fakeOptions(t, "sleep:decode-P1")
	o.Plans = []string{"decode"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Interrupt a moment after decode-P1 (which sleeps) has started.
	o.Stderr = writerFunc(func(p []byte) {
		if strings.Contains(string(p), "decode-P1 rep 1") {
			time.AfterFunc(200*time.Millisecond, cancel)
		}
	})
	rep, err := Run(ctx, o)
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("Run: %v, want ErrInterrupted", err)
	}
	noChildrenLeft(t)
	if len(rep.Runs) != 2 || rep.Runs[0].Status != schema.StatusOK || rep.Runs[1].Status != schema.StatusKilled || !strings.Contains(rep.Runs[1].Reason, "interrupted") {
		t.Fatalf("runs %+v", rep.Runs)
	}
	if len(rep.Warnings) == 0 || !strings.Contains(rep.Warnings[len(rep.Warnings)-1], "2 of 4 configurations not run") {
		t.Errorf("warnings %q", rep.Warnings)
	}
	written, err := schema.ReadReport(o.Out)
	if err != nil || len(written.Runs) != 2 {
		t.Errorf("report written: %v", err)
	}
}

// TestOutputChecked: an output path that cannot be written fails before
// any child starts.
func TestOutputChecked(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	for _, out := range []string{filepath.Join(dir, "missing", "r.json"), filepath.Join(file, "r.json"), dir} {
		o := fakeOptions(t, "crash:decode-before")
		o.Plans, o.Phases, o.Out = []string{"decode"}, []string{"before"}, out
		if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), out) {
			t.Errorf("--out %s: %v", out, err)
		}
	}
	if err := CheckOutput(filepath.Join(dir, "ok.json")); err != nil {
		t.Error(err)
	}
}

// TestMerge: the shards of a split merge into what one run gives, in its
// order; reports at another preset, or holding the same configuration,
// do not merge.
func TestMerge(t *testing.T) {
	var reps []*schema.Report
	var files []string
	for i := range 2 {
		o := fakeOptions(t, "")
		o.Plans, o.Shard, o.Shards = []string{"arena", "decode"}, i, 2
		rep, err := Run(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		if rep, err = schema.ReadReport(o.Out); err != nil {
			t.Fatal(err)
		}
		reps, files = append(reps, rep), append(files, o.Out)
	}
	m, err := Merge(files, reps, []string{"probe", "merge"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range m.Runs {
		got = append(got, r.Name)
	}
	want := names(plan(t, Options{MemLimit: 1, Plans: []string{"arena", "decode"}}))
	if !slices.Equal(got, want) {
		t.Errorf("merged runs %v, want %v", got, want)
	}
	for _, w := range m.Warnings {
		if strings.Contains(w, "missing") || strings.Contains(w, "shard 0/2") {
			t.Errorf("warning %q", w)
		}
	}
	if _, err := Merge(files[:1], reps[:1], nil); err != nil {
		t.Errorf("one shard: %v", err)
	} else if m1, _ := Merge(files[:1], reps[:1], nil); !slices.ContainsFunc(m1.Warnings, func(w string) bool { return strings.Contains(w, "shard 1/2 missing") }) {
		t.Errorf("one shard of two: warnings %q", m1.Warnings)
	}
	if _, err := Merge([]string{"a", "a again"}, []*schema.Report{reps[0], reps[0]}, nil); err == nil || !strings.Contains(err.Error(), "shard 0/2 is also a") {
		t.Errorf("the same shard twice: %v", err)
	}
	other := *reps[1]
	other.Runs = slices.Clone(other.Runs)
	other.Runs[0].Config.Preset = "seed"
	if _, err := Merge([]string{"a", "b"}, []*schema.Report{reps[0], &other}, nil); err == nil || !strings.Contains(err.Error(), "preset") {
		t.Errorf("another preset: %v", err)
	}
}

// TestSummarize: the median and its interval as benchstat gives them:
// [min, max] with a warning below 6 values, a finite interval from 6.
func TestSummarize(t *testing.T) {
	run := func(vals ...float64) schema.Run {
		r := schema.Run{}
		for i, v := range vals {
			r.Repetitions = append(r.Repetitions, schema.Result{PeakRSSBytes: uint64(v), TokensPerSec: 100})
			r.Outside = append(r.Outside, schema.Outside{Repetition: i + 1, Status: schema.StatusOK, MaxRSSBytes: int64(v)})
		}
		return r
	}
	r := run(30, 10, 20)
	Summarize(&r, 4)
	m := r.Summary.Metrics[0]
	if m.N != 3 || m.Median != 20 || m.CILow != 10 || m.CIHigh != 30 || r.Summary.Completed != 3 || r.Summary.Repetitions != 4 {
		t.Errorf("3 values: %+v", m)
	}
	if w := strings.Join(r.Summary.Warnings, "|"); !strings.Contains(w, "3 of 4 repetitions completed") || !strings.Contains(w, "needs 6") || !strings.Contains(w, "peak_rss_bytes spreads") {
		t.Errorf("warnings %q", r.Summary.Warnings)
	}
	if got := r.Summary.Metrics[1]; got.Name != "max_rss_bytes" || got.Median != 20 {
		t.Errorf("outside metric %+v", got)
	}
	r = run(100, 101, 102, 103, 104, 105, 106, 107, 108, 109)
	Summarize(&r, 10)
	m = r.Summary.Metrics[0]
	if m.Median != 104.5 || !(m.CILow >= 100 && m.CILow < 104.5 && m.CIHigh > 104.5 && m.CIHigh <= 109) || math.Abs(m.Confidence-0.95) > 0.05 {
		t.Errorf("10 values: %+v", m)
	}
	if len(r.Summary.Warnings) != 0 {
		t.Errorf("10 close values: warnings %q", r.Summary.Warnings)
	}
	if got := MetricNames(); len(got) != 7 || got[0] != "peak_rss_bytes" {
		t.Errorf("metric names %v", got)
	}
}

type writerFunc func([]byte)

func (f writerFunc) Write(p []byte) (int, error) { f(p); return len(p), nil }

func TestTailWriter(t *testing.T) {
	w := newTailWriter(2)
	w.Write([]byte("a\nb\npanic: boom\n\tgoroutine 1\nlast"))
	if got := w.Lines(); !slices.Equal(got, []string{"panic: boom", "\tgoroutine 1", "last"}) {
		t.Errorf("lines %q", got)
	}
	if w.reason() != "panic: boom" {
		t.Errorf("reason %q", w.reason())
	}
	w = newTailWriter(3)
	w.Write([]byte("one\ntwo\n\n"))
	if w.reason() != "two" {
		t.Errorf("reason %q", w.reason())
	}
}

func TestDefaultOut(t *testing.T) {
	if got := DefaultOut(schema.Environment{VCSRevision: "9dae022aa0123"}); got != "probe-9dae022.json" {
		t.Errorf("with a revision: %s", got)
	}
	if got := DefaultOut(schema.Environment{}); got != "probe-nocommit.json" {
		t.Errorf("without: %s", got)
	}
}
