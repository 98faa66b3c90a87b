package decodebench

import (
	"fmt"
	"io"
	"os"
	"time"

	"memprobe/internal/table"
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
// `probe decode`: NVML, opened once, and the GPU's used memory before the
// process made its CUDA context (the baseline the context's cost is
// measured from).
type gpuWatch struct {
	nvml       *gpumem.NVML // nil when NVML is not available
	note       string       // why not, in one line
	baseUsed   uint64       // NVML: GPU memory in use before our context
	baseTaken  bool
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
	// The baseline is the GPU's use by everything but this process (the
	// driver's reservation, other processes): this process may already
	// hold its context from an earlier run in the same process, and
	// ContextBytes compares against the free memory recorded when the
	// context was made.
	if devs, err := n.Devices(); err == nil && len(devs) == 1 {
		own, _ := n.ProcessBytes(os.Getpid()) // 0 with ErrNoProcessEntry: no context yet
		w.baseUsed, w.baseTaken = devs[0].UsedBytes-uint64(own), true
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
	dm := &schema.DeviceMemory{
		GPU: now.GPU.Name, TotalBytes: int64(now.GPU.TotalBytes),
		LedgerBytes: ledgerBytes,
		// cuMemGetInfo deltas: each stage allocates only what it names.
		StreamHandleBytes:    int64(now.GPU.FreeAfterContextBytes) - int64(w.afterOpen.FreeAfterOpenBytes),
		AllocRoundingBytes:   int64(w.afterOpen.FreeNowBytes) - int64(w.afterNew.FreeNowBytes) - ledgerBytes,
		CuBLASWorkspaceBytes: int64(w.afterNew.FreeNowBytes) - int64(now.FreeNowBytes),
	}
	if w.baseTaken {
		dm.ContextBytes = int64(now.GPU.TotalBytes-now.GPU.FreeAfterContextBytes) - int64(w.baseUsed)
	} else if w.nvml != nil {
		dm.ContextNote = "not measured: NVML sees more than one GPU, and its numbering need not be CUDA's"
	}
	if w.nvml == nil {
		dm.NVMLNote = w.note
		return dm
	}
	if p, err := w.nvml.ProcessBytes(os.Getpid()); err == nil {
		dm.ProcessBytes = p
	} else {
		dm.NVMLNote = err.Error()
	}
	tl := w.sampler.Stop()
	w.sampler = nil
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
	if dm.ProcessBytes > 0 && w.baseTaken {
		dm.UnexplainedBytes = dm.ProcessBytes - dm.ContextBytes - dm.StreamHandleBytes - dm.LedgerBytes - dm.AllocRoundingBytes - dm.CuBLASWorkspaceBytes
	}
	return dm
}

// WriteDeviceMemory prints the reconciliation of each mode's device memory
// (cuda only; nothing for a device without one).
func WriteDeviceMemory(w io.Writer, ms []Measurement, f table.Format) error {
	var rows []Measurement
	for _, m := range ms {
		if m.DeviceMemory != nil {
			rows = append(rows, m)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	dm0 := rows[0].DeviceMemory
	title := fmt.Sprintf("device memory on %s (%s): NVML's figure for this process against what the device names", dm0.GPU, table.FormatBytesShort(dm0.TotalBytes))
	if dm0.NVMLNote != "" {
		title += "; NVML: " + dm0.NVMLNote
	}
	t := table.New(title,
		table.Column{Name: "mode"},
		table.Column{Name: "NVML peak", Kind: table.Bytes},
		table.Column{Name: "NVML at end", Kind: table.Bytes},
		table.Column{Name: "context+module", Kind: table.Bytes},
		table.Column{Name: "stream+cuBLAS handle", Kind: table.Bytes},
		table.Column{Name: "ledger", Kind: table.Bytes},
		table.Column{Name: "alloc rounding", Kind: table.Bytes},
		table.Column{Name: "cuBLAS workspace", Kind: table.Bytes},
		table.Column{Name: "unexplained", Kind: table.Bytes},
	)
	for _, m := range rows {
		d := m.DeviceMemory
		// Without NVML there is no process figure, no baseline for the
		// context and so no remainder: blank, not 0.
		var peak, end, ctx, unexplained any
		if d.NVMLNote == "" {
			peak, end = d.ProcessPeakBytes, d.ProcessBytes
			if d.ContextNote == "" {
				ctx, unexplained = d.ContextBytes, d.UnexplainedBytes
			}
		}
		t.Add(m.Mode, peak, end, ctx, d.StreamHandleBytes, d.LedgerBytes,
			d.AllocRoundingBytes, d.CuBLASWorkspaceBytes, unexplained)
	}
	return t.Render(w, f)
}
