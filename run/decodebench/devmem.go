package decodebench

import (
	"errors"
	"fmt"
	"os"
	"time"

	"memprobe/instrument/gpumem"
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

// allocGranularity is the page the driver charges cuMemAlloc's allocations
// in, packed: on an H100 with driver 580 their total rounded up to 2 MiB
// was what NVML charged, for five buffers of 147.4 MiB (148 MiB) and for
// five of 172.2 MiB (174 MiB), not each rounded up (156 and 180 MiB). 2 MiB
// is the minimum granularity cuMemGetAllocationGranularity reports on the
// GPUs CUDA 12 and 13 support; the record carries the figure used.
const allocGranularity = 2 << 20

// gpuWatch is the outside view of the process's GPU memory for one run of
// `probe decode`: NVML, opened once, the GPU's free memory before the
// process made its CUDA context (the baseline the context's cost is
// measured from), and the context measured on its own, before any device.
type gpuWatch struct {
	nvml      *gpumem.NVML // nil when NVML is not available
	note      string       // why not, in one line
	baseFree  uint64       // NVML: the GPU's free memory without this process
	baseTaken bool
	// ctxAtBase: the process already held a context when the baseline
	// was read (an earlier run in this process), so the baseline adds
	// back only what NVML charges it: memory charged to no process stays
	// out of it and cannot be measured.
	ctxAtBase bool
	// The context and module on their own, made by the watch before any
	// device: cuMemGetInfo's free memory then (ctxFree; ctxFreeTaken),
	// and this process's figure (ctxProcess; ctxMeasured, else ctxNote
	// says why not).
	ctxFree      uint64
	ctxFreeTaken bool
	ctxProcess   int64
	ctxSource    string // as DeviceMemory.ProcessSource
	ctxMeasured  bool
	ctxNote      string
	sampler      *gpumem.Sampler
	afterOpen    device.MemoryInfo
	afterNew     device.MemoryInfo
	haveStages   int
}

// newGPUWatch opens NVML, reads the baseline and makes the process's
// context (GPU 0's, the cuda device's) to measure it on its own; on a
// machine without NVML it returns a watch that notes why, with only
// cuMemGetInfo's free memory once the context was made.
func newGPUWatch() *gpuWatch {
	w := &gpuWatch{}
	n, err := gpumem.Open("")
	if err != nil {
		w.note = err.Error()
		w.ctxNote = "not measured: no NVML, so no figure for the process"
		w.openContext()
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
	w.openContext()
	return w
}

// openContext makes the context (a no-op where it exists) and reads, with
// nothing else allocated yet, cuMemGetInfo's free memory and the
// process's figure: NVML's entry, or in a PID namespace (no entry, one
// GPU) the fall in NVML's free memory since the baseline. A failure here
// is only noted: opening the device fails the same way, and says so.
func (w *gpuWatch) openContext() {
	_, free, err := device.OpenCUDAContext(0)
	if err != nil {
		w.ctxNote = "not measured: " + err.Error()
		return
	}
	w.ctxFree, w.ctxFreeTaken = free, true
	if w.nvml == nil {
		return
	}
	p, err := w.nvml.ProcessBytes(os.Getpid())
	switch {
	case err == nil:
		w.ctxProcess, w.ctxSource, w.ctxMeasured = p, "nvml", true
	case errors.Is(err, gpumem.ErrNoProcessEntry) && w.baseTaken:
		if devs, derr := w.nvml.Devices(); derr == nil && len(devs) == 1 {
			w.ctxProcess, w.ctxSource, w.ctxMeasured = int64(w.baseFree)-int64(devs[0].FreeBytes), "gpu_free_delta", true
		} else {
			w.ctxNote = "not measured: " + err.Error()
		}
	default:
		w.ctxNote = "not measured: " + err.Error()
	}
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
	nvmlFree, haveNVMLFree := w.nvmlFree()
	dm := w.stages(now, ledgerBytes)
	if w.nvml == nil {
		dm.NVMLNote = w.note
		return dm
	}
	w.processFigure(dm)
	w.compareContext(dm)
	if dm.ProcessSource != "" && w.baseTaken && haveNVMLFree {
		w.freeGap(dm, now, nvmlFree)
	}
	return dm
}

// nvmlFree is NVML's free memory of the one GPU now, where the watch has
// NVML, its baseline and one GPU.
func (w *gpuWatch) nvmlFree() (uint64, bool) {
	if w.nvml != nil && w.baseTaken {
		if devs, err := w.nvml.Devices(); err == nil && len(devs) == 1 {
			return devs[0].FreeBytes, true
		}
	}
	return 0, false
}

// stages is the reconciliation's parts that CUDA's free memory and the
// ledger give, the end state now: the context, what was held before the
// device opened, its stream and handles, the ledger and its rounding, the
// cuBLAS workspace (measured by the device across its cuBLAS calls), and
// beside them the fall in free memory while decoding outside those calls.
func (w *gpuWatch) stages(now device.MemoryInfo, ledgerBytes int64) *schema.DeviceMemory {
	// The context since this run made it (or found it made): what the
	// device itself recorded when it made it, where the watch could not.
	ctxFree := now.GPU.FreeAfterContextBytes
	if w.ctxFreeTaken {
		ctxFree = w.ctxFree
	}
	dm := &schema.DeviceMemory{
		GPU: now.GPU.Name, TotalBytes: int64(now.GPU.TotalBytes),
		LedgerBytes: ledgerBytes,
		// cuMemGetInfo deltas: each stage allocates only what it names.
		HeldBeforeOpenBytes: int64(ctxFree) - int64(w.afterOpen.FreeBeforeOpenBytes),
		StreamHandleBytes:   int64(w.afterOpen.FreeBeforeOpenBytes) - int64(w.afterOpen.FreeAfterOpenBytes),
		// cuBLAS's lazy workspace and kernels from its own calls, not
		// the fall from the decoder's buffers to the end: that would take
		// whatever else was made while decoding for workspace. The rest
		// of that fall is named beside the sum and left in the remainder.
		CuBLASWorkspaceBytes: now.BLASBytes, CuBLASWorkspaceSource: "cublas_calls",
		DecodingFallBytes: int64(w.afterNew.FreeNowBytes) - int64(now.FreeNowBytes) - now.BLASBytes,
		// Not the fall in free memory while the decoder allocated (that
		// would leave nothing for the remainder to find): the least the
		// driver charges for the ledger, its total in whole pages.
		AllocGranularityBytes: allocGranularity,
		AllocRoundingBytes:    roundUp(ledgerBytes, allocGranularity) - ledgerBytes,
		// Measured on its own before any device, not as a free delta.
		ContextProcessBytes: w.ctxProcess, ContextProcessMeasured: w.ctxMeasured,
		ContextProcessNote: w.ctxNote,
	}
	switch {
	case w.baseTaken:
		dm.ContextBytes = int64(w.baseFree) - int64(ctxFree)
	case w.nvml != nil:
		dm.ContextNote = "not measured: NVML sees more than one GPU, and its numbering need not be CUDA's"
	default:
		dm.ContextNote = "not measured: no NVML, so no figure from before the context"
	}
	return dm
}

// processFigure stops the sampler and puts in dm the process's device
// memory at the end (NVML's, or the GPU's fall in free memory where NVML
// lists the process under no PID it can see), its peak and timeline, and
// why a figure is missing.
func (w *gpuWatch) processFigure(dm *schema.DeviceMemory) {
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
}

// compareContext says whether the context measured on its own compares
// with the process's figure at the end, and where it does, puts the
// remainder in dm.
func (w *gpuWatch) compareContext(dm *schema.DeviceMemory) {
	switch {
	case !w.ctxMeasured:
	case dm.ProcessSource == "":
		dm.ContextProcessNote = "not compared: no figure for the process at the end"
	case dm.ProcessSource != w.ctxSource:
		dm.ContextProcessNote = fmt.Sprintf("not compared: measured as %s, the end as %s", w.ctxSource, dm.ProcessSource)
	default:
		// A remainder: NVML's figure at the end against parts from three
		// other sources (NVML's figure before any device, cuMemGetInfo's
		// falls across the device's opening and cuBLAS's calls, the
		// ledger in whole pages). What the decoder's allocations took
		// beyond the ledger's pages, memory made while decoding outside
		// cuBLAS's calls, or NVML's figure gained without cuMemGetInfo's
		// free memory falling, is left here.
		dm.UnexplainedBytes, dm.UnexplainedMeasured = remainder(dm), true
	}
}

// freeGap puts in dm the gap between CUDA's and NVML's free memory at the
// end, and the memory charged to no process where it can be measured.
func (w *gpuWatch) freeGap(dm *schema.DeviceMemory, now device.MemoryInfo, nvmlFree uint64) {
	dm.FreeGapBytes = int64(now.FreeNowBytes) - int64(nvmlFree)
	dm.FreeGapMeasured = true
	switch {
	case dm.ProcessSource != "nvml":
	case w.ctxAtBase:
		dm.UnchargedNote = "not measured: the context was made before this run's baseline (an earlier run in this process), and the baseline adds back only NVML's charge for it, which leaves out memory charged to no process"
	default:
		// Device memory the driver took for this process but
		// charges to no process: what the GPU's free memory fell
		// by NVML's own count, less NVML's charge. Beside the
		// reconciliation, not in it: the context is NVML's
		// charge for it, which leaves this out as ProcessBytes
		// does.
		dm.UnchargedBytes = int64(w.baseFree) - int64(nvmlFree) - dm.ProcessBytes
	}
}

// remainder is NVML's figure for the process less the parts of the
// reconciliation (schema.DeviceMemory).
func remainder(dm *schema.DeviceMemory) int64 {
	return dm.ProcessBytes - dm.ContextProcessBytes - dm.HeldBeforeOpenBytes - dm.StreamHandleBytes -
		dm.LedgerBytes - dm.AllocRoundingBytes - dm.CuBLASWorkspaceBytes
}

// roundUp rounds n up to a multiple of to.
func roundUp(n, to int64) int64 { return (n + to - 1) / to * to }
