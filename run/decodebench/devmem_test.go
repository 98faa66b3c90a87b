package decodebench

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"memprobe/internal/fakecuda"
	"memprobe/internal/table"
	"memprobe/schema"
	"memprobe/trainer/decode"
)

// decoderBuffers is how many device buffers a decoder allocates in every
// mode (the LM head, hidden rows, logits, targets, sampled tokens and
// losses in one): each one cuMemAlloc.
const decoderBuffers = 5

// TestRunCUDAHidden plants device memory no ledger knows: the stand-in
// driver takes hidden bytes beside each allocation and charges them to
// the process, as per-allocation overhead would. The reconciliation's
// parts (the context on its own, the stream and handle, the ledger in
// whole pages, the workspace) do not contain it, so it is left
// unexplained, to the byte: the decoder's allocations times the planted
// size, and the table shows it in the unexplained column; none of it
// arose while decoding (TestRunCUDALeakWhileDecoding plants that). With
// nothing planted (TestRunCUDAWithNVML) nothing is left.
func TestRunCUDAHidden(t *testing.T) {
	const hidden = 1536 << 10 // 1.5 MiB beside each allocation
	t.Setenv(fakecuda.EnvHiddenBytes, strconv.Itoa(hidden))
	ms, out := runWithFakeNVML(t, fmt.Sprintf("NVML_HIDDEN_%d", hiddenRuns.Add(1)))
	want := table.FormatBytes(decoderBuffers * hidden)
	for _, m := range ms {
		dm := m.DeviceMemory
		if dm == nil {
			t.Fatalf("%s: no device memory reconciliation", m.Decode)
		}
		if len(m.Buffers) != decoderBuffers {
			t.Fatalf("%s: %d buffers in the ledger, want %d", m.Decode, len(m.Buffers), decoderBuffers)
		}
		if w := int64(decoderBuffers * hidden); dm.UnexplainedBytes != w {
			t.Errorf("%s: unexplained %d B, want the hidden %d B (%d allocations of %d B planted)",
				m.Decode, dm.UnexplainedBytes, w, decoderBuffers, hidden)
		}
		if dm.DecodingFallBytes != 0 {
			t.Errorf("%s: free memory fell %d B while decoding: want 0, the hidden memory came with the set-up's allocations", m.Decode, dm.DecodingFallBytes)
		}
		if dm.NVMLNote != "" || dm.ProcessSource != "nvml" || !dm.ContextProcessMeasured || !dm.UnexplainedMeasured {
			t.Errorf("%s: device memory %+v, want NVML's figures, the context measured and the remainder", m.Decode, dm)
		}
		if got := tableCell(out, "device memory on", m.Decode, "unexplained"); got != want {
			t.Errorf("%s: the device-memory table's unexplained cell %q, want %q", m.Decode, got, want)
		}
	}
}

