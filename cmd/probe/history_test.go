package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"memprobe/internal/golden"
	"memprobe/schema"
)

// TestHistory: three reports in a directory, ordered by commit time, then
// start time: the base, its commit run again (no arrow), and the
// regressed commit (↑ at P6 on every sweep point).
func TestHistory(t *testing.T) {
	dir := t.TempDir()
	// File names against the order: history orders by time, not by name.
	for name, src := range map[string]string{"a-regressed.json": diffRegressed, "b-same.json": diffSame, "c-base.json": diffBase} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stdout, stderr, err := runProbe("history", "--plan", "threads", dir)
	if err != nil || stderr != "" {
		t.Fatalf("%v, stderr %q", err, stderr)
	}
	golden.Check(t, "history.golden", []byte(stdout))
	if _, _, err := runProbe("history", filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing directory: no error")
	}
}

// TestHistoryDecode: a directory of decode results, one per commit, is a
// history of decode modes: the base, a run of the same commit (~), and a
// commit whose batch mode is 20 % slower (↓ there, ~ elsewhere), compared
// over each result's passes; syncs_per_token, a count, is compared
// exactly. A directory that mixes decode results and run reports, and a
// --plan other than decode, are refused.
func TestHistoryDecode(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, commit, start string
		batch               float64
	}{
		{"c-base.json", "aaaa", "2026-11-26T01:00:00Z", 1},
		{"a-same.json", "aaaa", "2026-11-26T02:00:00Z", 1},
		{"b-slower.json", "bbbb", "2026-11-26T03:00:00Z", 0.8},
	} {
		src := decodeFile(t, c.name, false, decodeModes, func(r *schema.DecodeRecord) {
			r.Environment.VCSRevision, r.StartTime = c.commit, c.start
			if r.Decode == "batch" {
				r.TokensPerSec *= c.batch
				for i := range r.TokensPerSecPasses {
					r.TokensPerSecPasses[i] *= c.batch
				}
			}
		})
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, c.name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stdout, stderr, err := runProbe("history", "--metric", "tokens_per_sec", "--format", "csv", dir)
	if err != nil || stderr != "" {
		t.Fatalf("%v, stderr %q", err, stderr)
	}
	// CSV is for programs: exact numbers, the trend in a column of its own.
	want := "report,commit,time,per-token-copy,per-token-copy change,per-token-view,per-token-view change,per-token-prealloc,per-token-prealloc change,batch,batch change\n" +
		"c-base.json,aaaa,2026-11-26T01:00:00Z,50000,,100000,,150000,,200000,\n" +
		"a-same.json,aaaa,2026-11-26T02:00:00Z,50000,~,100000,~,150000,~,200000,~\n" +
		"b-slower.json,bbbb,2026-11-26T03:00:00Z,50000,~,100000,~,150000,~,160000,↓\n"
	if stdout != want {
		t.Errorf("history of decode results:\n%s\nwant\n%s", stdout, want)
	}
	stdout, _, err = runProbe("history", "--metric", "syncs_per_token", "--format", "csv", dir)
	if err != nil || !strings.Contains(stdout, "b-slower.json,bbbb,2026-11-26T03:00:00Z,1,~,1,~,1,~,1,~") {
		t.Errorf("syncs_per_token: %v\n%s", err, stdout)
	}
	if _, _, err := runProbe("history", "--plan", "threads", dir); err == nil || !strings.Contains(err.Error(), "--plan threads: decode results are of plan decode") {
		t.Errorf("--plan threads on decode results: %v", err)
	}
	b, err := os.ReadFile(diffBase)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "run.json"), b, 0o644)
	if _, _, err := runProbe("history", dir); err == nil || !strings.Contains(err.Error(), "history: 3 of 4 files are decode results, the rest run reports") {
		t.Errorf("a mixed directory: %v", err)
	}
}

// TestHistoryMetricErrors: a --metric no report can have, or an empty one,
// is a usage error naming it; one that no configuration in the directory
// measured is an error (exit 1) naming it and what the reports do
// measure, not a table of dashes; a file is not a directory. A directory
// of decode results follows tokens_per_sec unless told otherwise.
func TestHistoryMetricErrors(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, diffBase, filepath.Join(dir, "base.json"))
	copyFile(t, diffSame, filepath.Join(dir, "same.json"))
	for _, c := range []struct {
		args  []string
		usage bool
		want  string
	}{
		{[]string{"--metric", "foo", dir}, true, "--metric foo: no run report or decode result has a metric of that name"},
		{[]string{"--metric", "", dir}, true, "--metric: empty metric name"},
		{[]string{"--metric", "foo", "--chart", filepath.Join(dir, "c.svg"), dir}, true, "--metric foo: no run report or decode result"},
		{[]string{"--metric", "host_allocs_per_token", dir}, false,
			"history: --metric host_allocs_per_token: no configuration of " + dir + " (run reports) measured it; host_allocs_per_token is a metric of decode results, not of run reports; they measure peak_rss_bytes"},
		{[]string{diffBase}, false, "history: " + diffBase + " is a file, not a directory"},
	} {
		stdout, _, err := runProbe(append([]string{"history"}, c.args...)...)
		var ue usageError
		if err == nil || errors.As(err, &ue) != c.usage || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: got %v (usage error: %v), want one line containing %q", c.args, err, errors.As(err, &ue), c.want)
		}
		if stdout != "" {
			t.Errorf("%v: printed\n%s", c.args, stdout)
		}
	}
	ddir := t.TempDir()
	copyFile(t, decodeFile(t, "d.json", false, decodeModes, nil), filepath.Join(ddir, "d.json"))
	stdout, _, err := runProbe("history", ddir)
	if err != nil || !strings.HasPrefix(stdout, "tokens_per_sec by report") || strings.Contains(stdout, " - ") {
		t.Errorf("a decode history without --metric: %v\n%s", err, stdout)
	}
	if _, _, err := runProbe("history", "--metric", "peak_rss_bytes", ddir); err == nil || !strings.Contains(err.Error(), "peak_rss_bytes is a metric of run reports") {
		t.Errorf("a decode history of peak_rss_bytes: %v", err)
	}
}
