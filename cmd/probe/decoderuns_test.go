package main

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"memprobe/schema"
)

// TestDecodeRuns: probe decode --runs 3 measures in three child processes
// (this test binary, made the probe command by mainEnv) and writes one
// pooled record per mode: three runs, every pass of each, the parent's
// command line; the children's progress is on stderr, each line naming
// its run; no child is left.
func TestDecodeRuns(t *testing.T) {
	t.Setenv(mainEnv, "1")
	out := filepath.Join(t.TempDir(), "runs.json")
	stdout, stderr, err := runProbe("decode", "--preset", "micro", "--passes", "2", "--data", "synthetic:4KB", "--runs", "3", "--json", out)
	if err != nil {
		t.Fatalf("probe decode --runs 3: %v\n%s", err, stderr)
	}
	if c := childProcesses(t); len(c) > 0 {
		t.Errorf("child processes left: %v", c)
	}
	recs, err := schema.ReadDecode(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(decodeModes) {
		t.Fatalf("%d records, want one per mode", len(recs))
	}
	for i, r := range recs {
		if r.Decode != decodeModes[i] || r.Runs != 3 || len(r.TokensPerSecRuns) != 3 || len(r.TokensPerSecPasses) != 6 ||
			r.TokensPerSec != slices.Sorted(slices.Values(r.TokensPerSecRuns))[1] {
			t.Errorf("%s: runs %d %v, %d passes, tokens/s %v; want 3 runs, 6 passes, the runs' median", r.Decode, r.Runs, r.TokensPerSecRuns, len(r.TokensPerSecPasses), r.TokensPerSec)
		}
		if !slices.Equal(r.CommandLine, os.Args) {
			t.Errorf("%s: command line %v, want the parent's, not a run's", r.Decode, r.CommandLine)
		}
	}
	for i := 1; i <= 3; i++ {
		if !strings.Contains(stderr, "run "+string(rune('0'+i))+"/3: model ") {
			t.Errorf("stderr has no progress of run %d:\n%s", i, stderr)
		}
	}
	if !strings.Contains(stdout, "3 runs of 2 timed passes") {
		t.Errorf("the table does not say it pools 3 runs:\n%s", stdout)
	}

	// Pooled runs against pooled runs: compared over the runs.
	dstdout, _, err := runProbe("diff", "--metric", "tokens_per_sec", out, out)
	if err != nil || !strings.Contains(dstdout, "3+3") || strings.Contains(dstdout, "timed passes of one process") {
		t.Errorf("diff of two pooled results: %v\n%s", err, dstdout)
	}
}

// TestDecodeRunsErrors: --runs out of range or with --cpuprofile is a
// usage error; a run that fails ends the measurement with one line naming
// the run and its error, and an existing --json file is left as it was.
func TestDecodeRunsErrors(t *testing.T) {
	t.Setenv(mainEnv, "1")
	dir := t.TempDir()
	out := filepath.Join(dir, "out.json")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--runs", "0"}, "--runs 0 out of range [1, 1000]"},
		{[]string{"--runs", "1001"}, "--runs 1001 out of range [1, 1000]"},
		{[]string{"--runs", "2", "--cpuprofile", filepath.Join(dir, "cpu.pprof")}, "--cpuprofile with --runs 2: a profile is of one process"},
	} {
		_, _, err := runProbe(append([]string{"decode", "--preset", "micro", "--json", out}, c.args...)...)
		if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want a usage error with %q", c.args, err, c.want)
		}
	}
	if err := os.WriteFile(out, []byte("kept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.bin")
	_, _, err := runProbe("decode", "--checkpoint", missing, "--runs", "2", "--json", out)
	if err == nil || !strings.HasPrefix(err.Error(), "decode --runs 2: run 1/2 failed (exit status 1): ") || !strings.Contains(err.Error(), missing) || strings.Contains(err.Error(), "\n") {
		t.Errorf("a failing run: %v, want one line naming run 1/2 and %s", err, missing)
	}
	if b, _ := os.ReadFile(out); string(b) != "kept\n" {
		t.Errorf("the existing --json file was changed: %q", b)
	}
	if c := childProcesses(t); len(c) > 0 {
		t.Errorf("child processes left: %v", c)
	}
}

// TestDecodeChildArgs: a run gets every flag the user gave but the
// parent's own, each as --name=value, so that no value is read as a flag.
func TestDecodeChildArgs(t *testing.T) {
	var f decodeCmdFlags
	fs := pflag.NewFlagSet("decode", pflag.ContinueOnError)
	f.register(fs)
	if err := fs.Parse([]string{"--preset", "micro", "--runs", "4", "--json", "x.json", "--format=csv", "--data", "-odd name.txt", "--probs=false", "--check", "cpu"}); err != nil {
		t.Fatal(err)
	}
	got := decodeChildArgs(fs)
	want := []string{"decode", "--check=cpu", "--data=-odd name.txt", "--preset=micro", "--probs=false"}
	if !slices.Equal(got, want) {
		t.Errorf("child args %q, want %q", got, want)
	}
}

