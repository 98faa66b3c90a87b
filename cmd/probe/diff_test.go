package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"memprobe/internal/golden"
	"memprobe/schema"
)

// The diff fixtures of package report (see its diff_test.go): a base at
// five repetitions, a head whose P6 peak RSS grew 20 %, and the base's
// commit run again.
const (
	diffBase      = "../../report/testdata/diff-base.json"
	diffRegressed = "../../report/testdata/diff-regressed.json"
	diffSame      = "../../report/testdata/diff-same.json"
)

// TestDiffGate: a breach of --fail-on is exit status 1 with one line per
// breach on stderr, and so is each configuration base ran that head did
// not (unchecked); the same commit run again passes the gate.
func TestDiffGate(t *testing.T) {
	stdout, stderr, err := runProbe("diff", "--fail-on", "peak_rss_bytes:+5%", diffBase, diffRegressed)
	var be breachError
	if !errors.As(err, &be) || be.n != 2 || be.unchecked != 3 {
		t.Fatalf("got %v, want a breach error of 2 regressions and 3 unchecked (exit status 1)", err)
	}
	if want := "diff: 2 regressions past --fail-on; 3 unchecked by --fail-on (failed or missing in head)"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	var ue usageError
	if errors.As(err, &ue) {
		t.Error("a breach is not a usage error")
	}
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "regression: threads/P6 threads=7 peak_rss_bytes: ") ||
		!strings.Contains(lines[0], "limit peak_rss_bytes:+5%") ||
		lines[4] != "unchecked: arena/P1: only in base, head did not run it: --fail-on cannot check it" {
		t.Errorf("stderr:\n%s", stderr)
	}
	if !strings.Contains(stdout, "+19.58%") {
		t.Errorf("stdout does not show the change:\n%s", stdout)
	}
	_, stderr, err = runProbe("diff", "--fail-on", "peak_rss_bytes:+5%,go_heap_allocs_per_step:+0,max_rss_bytes:+1%", diffBase, diffSame)
	if err != nil || stderr != "" {
		t.Errorf("same commit: %v, stderr %q", err, stderr)
	}
}

// TestDiffOutput prints the regressed diff as text and markdown.
func TestDiffOutput(t *testing.T) {
	for _, f := range []string{"text", "markdown"} {
		stdout, _, err := runProbe("diff", "--format", f, "--metric", "peak_rss_bytes,go_heap_allocs_per_step,tokens_per_sec", diffBase, diffRegressed)
		if err != nil {
			t.Fatal(err)
		}
		golden.Check(t, "diff."+f+".golden", []byte(stdout))
	}
	stdout, _, err := runProbe("diff", "--format", "json", diffBase, diffSame)
	if err != nil || !strings.HasPrefix(stdout, "{") {
		t.Errorf("json: %v, %.40q", err, stdout)
	}
}

