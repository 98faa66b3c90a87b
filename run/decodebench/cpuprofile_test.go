package decodebench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"memprobe/trainer/decode"
	"memprobe/trainer/model"
)

// TestCPUProfileKeptOnFailure: --cpuprofile streams to a temporary file
// beside its path; a run that fails removes it and leaves the path as it
// was (before, the file was created, emptied, when the profile started),
// one that succeeds renames it over the path. A path that could not be
// written fails before any work, naming the flag.
func TestCPUProfileKeptOnFailure(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cpu.pprof")
	if err := os.WriteFile(path, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	stop, err := startCPUProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "keep" {
		t.Errorf("while profiling the path holds %.20q, want it untouched", b)
	}
	if err := stop(false); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "keep" {
		t.Errorf("after a failed run the path holds %.20q, want keep", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d files after a failed run, want 1 (no temporary file)", len(ents))
	}

	cfg, err := model.Preset("micro")
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Config: cfg, Seed: 1, Data: "synthetic:4KB", DataSeed: 1, GEMM: "naive",
		Modes: []decode.Mode{decode.Batch}, Device: "cpu", Passes: 1, CPUProfile: path}
	if _, err := Run(o, nil); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Errorf("after a run that succeeded the path holds %.20q, want a gzipped profile", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d files after a run, want 1 (no temporary file)", len(ents))
	}

	nodir := filepath.Join(dir, "no", "cpu.pprof")
	o.CPUProfile = nodir
	o.Data = filepath.Join(dir, "missing.txt") // checked after the profile's path
	if _, err := Run(o, nil); err == nil || !strings.HasPrefix(err.Error(), "--cpuprofile "+nodir+": directory") {
		t.Errorf("--cpuprofile in a missing directory: %v", err)
	}
}
