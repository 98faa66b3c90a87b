package main

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"memprobe/trainer/decode"
	"memprobe/trainer/device"
	"memprobe/trainer/device/cudadrv"
)

// TestDecodeErrors: bad flags are usage errors (exit 2), a device or GEMM
// backend this build lacks among them, as in probe train; a missing
// checkpoint or a checkpoint of another shape are errors (exit 1) naming
// the input. All are one line, and no JSON is left.
func TestDecodeErrors(t *testing.T) {
	dir := t.TempDir()
	ck := trainMicroCheckpoint(t, dir)
	out := filepath.Join(dir, "out.json")
	for _, c := range []struct {
		args  []string
		want  string
		usage bool
	}{
		{[]string{"--decode", "per-token"}, `parsing decode mode "per-token"`, true},
		{[]string{"--passes", "0"}, "--passes 0 out of range", true},
		{[]string{"--format", "html"}, `--format: format "html": not one of text, markdown, csv`, true},
		{[]string{"--batch", "-1"}, "--batch -1 must be positive", true},
		{[]string{"--preset", "huge"}, `unknown preset "huge"`, true},
		{[]string{"--heads", "7"}, "not divisible by heads 7", true},
		{[]string{"--checkpoint", ck, "--dim", "32"}, "--dim: the model's shape comes from --checkpoint", true},
		{[]string{"--checkpoint", ck, "--preset", "tiny"}, "--preset: the model comes from --checkpoint", true},
		{[]string{"--device", "tpu"}, `--device: device "tpu" is not available in this build (have: `, true},
		{[]string{"--checkpoint", filepath.Join(dir, "missing.bin")}, "missing.bin", false},
		{[]string{"--checkpoint", ck, "--context", "4"}, "--context 4: checkpoint " + ck + " holds a model with context 5", false},
		{[]string{"--preset", "micro", "--data", filepath.Join(dir, "missing.txt")}, "missing.txt", false},
		{[]string{"--preset", "micro", "--gemm", "fast"}, `--gemm: gemm backend "fast" is not available`, true},
	} {
		args := append([]string{"decode", "--data", "synthetic:4KB", "--json", out}, c.args...)
		_, _, err := runProbe(args...)
		var ue usageError
		switch {
		case err == nil:
			t.Errorf("%v: no error", c.args)
			continue
		case errors.As(err, &ue) != c.usage:
			t.Errorf("%v: usage error = %v, want %v (%v)", c.args, !c.usage, c.usage, err)
		}
		if !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error %q, want one line containing %q", c.args, err, c.want)
		}
	}
	t.Setenv(cudadrv.EnvLibCUDA, "/nonexistent/libcuda.so.1")
	if _, _, err := runProbe("decode", "--preset", "micro", "--device", "cuda", "--json", out); err == nil || !strings.Contains(err.Error(), "no CUDA driver: /nonexistent/libcuda.so.1 not found") {
		t.Errorf("--device cuda without a driver: %v, want \"no CUDA driver: ... not found\"", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed run left %s behind", out)
	}
}

// trainMicroCheckpoint trains the micro preset for one step and returns its
// checkpoint.
func trainMicroCheckpoint(t *testing.T, dir string) string {
	t.Helper()
	ck := filepath.Join(dir, "micro.ck")
	if _, stderr, err := runProbe("train", "--preset", "micro", "--steps", "1", "--threads", "1", "--data", "synthetic:4KB",
		"--checkpoint", ck, "--json", filepath.Join(dir, "train.json")); err != nil {
		t.Fatalf("probe train: %v\n%s", err, stderr)
	}
	return ck
}

var decodeJSONKeys = []string{"buffers", "command_line", "config", "d2h_bytes", "decode", "device", "device_busy_ns_per_token", "device_busy_pct",
	"device_busy_pct_passes", "device_peak_bytes", "device_peak_source", "environment", "h2d_bytes", "host_allocs_per_token", "host_wait_ns_per_token",
	"host_wait_ns_per_token_passes", "launches_per_token", "ledger_peak_bytes", "schema", "start_time", "syncs_per_token", "tokens_per_sec", "tokens_per_sec_passes"}

