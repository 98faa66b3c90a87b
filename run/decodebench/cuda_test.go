package decodebench

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"memprobe/internal/fakecuda"
	"memprobe/internal/fakenvml"
	"memprobe/internal/table"
	"memprobe/report"
	"memprobe/schema"
	"memprobe/trainer/decode"
	"memprobe/trainer/device"
	"memprobe/trainer/model"
)

// TestRunCUDA runs `probe decode --device cuda --check cpu` over
// internal/fakecuda (no GPU, no NVML), with page-locked host buffers and
// without: every mode agrees with the cpu device, the waits per token are
// 1 and 1/T, the prealloc and batch modes allocate nothing on the host per
// token through the driver binding, the record says whether the host
// buffers were page-locked, and the device-memory reconciliation names the
// fake's allocation rounding and cuBLAS workspace exactly (page-locked
// host memory is not device memory), and says why NVML's figures are
// missing.
func TestRunCUDA(t *testing.T) {
	for _, pinned := range []bool{true, false} {
		t.Run(fmt.Sprintf("pinned_host=%v", pinned), func(t *testing.T) { runCUDA(t, pinned) })
	}
}

func runCUDA(t *testing.T, pinned bool) {
	fakecuda.Use(t)
	t.Setenv("MEMPROBE_LIBNVML", "/nonexistent/libnvidia-ml.so.1")
	cfg, err := model.Preset("micro")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Vocab = 300 // above the kernel's block of 256 threads
	o := Options{Config: cfg, Seed: 1337, Data: "synthetic:4KB", DataSeed: 1, GEMM: "naive",
		Modes: decode.Modes(), Device: "cuda", Passes: 3, Probs: true, Check: "cpu", PinnedHost: pinned}
	ms, err := Run(o, nil)
	if err != nil {
		t.Fatal(err)
	}
	T, C, V := cfg.Context, cfg.Dim, cfg.Vocab
	for i, m := range ms {
		wantPinned := pinned && (m.Decode == decode.PerTokenPrealloc.String() || m.Decode == decode.Batch.String())
		if m.Config.PinnedHost != wantPinned {
			t.Errorf("%s: record pinned_host %v; want %v", m.Decode, m.Config.PinnedHost, wantPinned)
		}
		if m.Device != "cuda" || m.Check == nil || !m.Check.Pass || m.Check.TokensDiffer != 0 {
			t.Errorf("%s: device %s, check %+v: want cuda agreeing with cpu", m.Decode, m.Device, m.Check)
		}
		want := 1.0
		if m.Decode == decode.Batch.String() {
			want = 1.0 / float64(T)
		}
		if m.SyncsPerToken != want {
			t.Errorf("%s: %v waits per token, want %v", m.Decode, m.SyncsPerToken, want)
		}
		if (m.Decode == decode.Batch.String() || m.Decode == decode.PerTokenPrealloc.String()) && !raceEnabled && m.HostAllocsPerToken != 0 {
			t.Errorf("%s: %v host allocations per token, want 0", m.Decode, m.HostAllocsPerToken)
		}
		checkCUDADeviceMemory(t, m, i, ms[0], T, C, V)
	}
	var out bytes.Buffer
	if err := report.WriteDecode(&out, o.Records(ms, nil, time.Now()), table.Text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"device memory on " + fakecuda.DeviceName, "cuBLAS workspace", "check of cuda against the cpu device", "pass"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("tables lack %q:\n%s", want, out.String())
		}
	}
	t.Logf("\n%s", out.String())
}

