package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"memprobe/schema"
)

// TestGPUCheckBench runs the bench half of scripts/gpu-check.sh on
// internal/fakecuda at the micro shape, so that the measurements a lent
// GPU machine's few minutes are spent on are known to run: every command
// passes, each writes its JSON, the --runs ones pool 3 runs, the
// --pinned-host ones record what they used, and the --dim ones decode the
// narrower head.
func TestGPUCheckBench(t *testing.T) {
	lib, bins, dir := scriptProbes(t, []string{"sh", "timeout", "tee"}, "probe")
	wrapper := bins[0]
	out := filepath.Join(dir, "out")
	cmd := exec.Command("sh", "../../scripts/gpu-check.sh", "bench")
	cmd.Env = append(fakeDriverEnv(lib), "PROBE_BIN="+wrapper, "OUT="+out,
		"GPU_CHECK_BENCH_SMALL=micro", "GPU_CHECK_BENCH_BIG=micro", "GPU_CHECK_BENCH_DIMS=4 8")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gpu-check.sh bench: %v\n%s", err, b)
	}
	if !strings.Contains(string(b), "== bench: exit 0") || strings.Contains(string(b), "FAILED") {
		t.Errorf("bench output:\n%s", b)
	}
	read := func(name string) []schema.DecodeRecord {
		t.Helper()
		recs, err := schema.ReadDecode(filepath.Join(out, "bench-"+name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		return recs
	}
	for _, name := range []string{"small-runs", "big-noprobs-runs"} {
		recs := read(name)
		if len(recs) != 4 {
			t.Fatalf("%s: %d records, want the 4 modes", name, len(recs))
		}
		for _, r := range recs {
			if len(r.TokensPerSecRuns) != 3 {
				t.Errorf("%s: %s pools %d runs, want 3", name, r.Decode, len(r.TokensPerSecRuns))
			}
		}
	}
	for _, pinned := range []bool{false, true} {
		for _, round := range []string{"1", "2"} {
			name := "big-pinned-" + map[bool]string{false: "false", true: "true"}[pinned] + "-" + round
			for _, r := range read(name) {
				// The page-locked buffers are the decoder's in the
				// per-token-prealloc and batch modes only.
				want := pinned && (r.Decode == "per-token-prealloc" || r.Decode == "batch")
				if r.Config.PinnedHost != want {
					t.Errorf("%s: %s pinned_host %v, want %v", name, r.Decode, r.Config.PinnedHost, want)
				}
			}
		}
	}
	for _, dim := range []int{4, 8} {
		for _, mode := range []string{"per-token-prealloc", "batch"} {
			recs := read("big-dim" + map[int]string{4: "4", 8: "8"}[dim] + "-" + mode)
			if len(recs) != 1 || recs[0].Config.Model.Dim != dim || recs[0].Decode != mode || recs[0].Config.Probs {
				t.Errorf("dim %d %s: %+v", dim, mode, recs)
			}
		}
	}
}

// TestGPUAB runs scripts/gpu-ab.sh on internal/fakecuda at the micro
// shape with this test binary as both builds: every command passes and
// writes its JSON under the names the script promises.
func TestGPUAB(t *testing.T) {
	lib, bins, dir := scriptProbes(t, []string{"sh", "timeout", "tr", "basename"}, "base", "head")
	out := filepath.Join(dir, "out")
	cmd := exec.Command("sh", "../../scripts/gpu-ab.sh", bins[0], bins[1])
	cmd.Env = append(fakeDriverEnv(lib), "OUT="+out, "GPU_AB_SMALL=micro", "GPU_AB_BIG=micro", "GPU_AB_NARROW=4")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gpu-ab.sh: %v\n%s", err, b)
	}
	for _, label := range []string{"base", "head"} {
		for _, name := range []string{"micro-probstrue-1", "micro-probsfalse-2", "micro-dim4"} {
			recs, err := schema.ReadDecode(filepath.Join(out, "ab-"+label+"-"+name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			want := 4
			if name == "micro-dim4" {
				want = 1
			}
			if len(recs) != want || recs[0].Device != "cuda" {
				t.Errorf("%s-%s: %d records on %s, want %d on cuda", label, name, len(recs), recs[0].Device, want)
			}
		}
	}
}
