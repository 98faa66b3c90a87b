package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"memprobe/internal/fakecuda"
	"memprobe/schema"
)

// TestDecodeCUDAFake: `probe decode --device cuda --check cpu` end to end
// on internal/fakecuda (a C stand-in for the driver; no GPU, no NVML): the
// three tables, the JSON with the ledger, the reconciliation and the check,
// and `probe train --decode batch --device cuda` through the same device.
func TestDecodeCUDAFake(t *testing.T) {
	fakecuda.Use(t)
	t.Setenv("MEMPROBE_LIBNVML", "/nonexistent/libnvidia-ml.so.1")
	out := filepath.Join(t.TempDir(), "d.json")
	stdout, stderr, err := runProbe("decode", "--preset", "micro", "--device", "cuda", "--check", "cpu", "--passes", "2",
		"--data", "synthetic:4KB", "--json", out)
	if err != nil {
		t.Fatalf("probe decode --device cuda: %v\n%s", err, stderr)
	}
	for _, want := range []string{"decode on cuda", "device memory on " + fakecuda.DeviceName, "check of cuda against the cpu device"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "FAIL") {
		t.Errorf("a check failed:\n%s", stdout)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var recs []schema.DecodeRecord
	if err := json.Unmarshal(b, &recs); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 {
		t.Fatalf("%d records, want 4", len(recs))
	}
	for _, r := range recs {
		if r.Device != "cuda" || r.Check == nil || !r.Check.Pass || r.DeviceMemory == nil ||
			r.DeviceMemory.CuBLASWorkspaceBytes+r.DeviceMemory.HeldBeforeOpenBytes != fakecuda.WorkspaceBytes+fakecuda.BLASKernelBytes ||
			len(r.Buffers) != 5 || r.LedgerPeakBytes <= 0 {
			t.Errorf("%s: record %+v", r.Decode, r)
		}
	}

	// Training with the LM head on the cuda device: the same losses as
	// on the cpu device, within float rounding.
	var losses [2][]float32
	for i, dev := range []string{"cpu", "cuda"} {
		rj := filepath.Join(t.TempDir(), "r.json")
		_, stderr, err = runProbe("train", "--preset", "micro", "--steps", "3", "--threads", "2", "--decode", "batch", "--device", dev,
			"--gemm", "naive", "--data", "synthetic:4KB", "--json", rj)
		if err != nil {
			t.Fatalf("probe train --decode batch --device %s: %v\n%s", dev, err, stderr)
		}
		r, err := schema.ReadResult(rj)
		if err != nil {
			t.Fatal(err)
		}
		if r.DecodeStats == nil || r.DecodeStats.Syncs == 0 {
			t.Errorf("train on %s: decode stats %+v", dev, r.DecodeStats)
		}
		losses[i] = r.Losses
	}
	for s := range losses[0] {
		if d := losses[1][s] - losses[0][s]; d > 1e-5 || d < -1e-5 {
			t.Errorf("step %d: loss %v with the head on cuda, %v on cpu", s, losses[1][s], losses[0][s])
		}
	}
	t.Logf("losses: cpu %v, cuda %v", losses[0], losses[1])
}

// TestDecodeCUDAPinnedHost: `probe decode --device cuda` records
// pinned_host true by default (the fake driver has page-locked memory) in
// the per-token-prealloc and batch modes, false in the others (Go slices
// by design), and false in every mode with --pinned-host=false; both runs
// agree with the cpu device. On the cpu device it is false whatever the
// flag says.
func TestDecodeCUDAPinnedHost(t *testing.T) {
	fakecuda.Use(t)
	t.Setenv("MEMPROBE_LIBNVML", "/nonexistent/libnvidia-ml.so.1")
	for _, c := range []struct {
		device string
		flag   []string
		want   bool
	}{
		{"cuda", nil, true},
		{"cuda", []string{"--pinned-host=false"}, false},
		{"cpu", nil, false},
	} {
		out := filepath.Join(t.TempDir(), "d.json")
		args := append([]string{"decode", "--preset", "micro", "--device", c.device, "--check", "cpu", "--passes", "1",
			"--data", "synthetic:4KB", "--json", out}, c.flag...)
		if _, stderr, err := runProbe(args...); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, stderr)
		}
		recs, err := schema.ReadDecode(out)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 4 {
			t.Fatalf("%v: %d records, want 4", args, len(recs))
		}
		for _, r := range recs {
			want := c.want && (r.Decode == "per-token-prealloc" || r.Decode == "batch")
			if r.Config.PinnedHost != want || r.Check == nil || !r.Check.Pass {
				t.Errorf("%s %v: %s: pinned_host %v, check %+v; want pinned_host %v and the check passed", c.device, c.flag, r.Decode, r.Config.PinnedHost, r.Check, want)
			}
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if want := `"pinned_host": ` + strconv.FormatBool(c.want); !strings.Contains(string(b), want) {
			t.Errorf("%s %v: the JSON lacks %s", c.device, c.flag, want)
		}
	}
}