// checkCUDADeviceMemory checks mode i's record m of runCUDA (first, the
// first mode's; T, C, V the shape) without NVML: the ledger's five buffers
// in whole 2 MiB pages, no stream cost, no context or remainder, notes on
// NVML and the context, cuBLAS's kernels in the first mode's workspace,
// and the record's peak the ledger's.
func checkCUDADeviceMemory(t *testing.T, m schema.DecodeRecord, i int, first schema.DecodeRecord, T, C, V int) {
	t.Helper()
	dm := m.DeviceMemory
	if dm == nil {
		t.Fatalf("%s: no device memory reconciliation", m.Decode)
	}
	rows := 1
	if m.Decode == decode.Batch.String() {
		rows = T
	}
	// The ledger in whole 2 MiB pages: the five buffers' total, not
	// each rounded.
	var ledgerBytes int64
	for _, n := range []int{V * C, rows * C, rows * V, rows, rows * 2} {
		ledgerBytes += int64(4 * n)
	}
	rounded := (ledgerBytes + 2<<20 - 1) / (2 << 20) * (2 << 20)
	if dm.GPU != fakecuda.DeviceName || dm.LedgerBytes != ledgerBytes || dm.AllocRoundingBytes != rounded-ledgerBytes ||
		dm.StreamHandleBytes != 0 || !strings.Contains(dm.NVMLNote, "no NVML") || !strings.Contains(dm.ContextNote, "no NVML") ||
		dm.ContextProcessMeasured || !strings.Contains(dm.ContextProcessNote, "no NVML") || dm.UnexplainedMeasured {
		t.Errorf("%s: device memory %+v; want ledger %d, rounding %d, no stream cost, no context or remainder, and notes on NVML and the context",
			m.Decode, *dm, ledgerBytes, rounded-ledgerBytes)
	}
	// cuBLAS's kernels, loaded by the first GEMM in the context (CUDA
	// loads modules lazily) and kept there, are in the workspace
	// figure of the mode that loaded them and held before every later
	// mode's device opened; a run that finds them loaded (an earlier
	// test in this process) has them in its context.
	loaded := first.DeviceMemory.CuBLASWorkspaceBytes - fakecuda.WorkspaceBytes
	if loaded != 0 && loaded != fakecuda.BLASKernelBytes ||
		i > 0 && (dm.HeldBeforeOpenBytes != loaded || dm.CuBLASWorkspaceBytes != fakecuda.WorkspaceBytes) {
		t.Errorf("%s (mode %d): held before %d B, workspace %d B; want the workspace's %d B, and the kernels' %d B in the first mode's workspace and held before every later one, or in neither",
			m.Decode, i, dm.HeldBeforeOpenBytes, dm.CuBLASWorkspaceBytes, fakecuda.WorkspaceBytes, fakecuda.BLASKernelBytes)
	}
	if m.DevicePeakSource != "ledger" || m.LedgerPeakBytes != ledgerBytes || len(m.Buffers) != 5 {
		t.Errorf("%s: record peak %d (%s), ledger %d, %d buffers", m.Decode, m.DevicePeakBytes, m.DevicePeakSource, m.LedgerPeakBytes, len(m.Buffers))
	}
}

// runWithFakeNVML points the run at the fake driver instance built with
// define and at a fake NVML instance of its own (the same define, so its
// init-time settings are this run's) wired to it, with a 256 MiB driver
// reservation that NVML counts as used and CUDA leaves out of its total,
// as a real GPU does; then runs two modes at the micro preset. It returns
// the measurements and their tables as text.
func runWithFakeNVML(t *testing.T, define string) ([]schema.DecodeRecord, string) {
	t.Helper()
	ms, out, _ := runModesWithFakeNVML(t, define, decode.PerTokenPrealloc, decode.Batch)
	return ms, out
}

// runModesWithFakeNVML is runWithFakeNVML for the modes given; it returns
// the fake driver's path too.
func runModesWithFakeNVML(t *testing.T, define string, modes ...decode.Mode) ([]schema.DecodeRecord, string, string) {
	t.Helper()
	lib := fakecuda.Use(t, define)
	fakenvml.Use(t, define) // sets MEMPROBE_LIBNVML
	t.Setenv(fakenvml.EnvFakeCUDA, lib)
	t.Setenv(fakecuda.EnvReservedBytes, strconv.Itoa(256<<20))
	cfg, err := model.Preset("micro")
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Config: cfg, Seed: 1337, Data: "synthetic:4KB", DataSeed: 1, GEMM: "naive",
		Modes: modes, Device: "cuda", Passes: 2, Probs: true, PinnedHost: true}
	ms, err := Run(o, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := report.WriteDecode(&out, o.Records(ms, nil, time.Now()), table.Text); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", out.String())
	return ms, out.String(), lib
}

// TestRunCUDAWithNVML: the reconciliation with NVML present, on the two
// stand-ins wired together (the fake NVML lists this process with the
// memory the fake driver has handed it), nothing hidden (TestRunCUDAHidden
// plants some): the context measured on its own, what the process held
// before each mode's device opened, the ledger in whole pages and the
// cuBLAS workspace leave nothing unexplained, and the decode record's
// device peak is NVML's. With no memory charged to no process, NVML's
// charge for the context equals the GPU's fall in free memory when it was
// made, measured from NVML's free figure to CUDA's: free memory, since
// NVML's total includes the reservation and CUDA's does not (on the
// totals it would come out 256 MiB apart).
func TestRunCUDAWithNVML(t *testing.T) {
	ms, _ := runWithFakeNVML(t, "NVML_RECONCILE") // its own instance: no context from other tests
	for _, m := range ms {
		dm := m.DeviceMemory
		if dm == nil || dm.NVMLNote != "" {
			t.Fatalf("%s: device memory %+v, want NVML's figures", m.Decode, dm)
		}
		if !dm.UnexplainedMeasured || dm.UnexplainedBytes != 0 || dm.ProcessPeakBytes < dm.ProcessBytes || dm.NVMLSamples < 1 || len(dm.NVMLTimeline) != dm.NVMLSamples {
			t.Errorf("%s: %+v: want nothing unexplained, a peak at least NVML's figure at the end", m.Decode, *dm)
		}
		if !dm.ContextProcessMeasured || dm.ContextProcessBytes != dm.ContextBytes {
			t.Errorf("%s: context measured by NVML %d B (%v), by the fall in free memory %d B: want them equal", m.Decode, dm.ContextProcessBytes, dm.ContextProcessMeasured, dm.ContextBytes)
		}
		if m.DevicePeakSource != "nvml" || m.DevicePeakBytes != dm.ProcessPeakBytes || m.LedgerPeakBytes >= m.DevicePeakBytes {
			t.Errorf("%s: record peak %d B from %s, ledger %d B: want NVML's peak, above the ledger's", m.Decode, m.DevicePeakBytes, m.DevicePeakSource, m.LedgerPeakBytes)
		}
		if dm.ProcessSource != "nvml" {
			t.Errorf("%s: process_source %q, want nvml", m.Decode, dm.ProcessSource)
		}
	}
}

