package decodebench

import (
	"errors"
	"fmt"
	"os"
	"time"

	"memprobe/probe/gpumem"
	"memprobe/schema"
	"memprobe/trainer/device"
)

// nvmlEvery is the NVML sampling interval: device memory changes only at
// allocations, so 10 ms catches a decode pass's peak at negligible cost.
const nvmlEvery = 10 * time.Millisecond

// gpuMemoryDevice is what the cuda device offers for the reconciliation.
type gpuMemoryDevice interface {
	MemoryInfo() (device.MemoryInfo, error)
}

// gpuWatch is the outside view of the process's GPU memory for one run of
// `probe decode`: NVML, opened once, and the GPU's free memory before the
// process made its CUDA context (the baseline the context's cost is
// measured from).
type gpuWatch struct {
	nvml      *gpumem.NVML // nil when NVML is not available
	note      string       // why not, in one line
	baseFree  uint64       // NVML: the GPU's free memory without this process
	baseTaken bool
	// ctxAtBase: the process already held a context when the baseline
	// was read (an earlier run in this process), so the baseline adds
	// back only what NVML charges it: memory charged to no process stays
	// out of it and cannot be measured.
	ctxAtBase  bool
	sampler    *gpumem.Sampler
	afterOpen  device.MemoryInfo
	afterNew   device.MemoryInfo
	haveStages int
}

// newGPUWatch opens NVML and reads the baseline; on a machine without NVML
// it returns a watch that only notes why.
func newGPUWatch() *gpuWatch {
	w := &gpuWatch{}
	n, err := gpumem.Open("")
	if err != nil {
		w.note = err.Error()
		return w
	}
	w.nvml = n
	// NVML numbers GPUs in PCI order, CUDA fastest first unless
	// CUDA_DEVICE_ORDER=PCI_BUS_ID: the same GPU only on a one-GPU machine
	// (the GPU machines this is run on), so the baseline is taken only there.
	// The baseline is the GPU's free memory as if this process held none
	// of it (it may already hold its context from an earlier run in the
	// same process): free memory, because NVML's total is the physical
	// memory and CUDA's leaves out the driver's reservation, while the two
	// agree on what is free (gpumem.Device).
	if devs, err := n.Devices(); err == nil && len(devs) == 1 {
		own, _ := n.ProcessBytes(os.Getpid()) // 0 with ErrNoProcessEntry: no context yet
		w.baseFree, w.baseTaken, w.ctxAtBase = devs[0].FreeBytes+uint64(own), true, own > 0
	}
	return w
}

func (w *gpuWatch) close() {
	if w != nil && w.nvml != nil {
		w.nvml.Close()
	}
}

// start begins sampling the process's device memory for one mode.
func (w *gpuWatch) start() {
	if w.nvml != nil {
		w.sampler = w.nvml.Sample(os.Getpid(), nvmlEvery)
	}
}

// stage records cuMemGetInfo after the device opened (1) and after the
// decoder allocated its buffers (2).
func (w *gpuWatch) stage(dev device.Device) {
	md, ok := dev.(gpuMemoryDevice)
	if !ok {
		return
	}
	mi, err := md.MemoryInfo()
	if err != nil {
		return
	}
	switch w.haveStages {
	case 0:
		w.afterOpen = mi
	case 1:
		w.afterNew = mi
	}
	w.haveStages++
}

