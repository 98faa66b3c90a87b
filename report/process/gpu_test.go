package process

import (
	"bytes"
	"strings"
	"testing"

	"memprobe/schema"
)

func pctp(v float64) *float64 { return &v }

// gpuFinding is the diagnosis's utilization finding of g (nil if none).
func gpuFinding(g *schema.ProcessGPU) *schema.Finding {
	var out []schema.Finding
	diagnoseGPU(g, func(topic, metric string, value float64, format string, args ...any) {
		if metric != "gpu_peak_bytes" {
			out = append(out, schema.Finding{Topic: topic, Metric: metric, Value: value, Text: fmtArgs(format, args...)})
		}
	})
	if len(out) > 1 {
		panic("more than one utilization finding")
	}
	if len(out) == 0 {
		return nil
	}
	return &out[0]
}

func fmtArgs(format string, args ...any) string {
	var b strings.Builder
	e := &errWriter{w: &b}
	e.printf(format, args...)
	return b.String()
}

// TestDiagnoseGPU: the utilization finding prefers the process's own SM
// utilization where NVML gave it, and tells a process that leaves its GPU
// idle (the host) from one whose GPU is kept busy by others (a shared
// GPU); without it, the device-wide figure is used and named as such.
func TestDiagnoseGPU(t *testing.T) {
	for _, tc := range []struct {
		name        string
		device, own *float64
		metric      string // "": no finding
		value       float64
		has, hasnt  []string
	}{
		{name: "neither"},
		{name: "device-wide only, idle", device: pctp(12.5), metric: "gpu_util_pct", value: 12.5,
			has: []string{"busy 12 %", "device-wide", "waits on the host"}, hasnt: []string{"own"}},
		{name: "device-wide only, busy", device: pctp(75), metric: "gpu_util_pct", value: 75,
			has: []string{"busy 75 %", "device-wide"}, hasnt: []string{"waits"}},
		{name: "own busy", device: pctp(90), own: pctp(80), metric: "process_sm_util_pct", value: 80,
			has: []string{"its own kernels kept the GPUs it used busy 80 %", "per-process", "as a whole, every process's kernels: 90 %"}, hasnt: []string{"waits"}},
		{name: "own idle on an idle GPU", device: pctp(15), own: pctp(10), metric: "process_sm_util_pct", value: 10,
			has: []string{"its own kernels", "busy 10 %", "waits on the host", "15 %"}},
		{name: "own idle on a busy GPU: shared", device: pctp(90), own: pctp(12), metric: "process_sm_util_pct", value: 12,
			has: []string{"its own kernels", "busy 12 %", "as a whole were busy 90 %", "other processes' kernels share the GPU"}, hasnt: []string{"waits on the host"}},
		{name: "own without device-wide (MIG has neither, an old product one)", own: pctp(5), metric: "process_sm_util_pct", value: 5,
			has: []string{"busy 5 %", "waits on the host"}, hasnt: []string{"as a whole"}},
		// Alone on its GPU, busy in bursts: NVML has samples of its bursts
		// only, so its own mean (80 %) exceeds the device's (16 %), which
		// is the honest figure.
		{name: "own above device-wide: bursts only", device: pctp(16), own: pctp(80), metric: "gpu_util_pct", value: 16,
			has: []string{"busy 16 %", "device-wide", "its own kernels' 80 % is a mean over the readings in which NVML had a sample of it", "waits on the host"}},
		{name: "own above device-wide, GPU busy", device: pctp(50), own: pctp(90), metric: "gpu_util_pct", value: 50,
			has: []string{"busy 50 %", "its bursts only"}, hasnt: []string{"waits"}},
		{name: "own a little above device-wide: rounding", device: pctp(40), own: pctp(43), metric: "process_sm_util_pct", value: 43},
	} {
		f := gpuFinding(&schema.ProcessGPU{Samples: 3, MeanUtilPct: tc.device, MeanProcessSMUtilPct: tc.own})
		if tc.metric == "" {
			if f != nil {
				t.Errorf("%s: finding %+v, want none", tc.name, f)
			}
			continue
		}
		if f == nil || f.Metric != tc.metric || f.Value != tc.value || f.Topic != "gpu" {
			t.Errorf("%s: finding %+v; want gpu %s = %g", tc.name, f, tc.metric, tc.value)
			continue
		}
		for _, s := range tc.has {
			if !strings.Contains(f.Text, s) {
				t.Errorf("%s: %q lacks %q", tc.name, f.Text, s)
			}
		}
		for _, s := range tc.hasnt {
			if strings.Contains(f.Text, s) {
				t.Errorf("%s: %q says %q", tc.name, f.Text, s)
			}
		}
	}
}

// TestRenderGPU: the exec report's GPU section names the process's own
// utilization, or why there is none.
func TestRenderGPU(t *testing.T) {
	for _, tc := range []struct {
		name string
		g    schema.ProcessGPU
		want string // a line of the section; "" for none about the process's own
	}{
		{"own", schema.ProcessGPU{MeanUtilPct: pctp(90), MeanProcessSMUtilPct: pctp(12), MeanProcessMemUtilPct: pctp(4.25), ProcessUtilNoSampleReadings: 3},
			"the process's own utilization (NVML's per-process samples): SM 12.0 %, memory 4.2 %, mean over the readings with a new NVML sample (3 had none)"},
		{"not supported", schema.ProcessGPU{ProcessUtilErrors: 4, ProcessUtilFirstError: "nvmlDeviceGetProcessUtilization(GPU 0): Not Supported"},
			"the process's own utilization: not reported (nvmlDeviceGetProcessUtilization(GPU 0): Not Supported)"},
		{"no sample", schema.ProcessGPU{ProcessUtilNoSampleReadings: 5},
			"the process's own utilization: NVML recorded no sample in 5 readings (no process busy on its GPUs, or a run shorter than NVML's period)"},
		{"nothing", schema.ProcessGPU{}, ""},
	} {
		tc.g.Samples, tc.g.IntervalMs = 5, 100
		var b bytes.Buffer
		e := &errWriter{w: &b}
		renderGPU(e, &tc.g)
		if e.err != nil {
			t.Fatal(e.err)
		}
		got := ""
		for _, line := range strings.Split(b.String(), "\n") {
			if strings.Contains(line, "own utilization") {
				got = line
			}
		}
		if got != tc.want {
			t.Errorf("%s: line\n%q, want\n%q\nin\n%s", tc.name, got, tc.want, b.String())
		}
	}
}
