package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"memprobe/instrument/procfs"
	"memprobe/schema"
)

// mainEnv makes this test binary the probe command: `probe run` re-executes
// os.Executable(), which in a test is the test binary, and TestMain hands
// such a child to main. The tests set it (t.Setenv) so that their
// children inherit it.
const mainEnv = "MEMPROBE_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// childProcesses lists the processes whose parent is this one, zombies
// included.
func childProcesses(t *testing.T) []int {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	var out []int
	for _, p := range (procfs.FS{}).Descendants(os.Getpid()) {
		if p.PPID == os.Getpid() {
			out = append(out, p.PID)
		}
	}
	return out
}

func probeRun(t *testing.T, args ...string) (*schema.Report, string, string, error) {
	t.Helper()
	t.Setenv(mainEnv, "1")
	out := filepath.Join(t.TempDir(), "report.json")
	stdout, stderr, err := runProbe(append([]string{"run", "--out", out}, args...)...)
	if c := childProcesses(t); len(c) > 0 {
		t.Errorf("child processes left after probe run: %v", c)
	}
	rep, rerr := schema.ReadReport(out)
	if rerr != nil {
		t.Fatalf("probe run %v: %v; no report: %v\n%s", args, err, rerr, stderr)
	}
	return rep, stdout, stderr, err
}

// small is a scale at which a configuration runs in well under a second.
var small = []string{"--preset", "tiny", "--steps", "2", "--data", "synthetic:100KB", "--count", "1"}

// TestRunCrash: a child that panics after its first step (the test-only
// crash hook) is recorded as failed with its panic; the other
// configurations run and keep their results; the run exits non-zero.
func TestRunCrash(t *testing.T) {
	t.Setenv(crashEnv, "decode-P1")
	rep, stdout, _, err := probeRun(t, append([]string{"--plan", "decode"}, small...)...)
	if err == nil || !strings.Contains(err.Error(), "1 of 4 configurations did not finish") {
		t.Errorf("probe run: %v, want an error counting the failure", err)
	}
	if len(rep.Runs) != 4 {
		t.Fatalf("%d runs, want 4", len(rep.Runs))
	}
	for _, r := range rep.Runs {
		if r.Name == "decode-P1" {
			if r.Status != schema.StatusFailed || !strings.Contains(r.Reason, "exit status 2: panic: "+crashEnv+"=decode-P1: test crash after step 1") {
				t.Errorf("decode-P1: status %s, reason %q", r.Status, r.Reason)
			}
			continue
		}
		if r.Status != schema.StatusOK || len(r.Repetitions) != 1 || r.Repetitions[0].Steps != 2 || r.Outside[0].MaxRSSBytes <= 0 {
			t.Errorf("%s: status %s (%s), %d results", r.Name, r.Status, r.Reason, len(r.Repetitions))
		}
	}
	if !strings.Contains(stdout, "plan decode") {
		t.Errorf("stdout has no tables:\n%s", stdout)
	}
}

// TestRunTimeout: a child past a tiny --timeout is killed and recorded.
func TestRunTimeout(t *testing.T) {
	rep, _, _, err := probeRun(t, append([]string{"--plan", "threads", "--phases", "before", "--timeout", "100ms"}, small...)...)
	if err == nil {
		t.Error("probe run with a timed-out child: no error")
	}
	r := rep.Runs[0]
	if r.Status != schema.StatusTimeout || r.Outside[0].Signal != "SIGKILL" || !strings.Contains(r.Reason, "--timeout 100ms") {
		t.Errorf("status %s, reason %q, outside %+v", r.Status, r.Reason, r.Outside[0])
	}
}

