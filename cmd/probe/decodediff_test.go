package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"memprobe/metric"
	"memprobe/schema"
)

// A job result of probe train, for mixing with decode results.
const trainResult = "../../report/testdata/threads-P6.json"

// decodeModes are probe decode --decode all's modes, in its order.
var decodeModes = []string{"per-token-copy", "per-token-view", "per-token-prealloc", "batch"}

// decodeFile writes what probe decode --json writes for the micro preset on
// the cpu device, figures made up and fixed: one record per mode (an
// array), or the one record of modes[0] as an object when object. edit,
// when not nil, changes each record.
func decodeFile(t *testing.T, name string, object bool, modes []string, edit func(r *schema.DecodeRecord)) string {
	t.Helper()
	var recs []schema.DecodeRecord
	for i, mode := range modes {
		allocs := map[string]float64{"per-token-copy": 3, "per-token-view": 1.5}[mode]
		r := schema.DecodeRecord{
			Schema:       schema.DecodeVersion,
			TokensPerSec: 50000 * float64(i+1), TokensPerSecPasses: []float64{},
			SyncsPerToken: 1, LaunchesPerToken: 2, HostAllocsPerToken: allocs,
			HostWaitNsPerToken: 9000, H2DBytes: 540, D2HBytes: 900,
			DevicePeakBytes: 512, DevicePeakSource: "ledger", LedgerPeakBytes: 512,
			Decode: mode, Device: "cpu",
			Config: schema.DecodeConfig{Preset: "micro", Model: schema.Model{Vocab: 13, Dim: 8, Layers: 2, Heads: 2, FF: 16, Context: 5, Batch: 3},
				Seed: 1337, Data: "synthetic:4KB", DataSeed: 1, Device: "cpu", GEMM: "auto", GEMMUsed: "go", Passes: 6, Probs: true},
			Environment: schema.Environment{GoVersion: "go1.26.0", GOOS: "linux", GOARCH: "amd64", BuildTags: []string{}, CPUFlags: []string{}},
			CommandLine: []string{"probe", "decode", "--preset", "micro", "--passes", "6"},
			StartTime:   "2026-11-26T02:00:00Z",
		}
		for k := range 6 {
			r.TokensPerSecPasses = append(r.TokensPerSecPasses, r.TokensPerSec*(1+0.01*float64(k%3-1)))
		}
		if edit != nil {
			edit(&r)
		}
		recs = append(recs, r)
	}
	var v any = recs
	if object {
		v = recs[0]
	}
	b, err := schema.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := schema.ReadDecode(path); err != nil {
		t.Fatalf("the test's decode result does not read back: %v", err)
	}
	return path
}

// TestDiffDecode: two decode results are compared mode by mode, a row of
// each default decode metric; the same figures pass a decode gate.
func TestDiffDecode(t *testing.T) {
	base := decodeFile(t, "base.json", false, decodeModes, nil)
	head := decodeFile(t, "head.json", false, decodeModes, func(r *schema.DecodeRecord) { r.StartTime = "2026-11-26T03:00:00Z" })
	stdout, stderr, err := runProbe("diff", "--fail-on", "host_allocs_per_token:+0,tokens_per_sec:-10%", base, head)
	if err != nil || stderr != "" {
		t.Fatalf("probe diff: %v, stderr %q", err, stderr)
	}
	help := strings.Join(strings.Fields(newDiffCmd(nil, nil).Long), " ")
	for _, m := range metric.Defaults(metric.Decode) {
		if !strings.Contains(help, " "+m) {
			t.Errorf("probe diff's help does not name the default decode metric %s", m)
		}
	}
	if !strings.Contains(stdout, "plan decode") {
		t.Errorf("no decode table:\n%s", stdout)
	}
	for _, mode := range decodeModes {
		var rows []string
		for _, l := range strings.Split(stdout, "\n") {
			if strings.HasPrefix(l, mode+" ") {
				rows = append(rows, l)
			}
		}
		if len(rows) != 1 || !strings.Contains(rows[0], "tokens_per_sec") {
			t.Errorf("%s: rows %q, want one starting with tokens_per_sec", mode, rows)
		}
	}
	for _, m := range []string{"host_wait_ns_per_token", "syncs_per_token", "launches_per_token", "host_allocs_per_token", "device_peak_bytes"} {
		if got := strings.Count(stdout, " "+m+" "); got != len(decodeModes) {
			t.Errorf("%s: %d rows, want one per mode", m, got)
		}
	}
	// One record as an object (probe decode --decode batch) against an
	// array: batch compared, the other modes only in base.
	one := decodeFile(t, "batch.json", true, []string{"batch"}, nil)
	stdout, _, err = runProbe("diff", "--format", "markdown", base, one)
	if err != nil || !strings.Contains(stdout, "only in base: `decode per-token-copy on cpu (B=3 T=5 C=8 V=13, probs)`") {
		t.Errorf("array against object: %v\n%s", err, stdout)
	}
}