// pidNamespaceRuns gives each run of TestRunCUDAInPIDNamespace a fake
// driver of its own: in a PID namespace an earlier context of this
// process would be invisible to the baseline (NVML's entry for it is
// under another PID), so each run starts with none.
var pidNamespaceRuns atomic.Int64

// TestRunCUDAInPIDNamespace: NVML lists this process under another PID,
// as in a container with its own PID namespace. The process's figure is
// then the GPU's fall in free memory since before the context, said so
// (process_source gpu_free_delta, a note), and so is the context's on its
// own: the reconciliation leaves nothing unexplained; there is no peak,
// so the record's peak is the ledger's.
func TestRunCUDAInPIDNamespace(t *testing.T) {
	t.Setenv("FAKENVML_PID_OFFSET", "100000")
	ms, _ := runWithFakeNVML(t, fmt.Sprintf("NVML_PIDNS_%d", pidNamespaceRuns.Add(1)))
	for _, m := range ms {
		dm := m.DeviceMemory
		if dm == nil || dm.ProcessSource != "gpu_free_delta" || !strings.Contains(dm.NVMLNote, "no other process") {
			t.Fatalf("%s: device memory %+v, want the GPU's free-memory delta, said so", m.Decode, dm)
		}
		if !dm.UnexplainedMeasured || dm.UnexplainedBytes != 0 || dm.ProcessPeakBytes != 0 {
			t.Errorf("%s: %+v: want nothing unexplained, no peak", m.Decode, *dm)
		}
		if !dm.ContextProcessMeasured || dm.ContextProcessBytes != dm.ContextBytes {
			t.Errorf("%s: context measured as a delta %d B (%v), want the fall in free memory %d B", m.Decode, dm.ContextProcessBytes, dm.ContextProcessMeasured, dm.ContextBytes)
		}
		if m.DevicePeakSource != "ledger" {
			t.Errorf("%s: record peak from %s, want the ledger's", m.Decode, m.DevicePeakSource)
		}
	}
}

// TestMeasureBatchPinnedCUDA: with a decoder whose host buffers are
// page-locked, MeasureBatch copies the probabilities back into a
// page-locked block of the device as well, so that nothing comes down
// through staging (the device never makes a device-to-host staging
// buffer), frees the block when it returns, and allocates nothing per
// token; with a staged decoder both directions are staged.
func TestMeasureBatchPinnedCUDA(t *testing.T) {
	lib := fakecuda.Use(t)
	const B, T, C, V = 2, 8, 24, 300
	in := newInputs(5, B*T, C, V)
	for _, mode := range []decode.Mode{decode.PerTokenPrealloc, decode.Batch} {
		for _, pinned := range []bool{true, false} {
			dev, err := device.Open("cuda", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			d, err := decode.New(dev, mode, V, C, T, in.lmHead, decode.PinnedHost(pinned))
			if err != nil {
				t.Fatal(err)
			}
			fakecuda.ResetCounters(lib)
			meas, err := MeasureBatch(dev, d, in.hidden, B, T, in.targets, true, 3)
			if err != nil {
				t.Fatal(err)
			}
			hm := dev.(device.HostMemory)
			var blocks int64
			for _, b := range hm.HostBuffers() {
				if b.Name == "decodebench.probs" {
					t.Errorf("%s pinned=%v: the probabilities' block outlived MeasureBatch", mode, pinned)
				}
				blocks += b.Bytes
			}
			// The device's own pinned memory: its parameter block and a
			// staging buffer (1 MiB at least) per direction it staged.
			own := dev.Stats().PinnedHostBytes - blocks
			if pinned && (blocks == 0 || own >= 2<<20) || !pinned && (blocks != 0 || own < 2<<20) {
				t.Errorf("%s pinned=%v: %d B of page-locked blocks, %d B of the device's own pinned memory; want blocks and no device-to-host staging when pinned, staging both ways when not",
					mode, pinned, blocks, own)
			}
			if c, err := fakecuda.ReadCounters(lib); err != nil || c.PageableCopies != 0 {
				t.Errorf("%s pinned=%v: %+v (%v), want no copy from pageable memory", mode, pinned, c, err)
			}
			if !raceEnabled && meas.HostAllocsPerToken != 0 {
				t.Errorf("%s pinned=%v: %v host allocations per token, want 0", mode, pinned, meas.HostAllocsPerToken)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			if err := dev.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}