// TestRunMemLimit: a configuration predicted above --mem-limit is
// refused up front, with the prediction in the report; when every one is
// refused nothing ran, and the run says so in one line and exits 1 (not a
// usage error), the report written all the same.
func TestRunMemLimit(t *testing.T) {
	for _, c := range []struct {
		args []string
		runs int
		want string
	}{
		{[]string{"--plan", "decode", "--phases", "before", "--mem-limit", "20MiB"}, 1, "nothing ran: the one configuration was refused by --mem-limit 20MiB"},
		{[]string{"--plan", "decode", "--mem-limit", "1B"}, 4, "nothing ran: all 4 configurations were refused by --mem-limit 1B"},
	} {
		rep, _, _, err := probeRun(t, append(c.args, small...)...)
		var ue usageError
		var ec interface{ ExitCode() int }
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") || errors.As(err, &ue) || errors.As(err, &ec) {
			t.Errorf("%v: %v, want an error of exit status 1 containing %q", c.args, err, c.want)
		}
		if len(rep.Runs) != c.runs {
			t.Fatalf("%v: %d runs in the report, want %d", c.args, len(rep.Runs), c.runs)
		}
		for _, r := range rep.Runs {
			if r.Status != schema.StatusSkipped || !strings.Contains(r.Reason, "predicted peak RSS") || !strings.Contains(r.Reason, "above --mem-limit") || len(r.Outside) != 0 {
				t.Errorf("%v: %s: status %s, reason %q", c.args, r.Name, r.Status, r.Reason)
			}
		}
	}
}

// TestRunUnfinished: the exit status of a finished run: refusals among
// configurations that ran are not an error, a run where every
// configuration was refused is, and so is any failure.
func TestRunUnfinished(t *testing.T) {
	rep := func(st ...schema.Status) *schema.Report {
		r := &schema.Report{}
		for i, s := range st {
			r.Runs = append(r.Runs, schema.Run{Name: "c" + strconv.Itoa(i), Status: s})
		}
		return r
	}
	const limit = "--mem-limit 1GiB"
	for _, c := range []struct {
		rep  *schema.Report
		want string // "": no error
	}{
		{rep(schema.StatusOK, schema.StatusOK), ""},
		{rep(schema.StatusOK, schema.StatusSkipped), ""},
		{rep(schema.StatusSkipped, schema.StatusSkipped), "nothing ran: all 2 configurations were refused by --mem-limit 1GiB (predicted peak RSS above it); the predictions are in r.json"},
		{rep(schema.StatusSkipped), "nothing ran: the one configuration was refused by --mem-limit 1GiB"},
		{rep(schema.StatusSkipped, schema.StatusFailed), "1 of 2 configurations did not finish (c1: failed)"},
	} {
		err := unfinished(c.rep, "r.json", limit)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%d runs: %v, want no error", len(c.rep.Runs), err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%d runs: %v, want %q", len(c.rep.Runs), err, c.want)
		}
	}
}

// TestRunInputsCheckedFirst: a value every child would refuse (a sweep
// value out of probe train's range, an empty --data file, a
// --profile-dir that is a file) is one usage error naming the flag before
// any child starts: no report, no child.
func TestRunInputsCheckedFirst(t *testing.T) {
	t.Setenv(mainEnv, "1") // were a child started, it would be probe train
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.txt")
	keep := filepath.Join(dir, "keep.out")
	for _, f := range []string{empty, keep} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--sweep", "cache-scale=0.5"}, "--sweep cache-scale: 0.5 out of range [1, 64]"},
		{[]string{"--sweep", "cache-scale=NaN"}, `--sweep cache-scale: "NaN" is not a number`},
		{[]string{"--sweep", "threads=2000"}, "--sweep threads: 2000 out of range [1, 1024]"},
		{[]string{"--data", empty}, "--data " + empty + ": file is empty"},
		{[]string{"--data", filepath.Join(dir, "missing.txt")}, "--data " + filepath.Join(dir, "missing.txt") + ": no such file or directory"},
		{[]string{"--data", dir}, "--data " + dir + ": is a directory"},
		{[]string{"--profile-dir", keep}, "--profile-dir " + keep + ": exists and is not a directory"},
	} {
		out := filepath.Join(t.TempDir(), "report.json")
		args := append([]string{"run", "--quick", "--plan", "threads", "--out", out}, c.args...)
		_, stderr, err := runProbe(args...)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v, want one usage error line containing %q", c.args, err, c.want)
		}
		if _, err := os.Stat(out); err == nil || strings.Contains(stderr, "run 1/") {
			t.Errorf("%v: children ran:\n%s", c.args, stderr)
		}
		if ch := childProcesses(t); len(ch) > 0 {
			t.Errorf("%v: child processes left: %v", c.args, ch)
		}
	}
}

