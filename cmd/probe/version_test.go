package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"memprobe/internal/golden"
	"memprobe/schema"
)

// TestVersion: `probe version` and `probe --version` print the same short
// human form of this process's environment; --json prints the
// schema.Environment object.
func TestVersion(t *testing.T) {
	out, _, err := runProbe("version")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"memprobe commit ", "go       " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH,
		"\ncpu      ", "\ncores    ", "\nmemory   ", "\nopenblas "} {
		if !strings.Contains(out, want) {
			t.Errorf("probe version lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\n"); n != 7 {
		t.Errorf("probe version printed %d lines, want 7:\n%s", n, out)
	}
	flag, _, err := runProbe("--version")
	if err != nil || flag != out {
		t.Errorf("probe --version: %v\n%s\nwant what probe version prints:\n%s", err, flag, out)
	}

	js, _, err := runProbe("version", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var e schema.Environment
	dec := json.NewDecoder(strings.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("probe version --json: %v\n%s", err, js)
	}
	if e.GoVersion != runtime.Version() || e.LogicalCores != runtime.NumCPU() || e.CPUFlags == nil {
		t.Errorf("probe version --json: %+v", e)
	}
	if _, _, err := runProbe("version", "extra"); err == nil {
		t.Error("probe version extra: no error")
	}
}

// TestVersionText pins the human form on a fixed environment (golden).
func TestVersionText(t *testing.T) {
	for _, c := range []struct {
		name string
		e    schema.Environment
	}{
		{"version-stamped.golden", schema.Environment{
			VCSRevision: "1fd48e1c0ffee0000000000000000000deadbeef", VCSTime: "2026-11-26T01:20:33Z", VCSModified: true,
			GoVersion: "go1.26.0", GOOS: "linux", GOARCH: "amd64", CgoEnabled: true, BuildTags: []string{"openblas"},
			KernelRelease: "6.1.0-test", Hostname: "box", CPUModel: "Test CPU @ 2.00GHz",
			CPUFlags: []string{"avx2", "fma", "avx512f", "avx512bw"}, LogicalCores: 2, GOMAXPROCS: 2,
			MemTotalBytes: 8 << 30, OpenBLASConfig: "OpenBLAS 0.3.21 DYNAMIC_ARCH", OpenBLASCoretype: "Haswell",
		}},
		{"version-bare.golden", schema.Environment{GoVersion: "go1.26.0", GOOS: "linux", GOARCH: "arm64",
			BuildTags: []string{}, CPUFlags: []string{}, LogicalCores: 1, GOMAXPROCS: 1}},
	} {
		var b bytes.Buffer
		if err := writeEnvironment(&b, c.e); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, c.name, b.Bytes())
	}
}

// TestTrainRecordsConfiguration: the result says which configuration
// produced it (flags, phase, knobs, defaults resolved), on which machine,
// from which command line and when.
func TestTrainRecordsConfiguration(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.json")
	_, stderr, err := runProbe("train", "--preset", "tiny", "--threads", "2", "--steps", "2", "--data", "synthetic:200KB",
		"--gemm", "naive", "--plan", "threads", "--phase", "P6", "--cache-scale", "2", "--batch-alloc", "eager",
		"--warmup-steps", "0", "--sample-interval", "5ms", "--seed", "7", "--json", out)
	if err != nil {
		t.Fatalf("probe train: %v\n%s", err, stderr)
	}
	r, err := schema.ReadResult(out)
	if err != nil {
		t.Fatal(err)
	}
	c := r.Config
	want := schema.Config{
		Preset: "tiny", Model: schema.Model{Vocab: 788, Dim: 64, Layers: 2, Heads: 4, FF: 256, Context: 64, Batch: 32},
		Optimizer: r.Optimizer, Threads: 2, Plan: "threads", Phase: "P6",
		Pathology: schema.Pathology{CacheScale: 2, EagerBatches: true}, Engine: "static",
		GEMM: "naive", GEMMUsed: "naive", Data: "synthetic:200KB", DataSeed: 1, Seed: 7, Steps: 2,
		Instruments: true, WarmupSteps: 0, SampleIntervalMs: 5, SampleMaxPoints: 512,
	}
	if c != want {
		t.Errorf("config\n%+v\nwant\n%+v", c, want)
	}
	if !reflect.DeepEqual(r.CommandLine, os.Args) || r.Label != "threads-P6" || r.Environment.GoVersion != runtime.Version() {
		t.Errorf("command line %q (want os.Args %q), label %q, environment %+v", r.CommandLine, os.Args, r.Label, r.Environment)
	}
}