// TestDiffDecodeGate: a mode that allocates more than base fails
// --fail-on host_allocs_per_token:+0: exit status 1, one line naming the
// configuration and the metric on stderr.
func TestDiffDecodeGate(t *testing.T) {
	base := decodeFile(t, "base.json", false, decodeModes, nil)
	head := decodeFile(t, "head.json", false, decodeModes, func(r *schema.DecodeRecord) {
		if r.Decode == "per-token-prealloc" {
			r.HostAllocsPerToken = 1
		}
	})
	stdout, stderr, err := runProbe("diff", "--fail-on", "host_allocs_per_token:+0", base, head)
	var be breachError
	if !errors.As(err, &be) || be.n != 1 {
		t.Fatalf("got %v, want a breach error of 1 breach (exit status 1)", err)
	}
	if want := "diff: 1 regression past --fail-on"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	var ue usageError
	if errors.As(err, &ue) {
		t.Error("a breach is not a usage error")
	}
	want := "regression: decode per-token-prealloc on cpu (B=3 T=5 C=8 V=13, probs) host_allocs_per_token: 0 -> 1 (+1 (from 0)), limit host_allocs_per_token:+0\n"
	if stderr != want {
		t.Errorf("stderr:\n%q\nwant\n%q", stderr, want)
	}
	if !strings.Contains(stdout, "+1 (from 0)") {
		t.Errorf("stdout does not show the change:\n%s", stdout)
	}
}

// TestDiffDecodeMixed: a decode result against a run report or a job
// result, either way round, is refused in one line that names both files
// and what each is (exit status 1, as for any other pair of files that
// cannot be compared); so is a directory holding a decode result.
func TestDiffDecodeMixed(t *testing.T) {
	dec := decodeFile(t, "d.json", false, decodeModes, nil)
	for _, c := range []struct {
		base, head string
		want       string
	}{
		{dec, diffBase, "diff: " + dec + " is a decode result of probe decode and " + diffBase + " a run report of probe run; compare like with like"},
		{diffBase, dec, "diff: " + diffBase + " is a run report of probe run and " + dec + " a decode result of probe decode; compare like with like"},
		{trainResult, dec, "diff: " + trainResult + " is a job result of probe train or probe exec and " + dec + " a decode result of probe decode; compare like with like"},
		{dec, filepath.Dir(diffBase), "diff: " + dec + " is a decode result of probe decode and " + filepath.Dir(diffBase) + " a directory of run reports; compare like with like"},
	} {
		_, _, err := runProbe("diff", c.base, c.head)
		var ue usageError
		if err == nil || errors.As(err, &ue) || err.Error() != c.want {
			t.Errorf("diff %s %s:\n got %v\nwant %s (not a usage error)", c.base, c.head, err, c.want)
		}
	}
	dir := t.TempDir()
	b, err := os.ReadFile(diffSame)
	if err != nil {
		t.Fatal(err)
	}
	decB, err := os.ReadFile(dec)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"a.json": b, "decode.json": decB} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err = runProbe("diff", diffBase, dir)
	want := "diff: directory " + dir + " holds " + filepath.Join(dir, "decode.json") + ", a decode result of probe decode, and " + filepath.Join(dir, "a.json") + ", a run report of probe run: a directory pools one kind"
	if err == nil || err.Error() != want {
		t.Errorf("a directory with a decode result:\n got %v\nwant %s", err, want)
	}
	_, _, err = runProbe("diff", dec, filepath.Join(dir, "missing.json"))
	if err == nil || !strings.Contains(err.Error(), "missing.json") || strings.Contains(err.Error(), "compare like with like") {
		t.Errorf("a missing head: %v", err)
	}
}

// TestDiffDecodeRun compares probe decode's own output with itself: what
// probe decode --json writes reads back, every mode is compared, and the
// same figures breach nothing.
func TestDiffDecodeRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "d.json")
	if _, stderr, err := runProbe("decode", "--preset", "micro", "--passes", "6", "--data", "synthetic:4KB", "--json", out); err != nil {
		t.Fatalf("probe decode: %v\n%s", err, stderr)
	}
	stdout, stderr, err := runProbe("diff", "--fail-on", "host_allocs_per_token:+0,tokens_per_sec:-10%", out, out)
	if err != nil || stderr != "" {
		t.Fatalf("probe diff of a decode result with itself: %v, stderr %q\n%s", err, stderr, stdout)
	}
	for _, mode := range decodeModes {
		if !strings.Contains(stdout, "\n"+mode+" ") {
			t.Errorf("no rows of %s:\n%s", mode, stdout)
		}
	}
}

// TestDiffDecodeSameInput: decode results are read as run reports are
// (one reader, one Compare), so a diff of a decode result with itself
// says so, as one of a run report does.
func TestDiffDecodeSameInput(t *testing.T) {
	dec := decodeFile(t, "d.json", false, decodeModes, nil)
	stdout, _, err := runProbe("diff", dec, dec)
	if err != nil {
		t.Fatal(err)
	}
	if want := "warning: base and head are one file, " + dec + ": the diff compares it with itself"; !strings.Contains(stdout, want) {
		t.Errorf("diff of a decode result with itself: no %q in\n%s", want, stdout)
	}
}