// TestRunQuick runs `probe run --quick` end to end (in -short mode, one
// plan of it) and checks the report, the tables and the progress.
func TestRunQuick(t *testing.T) {
	args := []string{"--quick"}
	want := 17
	if testing.Short() {
		args, want = append(args, "--plan", "decode,embedding"), 7
	}
	rep, stdout, stderr, err := probeRun(t, args...)
	if err != nil {
		t.Fatalf("probe run --quick: %v\n%s", err, stderr)
	}
	if len(rep.Runs) != want || rep.Schema != schema.ReportVersion || len(rep.CommandLine) == 0 || rep.EndTime == "" {
		t.Fatalf("%d runs, schema %q", len(rep.Runs), rep.Schema)
	}
	for _, r := range rep.Runs {
		if r.Status != schema.StatusOK || r.Summary.Completed != 1 || len(r.Summary.Metrics) != 7 || r.Scale == "" || r.PredictedPeakRSSBytes <= 0 {
			t.Errorf("%s: status %s (%s), summary %+v", r.Name, r.Status, r.Reason, r.Summary)
		}
		if r.Config.Preset != "tiny" || r.Config.GEMMUsed == "" {
			t.Errorf("%s: config %+v", r.Name, r.Config)
		}
	}
	if !strings.Contains(stdout, "plan decode") || !strings.Contains(stderr, "configurations in") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	if !slices.Contains(rep.Warnings, "--quick: tiny scale, one repetition: a smoke test, not a measurement") {
		t.Errorf("warnings %q", rep.Warnings)
	}
}

// TestRunDryRunAndMerge: --dry-run prints the children and starts none;
// two shards merge into one report with every configuration.
func TestRunDryRunAndMerge(t *testing.T) {
	stdout, _, err := runProbe("run", "--plan", "decode", "--dry-run", "--mem-limit", "1GiB")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"4 configurations × 3 repetitions", "train --preset tiny --threads 63 --plan decode --phase P3 --steps 3 --data synthetic:1MB --json JSON", "decode: tiny preset"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("dry run does not say %q:\n%s", want, stdout)
		}
	}
	dir := t.TempDir()
	var files []string
	for i := range 2 {
		rep, _, _, err := probeRun(t, append([]string{"--plan", "decode", "--shard", strconv.Itoa(i) + "/2", "--format", "json"}, small...)...)
		if err != nil || len(rep.Runs) != 2 {
			t.Fatalf("shard %d/2: %v, %d runs", i, err, len(rep.Runs))
		}
		f := filepath.Join(dir, strconv.Itoa(i)+".json")
		if err := schema.WriteReport(f, rep); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	all := filepath.Join(dir, "all.json")
	if _, _, err := runProbe(append(append([]string{"merge"}, files...), "--out", all)...); err != nil {
		t.Fatal(err)
	}
	m, err := schema.ReadReport(all)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range m.Runs {
		names = append(names, r.Name)
	}
	if strings.Join(names, " ") != "decode-before decode-P1 decode-P2 decode-P3" {
		t.Errorf("merged runs %v", names)
	}
	if _, _, err := runProbe("merge", files[0]); err == nil {
		t.Error("merge without --out: no error")
	}
}