// finish reads the end state with the device still open, stops the
// sampler and reconciles: the process's device memory (NVML) against what
// the cuda device can name.
func (w *gpuWatch) finish(dev device.Device, ledgerBytes int64) *schema.DeviceMemory {
	md, ok := dev.(gpuMemoryDevice)
	if !ok || w.haveStages < 2 {
		if w.sampler != nil {
			w.sampler.Stop()
			w.sampler = nil
		}
		return nil
	}
	w.haveStages = 0
	now, err := md.MemoryInfo()
	if err != nil {
		return nil
	}
	// NVML's free memory at the same moment as cuMemGetInfo's: the
	// baseline above is NVML's, the parts below are CUDA's, and the two
	// are compared only through this pair (free_gap_bytes).
	var nvmlFree uint64
	haveNVMLFree := false
	if w.nvml != nil && w.baseTaken {
		if devs, err := w.nvml.Devices(); err == nil && len(devs) == 1 {
			nvmlFree, haveNVMLFree = devs[0].FreeBytes, true
		}
	}
	dm := &schema.DeviceMemory{
		GPU: now.GPU.Name, TotalBytes: int64(now.GPU.TotalBytes),
		LedgerBytes: ledgerBytes,
		// cuMemGetInfo deltas: each stage allocates only what it names.
		HeldBeforeOpenBytes:  int64(now.GPU.FreeAfterContextBytes) - int64(w.afterOpen.FreeBeforeOpenBytes),
		StreamHandleBytes:    int64(w.afterOpen.FreeBeforeOpenBytes) - int64(w.afterOpen.FreeAfterOpenBytes),
		AllocRoundingBytes:   int64(w.afterOpen.FreeNowBytes) - int64(w.afterNew.FreeNowBytes) - ledgerBytes,
		CuBLASWorkspaceBytes: int64(w.afterNew.FreeNowBytes) - int64(now.FreeNowBytes),
	}
	switch {
	case w.baseTaken:
		dm.ContextBytes = int64(w.baseFree) - int64(now.GPU.FreeAfterContextBytes)
	case w.nvml != nil:
		dm.ContextNote = "not measured: NVML sees more than one GPU, and its numbering need not be CUDA's"
	default:
		dm.ContextNote = "not measured: no NVML, so no figure from before the context"
	}
	if w.nvml == nil {
		dm.NVMLNote = w.note
		return dm
	}
	tl := w.sampler.Stop()
	w.sampler = nil
	p, err := w.nvml.ProcessBytes(os.Getpid())
	switch {
	case err == nil:
		dm.ProcessBytes, dm.ProcessSource = p, "nvml"
	case errors.Is(err, gpumem.ErrNoProcessEntry) && w.baseTaken:
		// The process holds a context, so NVML lists it under a PID this
		// process cannot see (a container's own PID namespace: NVML
		// lists host PIDs), or not at all. On the one GPU, the fall of
		// its free memory since the baseline is this process's figure as
		// long as no other process changed its use meanwhile: said so.
		if devs, derr := w.nvml.Devices(); derr == nil && len(devs) == 1 {
			dm.ProcessBytes, dm.ProcessSource = int64(w.baseFree)-int64(devs[0].FreeBytes), "gpu_free_delta"
			dm.NVMLNote = fmt.Sprintf("%v; process_bytes is the GPU's free memory before this process's context less now (no other process is assumed to have changed its use); no peak", err)
		} else {
			dm.NVMLNote = err.Error()
		}
	default:
		dm.NVMLNote = err.Error()
	}
	dm.ProcessPeakBytes, dm.NVMLSamples = tl.PeakBytes, len(tl.Samples)
	for _, x := range tl.Samples {
		dm.NVMLTimeline = append(dm.NVMLTimeline, schema.DeviceSample{Seconds: x.Seconds, Bytes: x.Bytes})
	}
	switch {
	case dm.NVMLNote != "":
	case !tl.Available() && tl.NoEntryReason != "":
		dm.NVMLNote = tl.NoEntryReason
	case tl.FirstErr != "":
		dm.NVMLNote = tl.FirstErr
	}
	if dm.ProcessSource != "" && w.baseTaken {
		dm.UnexplainedBytes = dm.ProcessBytes - dm.ContextBytes - dm.HeldBeforeOpenBytes - dm.StreamHandleBytes -
			dm.LedgerBytes - dm.AllocRoundingBytes - dm.CuBLASWorkspaceBytes
		if haveNVMLFree {
			dm.FreeGapBytes = int64(now.FreeNowBytes) - int64(nvmlFree)
			dm.FreeGapMeasured = true
			switch {
			case dm.ProcessSource != "nvml":
			case w.ctxAtBase:
				dm.UnchargedNote = "not measured: the context was made before this run's baseline (an earlier run in this process), and NVML's figure for it leaves out memory it charges to no process, so the context may be understated by that much"
			default:
				// The parts are falls in free memory, which count device
				// memory the driver took for this process's context but
				// charges to no process; NVML's figure does not. What the
				// GPU's free memory fell by NVML's own count, less NVML's
				// charge, is that memory: taken out of the parts' sum, the
				// rest left unexplained is the gap between the two free
				// figures, which should be nothing.
				dm.UnchargedBytes = int64(w.baseFree) - int64(nvmlFree) - dm.ProcessBytes
				dm.UnexplainedBytes += dm.UnchargedBytes
			}
		}
	}
	return dm
}