// TestRunCUDALeakWhileDecoding plants device memory made while the decoder
// runs, after every set-up allocation: the stand-in driver leaks 1 MiB at
// each kernel launch (the softmax, once per Decode step). The
// reconciliation's parts do not contain it, so NVML's figure grows by the
// leak and the remainder with it, within 10 % (here to the byte), while
// the cuBLAS workspace stays what it is without the leak: it is measured
// across cuBLAS's own calls, not as the fall in free memory from the
// decoder's buffers to the end, which took the leak for workspace. Each
// mode runs alone in its own instance of the fakes, so the fake's count of
// what leaked is that mode's.
func TestRunCUDALeakWhileDecoding(t *testing.T) {
	const leak = 1 << 20
	type row struct {
		mode                                   string
		leaked, nvml, workspace, unexplained   int64
		cleanNVML, cleanWorkspace, cleanUnexpl int64
	}
	var rows []row
	for _, mode := range []decode.Mode{decode.PerTokenPrealloc, decode.Batch} {
		t.Setenv(fakecuda.EnvLeakPerLaunchBytes, "0")
		clean, _, _ := runModesWithFakeNVML(t, fmt.Sprintf("NVML_LEAK_%d", leakRuns.Add(1)), mode)
		t.Setenv(fakecuda.EnvLeakPerLaunchBytes, strconv.Itoa(leak))
		ms, out, lib := runModesWithFakeNVML(t, fmt.Sprintf("NVML_LEAK_%d", leakRuns.Add(1)), mode)
		leaked, err := fakecuda.LeakedBytes(lib, 0)
		if err != nil {
			t.Fatal(err)
		}
		dm, c := ms[0].DeviceMemory, clean[0].DeviceMemory
		if dm == nil || c == nil || !dm.UnexplainedMeasured || !c.UnexplainedMeasured {
			t.Fatalf("%s: device memory %+v, without the leak %+v: want both reconciled", mode, dm, c)
		}
		rows = append(rows, row{mode.String(), int64(leaked), dm.ProcessBytes, dm.CuBLASWorkspaceBytes, dm.UnexplainedBytes,
			c.ProcessBytes, c.CuBLASWorkspaceBytes, c.UnexplainedBytes})
		if leaked == 0 || dm.ProcessBytes-c.ProcessBytes != int64(leaked) {
			t.Errorf("%s: %d B leaked, NVML's figure %d B against %d B without: want it grown by the leak", mode, leaked, dm.ProcessBytes, c.ProcessBytes)
		}
		if d := dm.UnexplainedBytes - int64(leaked); d < -int64(leaked)/10 || d > int64(leaked)/10 {
			t.Errorf("%s: unexplained %d B, want the %d B leaked within 10 %%", mode, dm.UnexplainedBytes, leaked)
		}
		if dm.DecodingFallBytes != int64(leaked) || c.DecodingFallBytes != 0 || dm.CuBLASWorkspaceSource != "cublas_calls" {
			t.Errorf("%s: free memory fell %d B while decoding outside cuBLAS (%d B without the leak), workspace from %q: want the leak's %d B (0), from cublas_calls",
				mode, dm.DecodingFallBytes, c.DecodingFallBytes, dm.CuBLASWorkspaceSource, leaked)
		}
		if dm.CuBLASWorkspaceBytes != c.CuBLASWorkspaceBytes || c.UnexplainedBytes != 0 {
			t.Errorf("%s: cuBLAS workspace %d B, %d B without the leak (unexplained %d B): want it unchanged, and nothing unexplained without",
				mode, dm.CuBLASWorkspaceBytes, c.CuBLASWorkspaceBytes, c.UnexplainedBytes)
		}
		if got, want := tableCell(out, "device memory on", mode.String(), "unexplained"), table.FormatBytes(float64(leaked)); got != want {
			t.Errorf("%s: the device-memory table's unexplained cell %q, want %q", mode, got, want)
		}
	}
	fb := func(n int64) string { return table.FormatBytes(float64(n)) }
	var b strings.Builder
	fmt.Fprintf(&b, "%-20s %10s | %10s %10s %12s | %10s %10s %12s\n", "mode", "leaked", "NVML", "workspace", "unexplained", "NVML", "workspace", "unexplained")
	fmt.Fprintf(&b, "%-20s %10s | %-36s | %s\n", "", "", "without the leak", "with it")
	for _, r := range rows {
		fmt.Fprintf(&b, "%-20s %10s | %10s %10s %12s | %10s %10s %12s\n", r.mode, fb(r.leaked),
			fb(r.cleanNVML), fb(r.cleanWorkspace), fb(r.cleanUnexpl), fb(r.nvml), fb(r.workspace), fb(r.unexplained))
	}
	t.Logf("1 MiB leaked at each kernel launch while decoding:\n%s", b.String())
}

var leakRuns atomic.Int64

// tableCell returns the cell of row (its first cell) and column in the
// first text table whose title starts with title, "" if there is none.
func tableCell(out, title, row, column string) string {
	// A table wider than the terminal is folded into parts, each titled
	// (the later ones "... (continued)", long titles wrapped) and each
	// with the row names first: the cell is in the part whose header
	// has the column.
	var header []string
	in := false
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, title):
			in, header = true, nil
		case !in:
		case strings.TrimSpace(line) == "":
			in, header = false, nil
		case header == nil && strings.HasPrefix(line, "  "): // the title, wrapped
		default:
			cells := regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(line), -1)
			if header == nil {
				header = cells
				continue
			}
			if i := slices.Index(header, column); cells[0] == row && i >= 0 && i < len(cells) {
				return cells[i]
			}
		}
	}
	return ""
}

var hiddenRuns atomic.Int64

