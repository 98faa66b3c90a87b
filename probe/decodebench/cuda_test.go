package decodebench

import (
	"bytes"
	"strings"
	"testing"

	"memprobe/internal/fakecuda"
	"memprobe/internal/table"
	"memprobe/trainer/decode"
	"memprobe/trainer/model"
)

// TestRunCUDA runs `probe decode --device cuda --check cpu` over
// internal/fakecuda (no GPU, no NVML): every mode agrees with the cpu
// device, the waits per token are 1 and 1/T, the prealloc and batch modes
// allocate nothing on the host per token through the driver binding, and
// the device-memory reconciliation names the fake's allocation rounding
// and cuBLAS workspace exactly, and says why NVML's figures are missing.
func TestRunCUDA(t *testing.T) {
	fakecuda.Use(t)
	t.Setenv("MEMPROBE_LIBNVML", "/nonexistent/libnvidia-ml.so.1")
	cfg, err := model.Preset("micro")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Vocab = 300 // above the kernel's block of 256 threads
	o := Options{Config: cfg, Seed: 1337, Data: "synthetic:4KB", DataSeed: 1, GEMM: "naive",
		Modes: decode.Modes(), Device: "cuda", Passes: 3, Probs: true, Check: "cpu"}
	ms, err := Run(o, nil)
	if err != nil {
		t.Fatal(err)
	}
	B, T, C, V := cfg.Batch, cfg.Context, cfg.Dim, cfg.Vocab
	for _, m := range ms {
		if m.Device != "cuda" || m.Check == nil || !m.Check.Pass || m.Check.TokensDiffer != 0 {
			t.Errorf("%s: device %s, check %+v: want cuda agreeing with cpu", m.Mode, m.Device, m.Check)
		}
		want := 1.0
		if m.Mode == decode.Batch.String() {
			want = 1.0 / float64(T)
		}
		if m.SyncsPerToken != want {
			t.Errorf("%s: %v waits per token, want %v", m.Mode, m.SyncsPerToken, want)
		}
		if (m.Mode == decode.Batch.String() || m.Mode == decode.PerTokenPrealloc.String()) && !raceEnabled && m.HostAllocsPerToken != 0 {
			t.Errorf("%s: %v host allocations per token, want 0", m.Mode, m.HostAllocsPerToken)
		}
		dm := m.DeviceMemory
		if dm == nil {
			t.Fatalf("%s: no device memory reconciliation", m.Mode)
		}
		rows := 1
		if m.Mode == decode.Batch.String() {
			rows = T
		}
		var ledgerBytes, rounded int64
		for _, n := range []int{V * C, rows * C, rows * V, rows, rows * 2} {
			ledgerBytes += int64(4 * n)
			rounded += (int64(4*n) + fakecuda.Granularity - 1) / fakecuda.Granularity * fakecuda.Granularity
		}
		if dm.GPU != fakecuda.DeviceName || dm.LedgerBytes != ledgerBytes || dm.AllocRoundingBytes != rounded-ledgerBytes ||
			dm.CuBLASWorkspaceBytes != fakecuda.WorkspaceBytes || dm.StreamHandleBytes != 0 ||
			!strings.Contains(dm.NVMLNote, "no NVML") {
			t.Errorf("%s: device memory %+v; want ledger %d, rounding %d, workspace %d, no stream cost, and a note on NVML",
				m.Mode, *dm, ledgerBytes, rounded-ledgerBytes, fakecuda.WorkspaceBytes)
		}
		if r := Record(m); r.DevicePeakSource != "ledger" || r.LedgerPeakBytes != ledgerBytes || len(r.Buffers) != 5 {
			t.Errorf("%s: record peak %d (%s), ledger %d, %d buffers", m.Mode, r.DevicePeakBytes, r.DevicePeakSource, r.LedgerPeakBytes, len(r.Buffers))
		}
	}
	_ = B
	var out bytes.Buffer
	if err := WriteDeviceMemory(&out, ms, table.Text); err != nil {
		t.Fatal(err)
	}
	if err := WriteChecks(&out, ms, table.Text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"device memory on " + fakecuda.DeviceName, "cuBLAS workspace", "check of cuda against the cpu device", "pass"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("tables lack %q:\n%s", want, out.String())
		}
	}
	t.Logf("\n%s", out.String())
}
