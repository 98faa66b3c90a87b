package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"memprobe/internal/golden"
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
// breach on stderr; the same commit run again passes the gate.
func TestDiffGate(t *testing.T) {
	stdout, stderr, err := runProbe("diff", "--fail-on", "peak_rss_bytes:+5%", diffBase, diffRegressed)
	var be breachError
	if !errors.As(err, &be) || be.n != 2 {
		t.Fatalf("got %v, want a breach error of 2 breaches (exit status 1)", err)
	}
	var ue usageError
	if errors.As(err, &ue) {
		t.Error("a breach is not a usage error")
	}
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "regression: threads/P6 threads=7 peak_rss_bytes: ") ||
		!strings.Contains(lines[0], "limit peak_rss_bytes:+5%") {
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