// TestRunCUDAUncharged: a context that makes the driver take device memory
// NVML charges to no process, as an H100 with driver 580 did (5.56 MiB,
// the figure planted here). NVML's figure for the process leaves it out,
// and so does the context measured by NVML on its own: the reconciliation
// leaves nothing unexplained, while the GPU's fall in free memory when the
// context was made exceeds NVML's charge for it by the planted size, and
// the uncharged memory is named beside the reconciliation.
//
// A second run in the same process finds the context made: NVML's figure
// for it, which the baseline adds back, leaves the uncharged memory out,
// so it is not measured, and the record says so rather than give 0.
func TestRunCUDAUncharged(t *testing.T) {
	const uncharged = 5832704
	t.Setenv(fakecuda.EnvUnchargedBytes, strconv.Itoa(uncharged))
	// Its own instance of the fakes (one per run of the test, -count=N):
	// a context made under the setting, after the baseline.
	define := fmt.Sprintf("NVML_UNCHARGED_%d", unchargedRuns.Add(1))
	ms, _ := runWithFakeNVML(t, define)
	for _, m := range ms {
		dm := m.DeviceMemory
		if dm == nil || dm.NVMLNote != "" || dm.ProcessSource != "nvml" || !dm.UnexplainedMeasured {
			t.Fatalf("%s: device memory %+v, want NVML's figures", m.Decode, dm)
		}
		if !dm.FreeGapMeasured || dm.FreeGapBytes != 0 || dm.UnchargedBytes != uncharged || dm.UnexplainedBytes != 0 {
			t.Errorf("%s: free gap %d B (measured %v), uncharged %d B, unexplained %d B; want 0, %d B, 0",
				m.Decode, dm.FreeGapBytes, dm.FreeGapMeasured, dm.UnchargedBytes, dm.UnexplainedBytes, uncharged)
		}
		if got := dm.ContextBytes - dm.ContextProcessBytes; got != uncharged {
			t.Errorf("%s: the context's fall in free memory %d B less NVML's charge for it %d B = %d B, want the uncharged %d B",
				m.Decode, dm.ContextBytes, dm.ContextProcessBytes, got, uncharged)
		}
	}
	ms, _ = runWithFakeNVML(t, define)
	for _, m := range ms {
		dm := m.DeviceMemory
		if dm == nil || dm.UnchargedBytes != 0 || !strings.Contains(dm.UnchargedNote, "before this run's baseline") || dm.UnexplainedBytes != 0 || !dm.UnexplainedMeasured {
			t.Errorf("%s, again in the same process: %+v; want no uncharged figure, a note why, nothing unexplained", m.Decode, dm)
		}
	}
}

var unchargedRuns atomic.Int64

// TestReconcileH100: the reconciliation on a real GPU's figures, kept in
// testdata/gpu (probe decode --preset gpt2-head on an H100, driver 580,
// a run that measured the memory charged to no process). Its context
// measured on its own is NVML's charge for it: the fall in free memory
// when it was made less that uncharged memory. With the ledger in whole
// 2 MiB pages the four modes leave nothing unexplained; with each buffer
// rounded up on its own (as the stand-in driver charged before), they
// would leave 8 and 6 MiB claimed that NVML does not charge.
func TestReconcileH100(t *testing.T) {
	recs, err := schema.ReadDecode("../../testdata/gpu/h100-2026-11-26-bench/bench-big-pinned-true-1.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 {
		t.Fatalf("%d records, want 4 modes", len(recs))
	}
	for _, r := range recs {
		old := r.DeviceMemory
		if old == nil || !old.FreeGapMeasured || old.UnchargedBytes == 0 {
			t.Fatalf("%s: %+v, want a reconciliation that measured the uncharged memory", r.Decode, old)
		}
		var ledger, perBuffer int64
		for _, b := range r.Buffers {
			ledger += b.Bytes
			perBuffer += roundUp(b.Bytes, allocGranularity)
		}
		dm := schema.DeviceMemory{ProcessBytes: old.ProcessBytes, ContextProcessBytes: old.ContextBytes - old.UnchargedBytes,
			HeldBeforeOpenBytes: old.HeldBeforeOpenBytes, StreamHandleBytes: old.StreamHandleBytes,
			LedgerBytes: ledger, AllocRoundingBytes: roundUp(ledger, allocGranularity) - ledger, CuBLASWorkspaceBytes: old.CuBLASWorkspaceBytes}
		if ledger != old.LedgerBytes {
			t.Errorf("%s: buffers %d B, ledger %d B", r.Decode, ledger, old.LedgerBytes)
		}
		if got := remainder(&dm); got != 0 {
			t.Errorf("%s: unexplained %d B with the ledger in whole pages, want 0", r.Decode, got)
		}
		dm.AllocRoundingBytes = perBuffer - ledger
		if got := remainder(&dm); got >= 0 {
			t.Errorf("%s: unexplained %d B with each buffer rounded, want negative (more than NVML charged)", r.Decode, got)
		}
	}
}

// TestRoundUp: the ledger's pages.
func TestRoundUp(t *testing.T) {
	for _, c := range []struct{ n, want int64 }{{0, 0}, {1, 2 << 20}, {2 << 20, 2 << 20}, {2<<20 + 1, 4 << 20}, {154593616, 155189248}} {
		if got := roundUp(c.n, allocGranularity); got != c.want {
			t.Errorf("roundUp(%d, 2 MiB) = %d, want %d", c.n, got, c.want)
		}
	}
}
