package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"memprobe/internal/fakecuda"
	"memprobe/schema"
)

// TestGPUCheckScript runs the run half of scripts/gpu-check.sh on
// internal/fakecuda, with this test binary as the probe and the micro
// preset, so that a mistake in the script shows here and not in the few
// minutes of a lent GPU machine: every command passes, the summary says so,
// and the JSON files are decode records of the cuda device with their
// checks.
func TestGPUCheckScript(t *testing.T) {
	lib, bins, dir := scriptProbes(t, []string{"sh", "timeout", "tee"}, "probe")
	wrapper := bins[0]
	out := filepath.Join(dir, "out")
	cmd := exec.Command("sh", "../../scripts/gpu-check.sh", "run")
	cmd.Env = append(fakeDriverEnv(lib), "PROBE_BIN="+wrapper, "OUT="+out,
		"GPU_CHECK_PRESETS=micro", "GPU_CHECK_NOPROBS_PRESET=micro")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gpu-check.sh run: %v\n%s", err, b)
	}
	summary, err := os.ReadFile(filepath.Join(out, "summary.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--preset micro --check cpu\n  ok", "--probs=false\n  ok", "check of cuda against the cpu device", "== gpu-check: exit 0"} {
		if !strings.Contains(string(summary), want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}
	for _, f := range []string{"decode-micro.json", "decode-micro-noprobs.json"} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		var recs []schema.DecodeRecord
		if err := json.Unmarshal(b, &recs); err != nil || len(recs) != 4 {
			t.Fatalf("%s: %d records, %v", f, len(recs), err)
		}
		for _, r := range recs {
			if r.Device != "cuda" || (f == "decode-micro.json" && (r.Check == nil || !r.Check.Pass)) {
				t.Errorf("%s: %s on %s, check %+v", f, r.Decode, r.Device, r.Check)
			}
		}
	}
}

// scriptProbes prepares a test of a script under scripts/ on the stand-in
// driver: it skips with -short or without the tools the script needs,
// builds internal/fakecuda, and writes in a temporary directory one
// wrapper per name that runs this test binary as the probe. It returns the
// driver library, the wrappers' paths and the directory.
func scriptProbes(t *testing.T, tools []string, names ...string) (lib string, bins []string, dir string) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: runs the script")
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found", tool)
		}
	}
	lib = fakecuda.Build(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	for _, name := range names {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\nexec env "+mainEnv+"=1 '"+self+"' \"$@\"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		bins = append(bins, p)
	}
	return lib, bins, dir
}

// fakeDriverEnv is this process's environment with lib as the CUDA driver
// and cuBLAS, and no NVML.
func fakeDriverEnv(lib string) []string {
	return append(os.Environ(), "MEMPROBE_LIBCUDA="+lib, "MEMPROBE_LIBCUBLAS="+lib, "MEMPROBE_LIBNVML=/nonexistent/libnvidia-ml.so.1")
}
