package outside

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"memprobe/internal/fakenvml"
	"memprobe/internal/table"
	"memprobe/report/process"
	"memprobe/schema"
)

// TestExecGPUProcessUtilization: exec on the stand-in NVML, on a GPU that
// another process keeps busy. The program blocks on its standard input
// while the test, knowing its pid, lists it with 3 MiB on GPU 0 and puts
// one NVML sample of its own (12 % SM, 4 % memory) and one of another
// pid's (85 %) in the driver's buffer, stamped after the watch began; the
// device-wide figure is 90 %. Whatever the readings' timing, the one that
// reads those samples (at the latest the last, at Stop) carries them, and
// no other: the result's per-process mean is 12 %, the other pid's
// sample is not counted, and the diagnosis speaks of the process's own
// kernels on a shared GPU.
func TestExecGPUProcessUtilization(t *testing.T) {
	fakenvml.Use(t, "OUTSIDE_EXEC_PROC_UTIL")
	dir := t.TempDir()
	procs, util, procUtil := filepath.Join(dir, "procs"), filepath.Join(dir, "util"), filepath.Join(dir, "procutil")
	for _, k := range fakenvml.Envs {
		t.Setenv(k, "")
	}
	t.Setenv(fakenvml.EnvProcBytesFile, procs)
	t.Setenv(fakenvml.EnvUtilFile, util)
	t.Setenv(fakenvml.EnvProcUtilFile, procUtil)
	if err := fakenvml.WriteUtil(util, fakenvml.Util{GPU: 0, GPUPct: 90, MemPct: 50}); err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	s, err := Exec(ExecOptions{Args: []string{"/bin/sh", "-c", "read x"}, Stdin: inR, Stdout: io.Discard, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer inW.Close()
	// After Exec returned, so after the watch's start (the fake's stamps
	// are the test's choice, NVML's are CPU time in microseconds).
	ts := uint64(time.Now().UnixMicro())
	const other = 7
	if err := fakenvml.WriteProcUtil(procUtil,
		fakenvml.ProcUtil{GPU: 0, PID: s.pid, TimeStampUs: ts, SMPct: 12, MemPct: 4},
		fakenvml.ProcUtil{GPU: 0, PID: other, TimeStampUs: ts, SMPct: 85, MemPct: 60}); err != nil {
		t.Fatal(err)
	}
	if err := fakenvml.WriteProcs(procs, fakenvml.Proc{PID: s.pid, Bytes: 3 << 20}, fakenvml.Proc{PID: other, Bytes: 1 << 30}); err != nil {
		t.Fatal(err)
	}
	inW.Close()
	r, err := waitDiagnosed(s, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	g := r.Process.GPU
	if g == nil {
		t.Fatalf("no GPU section with NVML there; warnings %v", r.Warnings)
	}
	if g.PeakBytes != 3<<20 || g.MeanUtilPct == nil || *g.MeanUtilPct != 90 || g.Errors != 0 || g.UtilErrors != 0 {
		t.Errorf("GPU section %+v; want 3 MiB, 90 %% device-wide, no errors", g)
	}
	if g.MeanProcessSMUtilPct == nil || *g.MeanProcessSMUtilPct != 12 || g.MeanProcessMemUtilPct == nil || *g.MeanProcessMemUtilPct != 4 ||
		g.ProcessUtilErrors != 0 || g.ProcessUtilFirstError != "" {
		t.Errorf("per process: SM %v, memory %v, errors %d (%q); want 12, 4, none", g.MeanProcessSMUtilPct, g.MeanProcessMemUtilPct, g.ProcessUtilErrors, g.ProcessUtilFirstError)
	}
	with := 0
	for _, smp := range g.Timeline {
		if smp.ProcessSMUtilPct != nil {
			with++
			if *smp.ProcessSMUtilPct != 12 || smp.ProcessMemUtilPct == nil || *smp.ProcessMemUtilPct != 4 {
				t.Errorf("reading %+v; want SM 12 %%, memory 4 %%", smp)
			}
		}
	}
	if with != 1 || g.ProcessUtilNoSampleReadings != g.Samples-1 {
		t.Errorf("%d readings with the process's figure, %d without a new NVML sample, of %d; want 1 and the rest", with, g.ProcessUtilNoSampleReadings, g.Samples)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"mean_process_sm_util_pct":12,`, `"mean_process_mem_util_pct":4,`, `"process_sm_util_pct":12,`, `"process_util_errors":0`, `"mean_util_pct":90,`} {
		if !bytes.Contains(b, []byte(key)) {
			t.Errorf("result JSON lacks %s", key)
		}
	}
	var f *schema.Finding
	for i, d := range r.Process.Diagnosis {
		if d.Metric == "process_sm_util_pct" {
			f = &r.Process.Diagnosis[i]
		}
		if d.Metric == "gpu_util_pct" {
			t.Errorf("a device-wide finding beside the process's own: %q", d.Text)
		}
	}
	if f == nil || f.Value != 12 || !strings.Contains(f.Text, "its own kernels") || !strings.Contains(f.Text, "share the GPU") {
		t.Errorf("utilization finding %+v; want the process's own 12 %% on a shared GPU (diagnosis %+v)", f, r.Process.Diagnosis)
	}
	var out bytes.Buffer
	if err := process.Render(&out, r, table.Text); err != nil {
		t.Fatal(err)
	}
	if want := "the process's own utilization (NVML's per-process samples): SM 12.0 %, memory 4.0 %"; !strings.Contains(out.String(), want) {
		t.Errorf("report lacks %q:\n%s", want, out.String())
	}
}