func checkRecord(t *testing.T, r map[string]any, mode string) {
	t.Helper()
	keys := make([]string, 0, len(r))
	for k := range r {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if !slices.Equal(keys, decodeJSONKeys) {
		t.Errorf("%s: JSON fields %v, want exactly %v", mode, keys, decodeJSONKeys)
	}
	if r["decode"] != mode || r["device"] != "cpu" || r["tokens_per_sec"].(float64) <= 0 {
		t.Errorf("%s: implausible record %v", mode, r)
	}
	// The stream's busy time and the host's waits are sums of disjoint
	// intervals inside the timed passes (the warm-up ended with a Sync),
	// so each is a part of a token's wall time.
	wallNs := 1e9 / r["tokens_per_sec"].(float64)
	busy, wait, pct := r["device_busy_ns_per_token"].(float64), r["host_wait_ns_per_token"].(float64), r["device_busy_pct"].(float64)
	if busy <= 0 || busy > wallNs || wait <= 0 || wait > wallNs || pct <= 0 || pct > 100 || math.Abs(pct-100*busy/wallNs) > 1e-6*pct {
		t.Errorf("%s: per token %.0f ns of wall time, %.0f ns busy (%.2f %%), %.0f ns waiting: want each a part of the wall time, the share busy/wall",
			mode, wallNs, busy, pct, wait)
	}
	// On cpu the device's memory is its buffers: the peak is the ledger's,
	// and the ledger's lines add up to it (nothing is freed mid-run).
	var sum float64
	for _, b := range r["buffers"].([]any) {
		sum += b.(map[string]any)["bytes"].(float64)
	}
	if r["device_peak_source"] != "ledger" || r["device_peak_bytes"] != r["ledger_peak_bytes"] || sum != r["ledger_peak_bytes"] {
		t.Errorf("%s: device peak %v (%v), ledger peak %v, buffers summing to %v: want the ledger's, equal", mode,
			r["device_peak_bytes"], r["device_peak_source"], r["ledger_peak_bytes"], sum)
	}
}

// TestDecodeJSON runs the micro preset: with --decode all the JSON is an
// array of one object per mode, slowest first; with one mode, one object;
// the table has a row per mode. From a checkpoint too.
func TestDecodeJSON(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "d.json")
	stdout, stderr, err := runProbe("decode", "--preset", "micro", "--passes", "1", "--data", "synthetic:4KB", "--json", out)
	if err != nil {
		t.Fatalf("probe decode: %v\n%s", err, stderr)
	}
	var all []map[string]any
	b, _ := os.ReadFile(out)
	if err := json.Unmarshal(b, &all); err != nil {
		t.Fatalf("--decode all: not a JSON array: %v\n%s", err, b)
	}
	if len(all) != len(decode.Modes()) {
		t.Fatalf("--decode all: %d records, want %d", len(all), len(decode.Modes()))
	}
	for i, m := range decode.Modes() {
		checkRecord(t, all[i], m.String())
		if !slices.ContainsFunc(strings.Split(stdout, "\n"), func(l string) bool {
			f := strings.Fields(l)
			return len(f) > 0 && f[0] == m.String()
		}) {
			t.Errorf("table has no row for %s:\n%s", m, stdout)
		}
	}
	if s := all[3]["syncs_per_token"].(float64); s != 1.0/5 {
		t.Errorf("batch: %v syncs/token, want 1/T = 0.2", s)
	}
	// probe report prints the file's tables again, the same as probe
	// decode did, under the line naming where they were measured.
	rstdout, rstderr, err := runProbe("report", out)
	if err != nil {
		t.Fatalf("probe report on a decode result: %v\n%s", err, rstderr)
	}
	if first, rest, _ := strings.Cut(rstdout, "\n\n"); !strings.HasPrefix(first, "Measured by probe decode from ") || rest != stdout[strings.Index(stdout, "decode on cpu"):] {
		t.Errorf("probe report on a decode result:\n%s\nwant the provenance line, then probe decode's tables:\n%s", rstdout, stdout)
	}
	// probe export writes it for benchstat: a line per timed pass.
	if estdout, estderr, err := runProbe("export", out); err != nil || strings.Count(estdout, "BenchmarkDecode/mode=batch/device=cpu/") != 1 {
		t.Errorf("probe export on a decode result: %v %s\n%s", err, estderr, estdout)
	}
	md := filepath.Join(dir, "phases.md")
	os.WriteFile(md, []byte("kept\n"), 0o644)
	_, _, err = runProbe("report", "--phases-md", md, out)
	if b, _ := os.ReadFile(md); !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), "is a decode result of probe decode") || string(b) != "kept\n" {
		t.Errorf("report --phases-md on a decode result: %v, file %q; want a usage error naming the file's kind, the file untouched", err, b)
	}

	ck := trainMicroCheckpoint(t, dir)
	_, stderr, err = runProbe("decode", "--checkpoint", ck, "--batch", "2", "--decode", "batch", "--passes", "2", "--probs=false",
		"--data", "synthetic:4KB", "--json", out)
	if err != nil {
		t.Fatalf("probe decode --checkpoint: %v\n%s", err, stderr)
	}
	var one map[string]any
	b, _ = os.ReadFile(out)
	if err := json.Unmarshal(b, &one); err != nil {
		t.Fatalf("--decode batch: not a JSON object: %v\n%s", err, b)
	}
	checkRecord(t, one, "batch")
	// B=2 sequences of T=5: hidden rows (C=8) and targets up, tokens and
	// losses down, no probabilities.
	if one["h2d_bytes"].(float64) != 4*2*5*(8+1) || one["d2h_bytes"].(float64) != 4*2*5*device.OutStride {
		t.Errorf("bytes per pass: %v up, %v down; want %d, %d", one["h2d_bytes"], one["d2h_bytes"], 4*2*5*9, 4*2*5*2)
	}
	if !strings.Contains(stderr, "parameters from "+ck) {
		t.Errorf("stderr does not name the checkpoint:\n%s", stderr)
	}
}