// TestMergeDecode: probe merge pools decode results run by run, and
// refuses to mix them with run reports; a directory of decode results is
// one side of probe diff, its files pooled the same way.
func TestMergeDecode(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for i, tps := range []float64{50000, 60000, 55000, 52000} {
		files = append(files, decodeFile(t, "r.json", false, decodeModes, func(r *schema.DecodeRecord) {
			f := tps * (1 + float64(slices.Index(decodeModes, r.Decode))) / r.TokensPerSec
			r.TokensPerSec *= f
			for k := range r.TokensPerSecPasses {
				r.TokensPerSecPasses[k] *= f // each run its own passes
			}
			r.StartTime = "2026-11-26T02:00:0" + string(rune('0'+i)) + "Z"
		}))
	}
	// A run pooled twice (the same file named twice, or the runs and
	// their merge in one directory) is refused: it would count twice.
	_, _, err := runProbe("merge", "--out", filepath.Join(dir, "twice.json"), files[0], files[1], files[0])
	if err == nil || !strings.Contains(err.Error(), "holds a run already pooled from "+files[0]) {
		t.Errorf("a run pooled twice: %v", err)
	}
	out := filepath.Join(dir, "all.json")
	stdout, _, err := runProbe(append([]string{"merge", "--out", out}, files...)...)
	if err != nil || !strings.Contains(stdout, "4 decode modes from 4 results, up to 4 runs each") {
		t.Fatalf("merge of decode results: %v\n%s", err, stdout)
	}
	recs, err := schema.ReadDecode(out)
	if err != nil {
		t.Fatal(err)
	}
	if r := recs[0]; r.Runs != 4 || r.TokensPerSec != 53500 || r.StartTime != "2026-11-26T02:00:00Z" {
		t.Errorf("pooled: runs %d, tokens/s %v (want 4, 53500), start %s", r.Runs, r.TokensPerSec, r.StartTime)
	}

	_, _, err = runProbe("merge", "--out", filepath.Join(dir, "mixed.json"), files[0], diffBase)
	if err == nil || err.Error() != "merge: "+diffBase+" is a run report of probe run and "+files[0]+" a decode result of probe decode; merge one kind" {
		t.Errorf("merge of a decode result and a run report: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "mixed.json")); err == nil {
		t.Error("a refused merge wrote its output")
	}
	other := decodeFile(t, "o.json", false, decodeModes, func(r *schema.DecodeRecord) { r.Environment.VCSRevision = "ffff" })
	_, _, err = runProbe("merge", "--out", filepath.Join(dir, "commits.json"), files[0], other)
	if err == nil || !strings.Contains(err.Error(), "built from commit") {
		t.Errorf("merge of two commits' decode results: %v", err)
	}

	base, head := filepath.Join(dir, "base"), filepath.Join(dir, "head")
	for i, f := range files {
		side := base
		if i%2 == 1 {
			side = head
		}
		os.MkdirAll(side, 0o755)
		b, _ := os.ReadFile(f)
		os.WriteFile(filepath.Join(side, filepath.Base(filepath.Dir(f))+".json"), b, 0o644)
	}
	dstdout, _, err := runProbe("diff", "--metric", "tokens_per_sec", base, head)
	if err != nil || !strings.Contains(dstdout, "2+2") || strings.Contains(dstdout, "timed passes of one process") {
		t.Errorf("diff of two directories of decode results: %v\n%s", err, dstdout)
	}
	if _, _, err := runProbe("diff", base, filepath.Dir(diffBase)); err == nil || !strings.Contains(err.Error(), "a directory of decode results and") {
		t.Errorf("a directory of decode results against one of run reports: %v", err)
	}
}

// TestOutputsNotInputs: an output that would replace an input, or that
// cannot be written, is a usage error before any work, and the input is
// left as it was; --json - writes decode's JSON to stdout and its tables to
// stderr.
func TestOutputsNotInputs(t *testing.T) {
	dir := t.TempDir()
	dec := decodeFile(t, "d.json", false, decodeModes, nil)
	keep, err := os.ReadFile(dec)
	if err != nil {
		t.Fatal(err)
	}
	ck := trainMicroCheckpoint(t, dir)
	ckBytes, _ := os.ReadFile(ck)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"merge", dec, "--out", dec}, "--out " + dec + ": is also the input " + dec},
		{[]string{"merge", dec, "--out", dir}, "--out " + dir + ": is a directory"},
		{[]string{"decode", "--checkpoint", ck, "--json", ck}, "--json " + ck + ": is also the input --checkpoint " + ck},
		{[]string{"decode", "--preset", "micro", "--json", dir}, "--json " + dir + ": is a directory"},
		{[]string{"decode", "--preset", "micro", "--json", filepath.Join(dir, "no", "d.json")}, "--json " + filepath.Join(dir, "no", "d.json") + ": directory"},
		{[]string{"decode", "--preset", "micro", "--json", filepath.Join(dir, "x"), "--cpuprofile", filepath.Join(dir, "x")}, "--cpuprofile " + filepath.Join(dir, "x") + ": --json names the same file"},
		{[]string{"decode", "--preset", "micro", "--cpuprofile", "-"}, "--cpuprofile -: a profile is binary"},
	} {
		_, _, err := runProbe(c.args...)
		if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want a usage error with %q", c.args, err, c.want)
		}
	}
	if b, _ := os.ReadFile(dec); string(b) != string(keep) {
		t.Error("a refused merge changed its input")
	}
	if b, _ := os.ReadFile(ck); string(b) != string(ckBytes) {
		t.Error("a refused decode changed its checkpoint")
	}
	stdout, stderr, err := runProbe("decode", "--preset", "micro", "--passes", "1", "--data", "synthetic:4KB", "--decode", "batch", "--json", "-")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := schema.DecodeDecode([]byte(stdout), "stdout"); err != nil || !strings.Contains(stderr, "decode on cpu") {
		t.Errorf("--json -: stdout does not read as a decode result (%v), or stderr has no table:\n%s", err, stderr)
	}
	if _, err := os.Stat("-"); err == nil {
		t.Error(`--json - wrote a file named "-"`)
	}
}
