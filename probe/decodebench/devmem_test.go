package decodebench

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"memprobe/internal/fakecuda"
)

// TestRunCUDAUncharged: a context that makes the driver take device memory
// NVML charges to no process, as an H100 with driver 580 did (5.56 MiB,
// the figure used here). The parts, measured as falls in free memory,
// include it and NVML's figure for the process does not; measured from
// NVML's free memory read beside CUDA's, it is named (uncharged_bytes),
// taken off the parts' sum, and nothing is left unexplained: the two free
// figures agree (free_gap_bytes 0).
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
	ms := runWithFakeNVML(t, define)
	for _, m := range ms {
		dm := m.DeviceMemory
		if dm == nil || dm.NVMLNote != "" || dm.ProcessSource != "nvml" {
			t.Fatalf("%s: device memory %+v, want NVML's figures", m.Mode, dm)
		}
		if !dm.FreeGapMeasured || dm.FreeGapBytes != 0 || dm.UnchargedBytes != uncharged || dm.UnexplainedBytes != 0 {
			t.Errorf("%s: free gap %d B (measured %v), uncharged %d B, unexplained %d B; want 0, %d B, 0",
				m.Mode, dm.FreeGapBytes, dm.FreeGapMeasured, dm.UnchargedBytes, dm.UnexplainedBytes, uncharged)
		}
		if ctx := int64(fakecuda.ContextBytes + fakecuda.ModuleBytes + uncharged); dm.ContextBytes != ctx {
			t.Errorf("%s: context and module %d B, want the fake's %d B with the uncharged memory", m.Mode, dm.ContextBytes, ctx)
		}
		parts := dm.ContextBytes + dm.HeldBeforeOpenBytes + dm.StreamHandleBytes + dm.LedgerBytes + dm.AllocRoundingBytes + dm.CuBLASWorkspaceBytes
		if got := parts - dm.UnchargedBytes + dm.UnexplainedBytes; got != dm.ProcessBytes {
			t.Errorf("%s: parts %d B less uncharged %d B plus unexplained %d B = %d B, want NVML's %d B",
				m.Mode, parts, dm.UnchargedBytes, dm.UnexplainedBytes, got, dm.ProcessBytes)
		}
	}
	for _, m := range runWithFakeNVML(t, define) {
		dm := m.DeviceMemory
		if dm == nil || dm.UnchargedBytes != 0 || !strings.Contains(dm.UnchargedNote, "before this run's baseline") || dm.UnexplainedBytes != 0 {
			t.Errorf("%s, again in the same process: %+v; want no uncharged figure, a note why, nothing unexplained", m.Mode, dm)
		}
	}
}

var unchargedRuns atomic.Int64