// TestDiffErrors: a bad command line is exit status 2; an unreadable or
// incomparable report is an error (1) naming the file.
func TestDiffErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"diff", diffBase}, "want two report files"},
		{[]string{"diff", "--fail-on", "peak_rss_bytes:5%", diffBase, diffSame}, "must start with +"},
		{[]string{"diff", "--alpha", "0", diffBase, diffSame}, "--alpha 0 out of range"},
		{[]string{"diff", "--format", "html", diffBase, diffSame}, `--format "html"`},
		{[]string{"diff", "--metric", "peak_rss_bytes,,tokens_per_sec", diffBase, diffSame}, "empty metric"},
	} {
		_, _, err := runProbe(c.args...)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want a usage error containing %q", c.args, err, c.want)
		}
	}
	future := filepath.Join(t.TempDir(), "future.json")
	if err := os.WriteFile(future, []byte(`{"schema": "memprobe.train/v9"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := runProbe("diff", diffBase, future)
	var ue usageError
	if err == nil || errors.As(err, &ue) || !strings.Contains(err.Error(), "future.json") || !strings.Contains(err.Error(), `this build reads "memprobe.train/v3"`) {
		t.Errorf("a result of a future version as head: got %v", err)
	}
}

// writeReportFile writes rep as a report file in a temporary directory.
func writeReportFile(t *testing.T, name string, rep *schema.Report) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := schema.WriteReport(path, rep); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDiffGateUnchecked: --fail-on must not pass what it cannot check. A
// configuration that finished in base and failed in head, and one head did
// not run (a partial head), are breaches, one "unchecked:" line each on
// stderr, exit status 1; a configuration only head ran is not. Without
// --fail-on the same diff passes.
func TestDiffGateUnchecked(t *testing.T) {
	read := func() *schema.Report {
		rep, err := schema.ReadReport(diffSame)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	failed := read()
	failed.Runs[1].Status, failed.Runs[1].Reason, failed.Runs[1].Repetitions = schema.StatusFailed, "exit status 2", nil // threads/P1 threads=7
	failed.Runs[1].Outside, failed.Runs[1].Summary.Metrics = nil, nil
	failedPath := writeReportFile(t, "failed.json", failed)
	partial := read()
	partial.Runs = partial.Runs[:2] // threads/before and P1 at threads=7
	partialPath := writeReportFile(t, "partial.json", partial)

	_, stderr, err := runProbe("diff", "--fail-on", "go_heap_allocs_per_step:+0", diffBase, failedPath)
	var be breachError
	if !errors.As(err, &be) || be.n != 0 || be.unchecked != 1 {
		t.Fatalf("head failed: got %v, want a breach error of 1 unchecked (exit status 1)", err)
	}
	if want := "unchecked: threads/P1 threads=7: finished in base, failed in head: --fail-on cannot check it\n"; stderr != want {
		t.Errorf("head failed: stderr %q, want %q", stderr, want)
	}
	if want := "diff: 1 unchecked by --fail-on (failed or missing in head)"; err.Error() != want {
		t.Errorf("head failed: error %q, want %q", err, want)
	}
	_, stderr, err = runProbe("diff", "--fail-on", "go_heap_allocs_per_step:+0", diffBase, partialPath)
	if !errors.As(err, &be) || be.unchecked == 0 || !strings.Contains(stderr, "unchecked: arena/P1: only in base, head did not run it: --fail-on cannot check it\n") {
		t.Errorf("partial head: got %v, stderr\n%s", err, stderr)
	}
	// The partial report as base: what head has more is no breach.
	if _, stderr, err := runProbe("diff", "--fail-on", "go_heap_allocs_per_step:+0", partialPath, diffSame); err != nil || stderr != "" {
		t.Errorf("head runs more than base: %v, stderr %q", err, stderr)
	}
	for _, head := range []string{failedPath, partialPath} {
		if _, stderr, err := runProbe("diff", diffBase, head); err != nil || stderr != "" {
			t.Errorf("%s without --fail-on: %v, stderr %q", head, err, stderr)
		}
	}
	help := strings.Join(strings.Fields(newDiffCmd(nil, nil).Long), " ")
	if !strings.Contains(help, "a partial head, one shard of probe run --shard I/N or a --phases subset, fails against a full base") {
		t.Errorf("probe diff --help does not say that a partial head fails the gate")
	}
}

// TestDiffMetricErrors: a --metric or --fail-on metric no report or decode
// result can have is a usage error naming it; one that no configuration
// of the two files measured (a decode result has no peak_rss_bytes) is an
// error (exit 1) naming it and what the files do measure. Neither is a
// table of dashes or a gate that passes.
func TestDiffMetricErrors(t *testing.T) {
	dec := decodeFile(t, "d.json", false, decodeModes, nil)
	dec2 := decodeFile(t, "d2.json", false, decodeModes, nil)
	for _, c := range []struct {
		args  []string
		usage bool
		want  string
	}{
		{[]string{"--fail-on", "bogus:+5%", diffBase, diffSame}, true, "--fail-on bogus: no run report or decode result has a metric of that name"},
		{[]string{"--metric", "foo", diffBase, diffSame}, true, "--metric foo: no run report or decode result has a metric of that name (a metric is the JSON name of a figure; see probe diff --help); the metrics are "},
		{[]string{"--metric", "foo", dec, dec2}, true, "--metric foo: no run report or decode result has a metric of that name"},
		{[]string{"--fail-on", "peak_rss_bytes:+5%", dec, dec2}, false,
			"--fail-on peak_rss_bytes: no configuration of base " + dec + " or head " + dec2 + " (decode results) measured it; peak_rss_bytes is a metric of run reports, not of decode results; they measure tokens_per_sec"},
		{[]string{"--metric", "host_allocs_per_token", diffBase, diffSame}, false,
			"--metric host_allocs_per_token: no configuration of base " + diffBase + " or head " + diffSame + " (run reports) measured it; host_allocs_per_token is a metric of decode results, not of run reports; they measure peak_rss_bytes"},
		{[]string{"--metric", "syncs_per_token", "--fail-on", "runtime.peak.goroutines:+0", diffBase, diffSame}, false,
			"--metric syncs_per_token, --fail-on runtime.peak.goroutines: no configuration of base"},
	} {
		stdout, stderr, err := runProbe(append([]string{"diff"}, c.args...)...)
		var ue usageError
		if err == nil || errors.As(err, &ue) != c.usage || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: got %v (usage error: %v), want one line containing %q", c.args, err, errors.As(err, &ue), c.want)
		}
		if stdout != "" || stderr != "" {
			t.Errorf("%v: wrote %q, %q", c.args, stdout, stderr)
		}
	}
	// A nested figure of a result is a metric too.
	if stdout, _, err := runProbe("diff", "--metric", "counts.workers", diffBase, diffSame); err != nil || !strings.Contains(stdout, "counts.workers") {
		t.Errorf("a nested metric: %v\n%s", err, stdout)
	}
}

// TestDiffBreachWording: one regression is "1 regression".
func TestDiffBreachWording(t *testing.T) {
	for _, c := range []struct {
		b    breachError
		want string
	}{
		{breachError{n: 1}, "diff: 1 regression past --fail-on"},
		{breachError{n: 2}, "diff: 2 regressions past --fail-on"},
		{breachError{n: 1, unchecked: 3}, "diff: 1 regression past --fail-on; 3 unchecked by --fail-on (failed or missing in head)"},
		{breachError{unchecked: 1}, "diff: 1 unchecked by --fail-on (failed or missing in head)"},
	} {
		if got := c.b.Error(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.b, got, c.want)
		}
	}
}

// scalePeakRSS is a copy of the report at path with every peak RSS times
// f: each repetition's, the parent's of each child, and the summary's,
// written beside it as name.
func scalePeakRSS(t *testing.T, path, name string, f float64) string {
	t.Helper()
	rep, err := schema.ReadReport(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := range rep.Runs {
		run := &rep.Runs[i]
		for k := range run.Repetitions {
			run.Repetitions[k].PeakRSSBytes = uint64(float64(run.Repetitions[k].PeakRSSBytes) * f)
			n++
		}
		for k := range run.Outside {
			run.Outside[k].PeakRSSBytes = int64(float64(run.Outside[k].PeakRSSBytes) * f)
		}
		for k := range run.Summary.Metrics {
			m := &run.Summary.Metrics[k]
			if m.Name != "peak_rss_bytes" {
				continue
			}
			for j := range m.Values {
				m.Values[j] *= f
			}
			m.Median, m.Min, m.Max, m.CILow, m.CIHigh = m.Median*f, m.Min*f, m.Max*f, m.CILow*f, m.CIHigh*f
		}
	}
	if n == 0 {
		t.Fatalf("%s: no repetition to scale", path)
	}
	out := filepath.Join(filepath.Dir(path), name)
	if err := schema.WriteReport(out, rep); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDiffGateEndToEnd runs the README's example gate (read from
// README.md) on two reports of one build made independently, one after
// the other (testdata/samebuild-a.json and -b.json: probe run --quick
// --plan threads --count 3, trimmed of the per-repetition detail diff
// does not read). A report against itself proves nothing about noise;
// these differ as runs do: P6's peak medians by +13.9 %, its ranges
// overlapping (29.9 to 34.4 MiB, 34.1 to 34.3 MiB). The gate passes,
// printing that change as undecided with its spread, and fails it with
// --strict. Copies of head with every peak RSS 1.2x and 1.5x fail: every
// head repetition past every base one by more than the limit.
func TestDiffGateEndToEnd(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`bin/probe diff BASE.json HEAD.json \[?--fail-on '([^']+)'\]?`).FindSubmatch(readme)
	if m == nil || !strings.Contains(string(m[1]), "peak_rss_bytes:+5%") {
		t.Fatal("README.md's example gate is not diff BASE.json HEAD.json --fail-on '...peak_rss_bytes:+5%...'")
	}
	gate := string(m[1])
	dir := t.TempDir()
	base, head := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	for from, to := range map[string]string{"testdata/samebuild-a.json": base, "testdata/samebuild-b.json": head} {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, stderr, err := runProbe("diff", "--fail-on", gate, base, head)
	if err != nil {
		t.Fatalf("two runs of one build: %v, want exit 0\n%s", err, stderr)
	}
	if want := "undecided: threads/P6 peak_rss_bytes: 30.0 MiB -> 34.2 MiB (medians +13.88%), limit peak_rss_bytes:+5%: n=3+3, the U test cannot decide"; !strings.HasPrefix(stderr, want) ||
		!strings.Contains(stderr, "the metric spreads 14.9 % run to run") {
		t.Errorf("two runs of one build: stderr %q, want a line starting %q, with the spread", stderr, want)
	}
	_, _, err = runProbe("diff", "--strict", "--fail-on", gate, base, head)
	if be, ok := errors.AsType[breachError](err); !ok || be.unjudged != 1 || be.n+be.unchecked != 0 {
		t.Errorf("--strict: got %v, want exit status 1 for 1 undecided change", err)
	}
	for _, f := range []float64{1.2, 1.5} {
		scaled := scalePeakRSS(t, head, fmt.Sprintf("head-%g.json", f), f)
		_, stderr, err := runProbe("diff", "--fail-on", gate, base, scaled)
		if be, ok := errors.AsType[breachError](err); !ok || be.n == 0 || !strings.Contains(stderr, "regression: threads/P6 peak_rss_bytes: ") {
			t.Errorf("%gx peak RSS at 3+3: got %v, want a regression of threads/P6\n%s", f, err, stderr)
		}
	}
}

// TestDiffExecPlanted: the figures of probe exec's outside view are
// metrics (process.*, sampler.peaks.*): probe diff compares two exec
// results by them, a copy of a result passes a gate on them, and the same
// copy with the process's peak RSS and user CPU time planted higher fails
// it with --strict (one repetition a side: undecided, printed, and
// failing only with --strict).
func TestDiffExecPlanted(t *testing.T) {
	if _, err := os.Stat("/proc/self/smaps"); err != nil {
		t.Skip("no /proc")
	}
	dir := t.TempDir()
	base := filepath.Join(dir, "base.json")
	if _, stderr, err := runProbe("exec", "--gpu=false", "--json", base, "--", "/bin/sh", "-c", "sleep 0.2"); err != nil {
		t.Fatalf("probe exec: %v\n%s", err, stderr)
	}
	r, err := schema.ReadResult(base)
	if err != nil {
		t.Fatal(err)
	}
	if r.Process == nil || r.Process.VmHWMBytes == 0 {
		t.Fatalf("probe exec wrote no process.vm_hwm_bytes: %+v", r.Process)
	}
	same, planted := filepath.Join(dir, "same.json"), filepath.Join(dir, "planted.json")
	if err := schema.WriteResult(same, r); err != nil {
		t.Fatal(err)
	}
	r.Process.VmHWMBytes *= 2
	r.Process.RusageUserMs += 1000
	if err := schema.WriteResult(planted, r); err != nil {
		t.Fatal(err)
	}
	gate := "process.vm_hwm_bytes:+10%,process.rusage_user_ms:+50%"
	metrics := "process.vm_hwm_bytes,process.rusage_user_ms,process.rusage_system_ms,sampler.peaks.rss_bytes"
	stdout, stderr, err := runProbe("diff", "--metric", metrics, "--fail-on", gate, base, same)
	if err != nil {
		t.Fatalf("an unchanged copy: %v\n%s", err, stderr)
	}
	for _, m := range strings.Split(metrics, ",") {
		if !strings.Contains(stdout, m) {
			t.Errorf("the diff has no row of %s:\n%s", m, stdout)
		}
	}
	if _, stderr, err := runProbe("diff", "--metric", metrics, "--fail-on", gate, base, planted); err != nil || strings.Count(stderr, "undecided: ") != 2 {
		t.Errorf("planted without --strict: got %v, want exit 0 and 2 undecided lines\n%s", err, stderr)
	}
	_, stderr, err = runProbe("diff", "--strict", "--metric", metrics, "--fail-on", gate, base, planted)
	var be breachError
	if !errors.As(err, &be) || be.unjudged != 2 || be.n+be.unchecked != 0 {
		t.Fatalf("planted: got %v (%+v), want 2 undecided breaches\n%s", err, be, stderr)
	}
	for _, m := range []string{"process.vm_hwm_bytes", "process.rusage_user_ms"} {
		if !strings.Contains(stderr, "undecided: ") || !strings.Contains(stderr, m+": ") {
			t.Errorf("stderr names no breach of %s:\n%s", m, stderr)
		}
	}
	// A misspelt one is a usage error that lists the registered names,
	// the outside view's among them.
	_, _, err = runProbe("diff", "--fail-on", "process.vm_hwm:+10%", base, planted)
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "the metrics are ") || !strings.Contains(err.Error(), ", process.vm_hwm_bytes, ") {
		t.Errorf("a misspelt process metric: %v, want a usage error listing process.vm_hwm_bytes", err)
	}
}