// TestRunUsageErrors: a bad command line is a usage error (exit 2), and
// an unwritable --out fails before any child starts.
func TestRunUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--sweep", "threads"}, "want AXIS=V1,V2"},
		{[]string{"--sweep", "threads=1,2", "--sweep", "threads=4"}, "given twice"},
		{[]string{"--shard", "2/2"}, "want I/N"},
		{[]string{"--format", "html"}, "--format"},
		{[]string{"--plan", "nope"}, `plan "nope"`},
		{[]string{"--phases", "P9"}, `phase "P9"`},
		{[]string{"--threads", "0"}, "threads 0 out of range"},
		{[]string{"--mem-limit", "lots"}, "--mem-limit"},
		{[]string{"--timeout", "0s"}, "--timeout"},
	} {
		_, _, err := runProbe(append([]string{"run", "--dry-run"}, c.args...)...)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want a usage error containing %q", c.args, err, c.want)
		}
	}
	_, _, err := runProbe("run", "--plan", "decode", "--out", filepath.Join(t.TempDir(), "missing", "r.json"))
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("--out in a missing directory: %v", err)
	}
}

// TestRunProfilesTable: probe run prints the same tables as probe report
// of the report it wrote, the profiles of --profile-dir included (before,
// only probe report listed them).
func TestRunProfilesTable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "prof")
	rep, stdout, stderr, err := probeRun(t, append([]string{"--plan", "decode", "--phases", "before", "--profile-dir", dir}, small...)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "profiles written by probe run --profile-dir") {
		t.Errorf("probe run lists no profiles:\n%s", stdout)
	}
	out := filepath.Join(t.TempDir(), "r.json")
	if err := schema.WriteReport(out, rep); err != nil {
		t.Fatal(err)
	}
	again, _, err := runProbe("report", out)
	if err != nil {
		t.Fatal(err)
	}
	if again != stdout {
		t.Errorf("probe run printed\n%s\nprobe report prints\n%s", stdout, again)
	}
}

// TestRunQuickTwice: probe run --quick twice with the default output
// leaves the first report as it was and refuses (a usage error, before
// any child), naming the file; --dry-run names it; --force replaces it;
// the quick report is named apart from a full run's. Two --quick reports
// (one repetition a side) with every peak RSS 1.5x do not pass the gate
// with --strict (one run a side measures no noise: undecided).
func TestRunQuickTwice(t *testing.T) {
	t.Setenv(mainEnv, "1")
	t.Chdir(t.TempDir())
	args := []string{"run", "--quick", "--plan", "decode", "--phases", "before", "--format", "csv"}
	if _, stderr, err := runProbe(args...); err != nil {
		t.Fatalf("first run: %v\n%s", err, stderr)
	}
	out := defaultOut(schema.Environment{}, true)
	if out != "probe-nocommit-quick.json" {
		t.Errorf("default --quick report %q", out)
	}
	first, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("first run wrote no %s: %v", out, err)
	}
	_, stderr, err := runProbe(args...)
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--out "+out+": a report is already there") || !strings.Contains(err.Error(), "--force replaces it") {
		t.Errorf("second run: got %v, want a usage error refusing to replace %s", err, out)
	}
	if strings.Contains(stderr, "configurations in") {
		t.Errorf("second run started children:\n%s", stderr)
	}
	if now, _ := os.ReadFile(out); !bytes.Equal(now, first) {
		t.Errorf("%s changed: %d bytes, was %d", out, len(now), len(first))
	}
	stdout, _, err := runProbe("run", "--quick", "--plan", "decode", "--phases", "before", "--dry-run")
	if want := "report: " + out + " (already there: probe run refuses to replace it without --force)"; err != nil || !strings.Contains(stdout, want) {
		t.Errorf("--dry-run: %v, stdout lacks %q:\n%s", err, want, stdout)
	}
	head := scalePeakRSS(t, out, "head.json", 1.5)
	_, stderr, err = runProbe("diff", "--strict", "--fail-on", "peak_rss_bytes:+5%", out, head)
	var be breachError
	if !errors.As(err, &be) || be.unjudged != 1 || !strings.Contains(stderr, "undecided: ") || !strings.Contains(stderr, "n=1+1, too few repetitions to measure the noise") {
		t.Errorf("two --quick reports, 1.5x, --strict: got %v, stderr %q; want exit status 1 saying why", err, stderr)
	}
	if _, stderr, err := runProbe(append(args, "--force")...); err != nil {
		t.Errorf("--force: %v\n%s", err, stderr)
	}
}
