package outside

import (
	"errors"
	"fmt"

	"memprobe/instrument/gpumem"
	"memprobe/schema"
)

// gpuWatch reads the watched process's GPU memory, its GPUs' utilization
// and its own from NVML in the background (a gpumem.Sampler), at
// gpumem.DefaultInterval: a reading costs up to a millisecond, ten times
// what an RSS sample does, so it does not follow Options.Interval.
type gpuWatch struct {
	nvml *gpumem.NVML
	smp  *gpumem.Sampler
}

// watchGPU starts reading pid from NVML. Where NVML cannot be loaded (no
// NVIDIA driver, or a binary without cgo) it returns nil and no warning:
// a machine without a GPU is not a fault. Any other failure to open NVML
// is a warning (returned) and no watch.
func watchGPU(pid int) (*gpuWatch, string) {
	n, err := gpumem.Open("")
	switch {
	case errors.Is(err, gpumem.ErrNoLibrary), errors.Is(err, gpumem.ErrNoCgo):
		return nil, ""
	case err != nil:
		return nil, fmt.Sprintf("GPU: %v: no GPU figures", err)
	}
	return &gpuWatch{nvml: n, smp: n.Sample(pid, gpumem.DefaultInterval)}, ""
}

// stop ends the readings, closes NVML and returns the process's GPU side.
func (g *gpuWatch) stop() *schema.ProcessGPU {
	tl := g.smp.Stop()
	g.nvml.Close()
	out := &schema.ProcessGPU{
		IntervalMs: tl.IntervalSeconds * 1e3, Samples: len(tl.Samples), PeakBytes: tl.PeakBytes,
		MeanUtilPct:    tl.MeanGPUUtilPct,
		NoEntrySamples: tl.NoEntry, NoEntryReason: tl.NoEntryReason, Errors: tl.Errors, FirstError: tl.FirstErr,
		UtilErrors: tl.UtilErrors, UtilFirstError: tl.UtilFirstErr,
		MeanProcessSMUtilPct: tl.MeanProcessSMUtilPct, MeanProcessMemUtilPct: tl.MeanProcessMemUtilPct,
		ProcessUtilNoSampleReadings: tl.ProcessUtilNoSample, ProcessUtilErrors: tl.ProcessUtilErrors,
		ProcessUtilFirstError: tl.ProcessUtilFirstErr,
		Timeline:              make([]schema.GPUSample, len(tl.Samples)),
	}
	for i, s := range tl.Samples {
		out.Timeline[i] = schema.GPUSample{Seconds: s.Seconds, Bytes: s.Bytes, UtilPct: s.GPUUtilPct,
			ProcessSMUtilPct: s.ProcessSMUtilPct, ProcessMemUtilPct: s.ProcessMemUtilPct}
	}
	if n := len(tl.Samples); n > 0 {
		out.FinalBytes = tl.Samples[n-1].Bytes
	}
	return out
}