// TestTrainDecodeFlags: `probe train --decode MODE --device NAME` sets
// trainer.Options.Decode and Device; a bad mode, a device without a mode
// and a device missing from the build are usage errors.
func TestTrainDecodeFlags(t *testing.T) {
	var f trainFlags
	fs := pflag.NewFlagSet("train", pflag.ContinueOnError)
	f.register(fs)
	if err := fs.Parse([]string{"--decode", "per-token-prealloc", "--device", "cpu"}); err != nil {
		t.Fatal(err)
	}
	o, err := f.options()
	if err != nil {
		t.Fatal(err)
	}
	if o.Trainer.Decode != "per-token-prealloc" || o.Trainer.Device != "cpu" {
		t.Errorf("Decode %q, Device %q; want per-token-prealloc, cpu", o.Trainer.Decode, o.Trainer.Device)
	}
	var g trainFlags
	fs = pflag.NewFlagSet("train", pflag.ContinueOnError)
	g.register(fs)
	if o, err := g.options(); err != nil || o.Trainer.Decode != "" {
		t.Errorf("no --decode: Decode %q, error %v; want the host head", o.Trainer.Decode, err)
	}
	// A bad command line is exit status 2; a device this machine cannot
	// open (cuda without a driver) is 1, as for probe decode --device cuda.
	t.Setenv(cudadrv.EnvLibCUDA, "/nonexistent/libcuda.so.1")
	for _, c := range []struct {
		args  []string
		usage bool
		want  string
	}{
		{[]string{"--decode", "fast"}, true, `--decode: parsing decode mode "fast"`},
		{[]string{"--device", "cpu"}, true, "--device cpu: a device runs only the decode head; add --decode MODE"},
		{[]string{"--decode", "batch", "--device", "tpu"}, true, `--device: device "tpu" is not available in this build`},
		{[]string{"--decode", "batch", "--device", "cuda"}, false, "--device: device cuda: no CUDA driver: /nonexistent/libcuda.so.1 not found"},
		{[]string{"--plan", "decode", "--phase", "after", "--device", "cuda"}, false, "--device: device cuda: no CUDA driver: /nonexistent/libcuda.so.1 not found"},
	} {
		_, _, err := runProbe(append([]string{"train", "--steps", "1"}, c.args...)...)
		var ue usageError
		if err == nil || errors.As(err, &ue) != c.usage || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v (usage error: %v), want one line containing %q (usage error: %v)", c.args, err, errors.As(err, &ue), c.want, c.usage)
		}
	}
}
