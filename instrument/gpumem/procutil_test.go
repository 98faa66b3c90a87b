//go:build cgo

package gpumem

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"memprobe/internal/fakenvml"
)

// writeProcUtil replaces the fake's per-process utilization file whole.
func writeProcUtil(t *testing.T, path string, samples ...fakenvml.ProcUtil) {
	t.Helper()
	if err := fakenvml.WriteProcUtil(path, samples...); err != nil {
		t.Fatal(err)
	}
}

// TestProcessUtilizationSampleLayout: the Go struct is nvml.h's
// nvmlProcessUtilizationSample_t on LP64 (the compile-time check in
// nvml_cgo.go covers the size and timeStamp; this names every field).
func TestProcessUtilizationSampleLayout(t *testing.T) {
	var s nvmlProcessUtilizationSample
	for _, f := range []struct {
		name      string
		got, want uintptr
	}{
		{"pid", unsafe.Offsetof(s.pid), 0},
		{"timeStamp", unsafe.Offsetof(s.timeStamp), 8},
		{"smUtil", unsafe.Offsetof(s.smUtil), 16},
		{"memUtil", unsafe.Offsetof(s.memUtil), 20},
		{"encUtil", unsafe.Offsetof(s.encUtil), 24},
		{"decUtil", unsafe.Offsetof(s.decUtil), 28},
		{"size", unsafe.Sizeof(s), 32},
	} {
		if f.got != f.want {
			t.Errorf("%s at %d, want %d", f.name, f.got, f.want)
		}
	}
}

// TestProcessUtilization reads the fake's sample buffer through the
// binding: only the samples stamped after since, the pid's averaged and
// the others' only counted, LastSeen the newest stamp; no new sample is
// no error and no figure; a buffer larger than any before is grown to.
func TestProcessUtilization(t *testing.T) {
	const pid, other = 4242, 7
	file := filepath.Join(t.TempDir(), "procutil")
	n := openFake(t, env{devices: "2", procUtilFile: file})

	// No file: the driver has no sample, NVML_ERROR_NOT_FOUND.
	if u, err := n.ProcessUtilization(0, pid, 0); err != nil || u.Known() || u != (ProcessUtil{}) {
		t.Errorf("no samples: %+v, %v; want nothing known, no error", u, err)
	}
	samples := []fakenvml.ProcUtil{
		{GPU: 0, PID: pid, TimeStampUs: 100, SMPct: 50, MemPct: 10},
		{GPU: 0, PID: other, TimeStampUs: 100, SMPct: 90, MemPct: 40},
		{GPU: 1, PID: pid, TimeStampUs: 150, SMPct: 5, MemPct: 1},
		{GPU: 0, PID: pid, TimeStampUs: 200, SMPct: 70, MemPct: 30},
	}
	writeProcUtil(t, file, samples...)
	check := func(what string, gpu, pid int, since uint64, want ProcessUtil) {
		t.Helper()
		if u, err := n.ProcessUtilization(gpu, pid, since); err != nil || u != want {
			t.Errorf("%s: ProcessUtilization(%d, %d, %d) = %+v, %v; want %+v", what, gpu, pid, since, u, err, want)
		}
	}
	check("all of GPU 0", 0, pid, 0, ProcessUtil{Samples: 2, Others: 1, SMPct: 60, MemPct: 20, LastSeen: 200})
	check("GPU 1", 1, pid, 0, ProcessUtil{Samples: 1, SMPct: 5, MemPct: 1, LastSeen: 150})
	check("the other pid's view", 0, other, 0, ProcessUtil{Samples: 1, Others: 2, SMPct: 90, MemPct: 40, LastSeen: 200})
	check("since 100", 0, pid, 100, ProcessUtil{Samples: 1, SMPct: 70, MemPct: 30, LastSeen: 200})
	check("nothing new", 0, pid, 200, ProcessUtil{LastSeen: 200})
	check("nothing new on GPU 1", 1, pid, 150, ProcessUtil{LastSeen: 150})

	// The driver takes a period in which only the other process ran: the
	// pid's figure is known, and 0.
	samples = append(samples, fakenvml.ProcUtil{GPU: 0, PID: other, TimeStampUs: 300, SMPct: 80})
	writeProcUtil(t, file, samples...)
	u, err := n.ProcessUtilization(0, pid, 200)
	if err != nil || !u.Known() || u.Samples != 0 || u.SMPct != 0 || u.LastSeen != 300 {
		t.Errorf("others only: %+v, %v; want known, 0 %%, LastSeen 300", u, err)
	}

	// More samples than the buffer has held: it grows, and the figure is
	// every sample's.
	var many []fakenvml.ProcUtil
	for i := range 100 {
		many = append(many, fakenvml.ProcUtil{GPU: 0, PID: pid, TimeStampUs: uint64(1000 + i), SMPct: i % 2 * 100})
	}
	writeProcUtil(t, file, many...)
	check("100 samples", 0, pid, 0, ProcessUtil{Samples: 100, SMPct: 50, LastSeen: 1099})
	if allocs := testing.AllocsPerRun(100, func() { n.ProcessUtilization(0, pid, 0) }); allocs != 0 {
		t.Errorf("ProcessUtilization allocates %v times per call, want 0", allocs)
	}

	for _, i := range []int{-1, 2} {
		if _, err := n.ProcessUtilization(i, pid, 0); err == nil || errors.Is(err, ErrProcessUtilizationNotSupported) || !strings.Contains(err.Error(), "out of range") {
			t.Errorf("ProcessUtilization(%d): %v; want an out-of-range error", i, err)
		}
	}
	if _, err := n.ProcessUtilization(0, 0, 0); err == nil {
		t.Error("ProcessUtilization of pid 0 succeeded")
	}
}

// TestProcessUtilizationErrors: NVML_ERROR_NOT_SUPPORTED (a MIG
// instance) wraps ErrProcessUtilizationNotSupported and names the call,
// the GPU and the library's string; any other code is a plain error; after
// Close, a "closed" error. Each case opens the fake anew (the code is
// read at init).
func TestProcessUtilizationErrors(t *testing.T) {
	for _, tc := range []struct {
		code, text  string
		unsupported bool
	}{
		{"3", "Not Supported (fakenvml)", true},
		{"999", "Unknown Error (fakenvml)", false},
	} {
		n, err := openFakeErr(t, env{procUtilErr: tc.code})
		if err != nil {
			t.Fatal(err)
		}
		u, err := n.ProcessUtilization(0, os.Getpid(), 42)
		if err == nil || errors.Is(err, ErrProcessUtilizationNotSupported) != tc.unsupported || errors.Is(err, ErrUtilizationNotSupported) ||
			!strings.Contains(err.Error(), "nvmlDeviceGetProcessUtilization(GPU 0)") || !strings.Contains(err.Error(), tc.text) || u.LastSeen != 42 || u.Known() {
			t.Errorf("code %s: %+v, %v; want an error naming the call, GPU 0 and %q, not-supported %v, LastSeen kept", tc.code, u, err, tc.text, tc.unsupported)
		}
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := n.ProcessUtilization(0, os.Getpid(), 0); err == nil || !strings.Contains(err.Error(), "closed") {
			t.Errorf("after Close: %v, want a 'closed' error", err)
		}
	}
}

// TestProcessUtilizationMissingSymbol opens a library without
// nvmlDeviceGetProcessUtilization: it opens, memory and device-wide
// utilization are read as ever, ProcessUtilization names the missing
// symbol, and a Sampler's samples carry no per-process figure, each
// counted in ProcessUtilErrors and in nothing else.
func TestProcessUtilizationMissingSymbol(t *testing.T) {
	if fakeLib == "" {
		t.Skip(fakeSkip)
	}
	lib, err := fakenvml.Build(fakenvml.OmitProcessUtilization)
	if err != nil {
		t.Fatal(err)
	}
	pid := os.Getpid()
	dir := t.TempDir()
	procs, util, procUtil := filepath.Join(dir, "procs"), filepath.Join(dir, "util"), filepath.Join(dir, "procutil")
	writeProcs(t, procs, fmt.Sprintf("%d 100 0\n", pid))
	writeProcs(t, util, "0 50 50\n")
	writeProcUtil(t, procUtil, fakenvml.ProcUtil{GPU: 0, PID: pid, TimeStampUs: ^uint64(0) >> 1, SMPct: 40})
	n := openFake(t, env{lib: lib, procFile: procs, utilFile: util, procUtilFile: procUtil})

	if b, err := n.ProcessBytes(pid); b != 100 || err != nil {
		t.Errorf("ProcessBytes = %d, %v; want 100, nil", b, err)
	}
	if g, _, err := n.Utilization(0); g != 50 || err != nil {
		t.Errorf("Utilization(0) = %d, %v; want 50, nil", g, err)
	}
	_, err = n.ProcessUtilization(0, pid, 0)
	if !errors.Is(err, ErrProcessUtilizationNotSupported) || !strings.Contains(err.Error(), "lacks nvmlDeviceGetProcessUtilization") || !strings.Contains(err.Error(), lib) {
		t.Errorf("ProcessUtilization: %v; want ErrProcessUtilizationNotSupported saying %s lacks nvmlDeviceGetProcessUtilization", err, lib)
	}

	tl := n.Sample(pid, time.Hour).Stop()
	if len(tl.Samples) != 2 || tl.Errors != 0 || tl.UtilErrors != 0 || tl.MeanGPUUtilPct == nil || *tl.MeanGPUUtilPct != 50 {
		t.Errorf("timeline %+v; want 2 samples at 50 %% device-wide, no errors", tl)
	}
	for i, smp := range tl.Samples {
		if smp.ProcessSMUtilPct != nil || smp.ProcessMemUtilPct != nil {
			t.Errorf("sample %d has a per-process figure %v, %v; want none", i, smp.ProcessSMUtilPct, smp.ProcessMemUtilPct)
		}
	}
	if tl.MeanProcessSMUtilPct != nil || tl.MeanProcessMemUtilPct != nil || tl.ProcessUtilErrors != 2 || tl.ProcessUtilNoSample != 0 || tl.ProcessUtilFirstErr != err.Error() {
		t.Errorf("mean %v/%v, errors %d (%q), no-sample %d; want no mean, 2 errors, the first %q, no no-sample",
			tl.MeanProcessSMUtilPct, tl.MeanProcessMemUtilPct, tl.ProcessUtilErrors, tl.ProcessUtilFirstErr, tl.ProcessUtilNoSample, err)
	}
}

// lastSample is the newest sample of a stopped sampler that the test
// drives by calling read.
func lastSample(t *testing.T, s *Sampler) Sample {
	t.Helper()
	if len(s.tl.Samples) == 0 {
		t.Fatal("no sample")
	}
	return s.tl.Samples[len(s.tl.Samples)-1]
}

// pctIs reports whether p is v (nil when v < 0).
func pctIs(p *float64, v float64) bool {
	if v < 0 {
		return p == nil
	}
	return p != nil && *p == v
}

func fmtPct(p *float64) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

// TestSamplerProcessUtilizationSteps drives a Sampler's readings one at a
// time (read, after Stop, as TestSamplerReadAllocs does), so that every
// reading's figure is known: samples stamped before the Sampler started
// are not the watch's; each reading sees only the samples after the
// newest its GPU gave before (lastSeenTimeStamp, per GPU); other pids'
// samples are ignored, and with none of the pid's make it 0; no new sample
// is no figure (counted apart), never 0; a GPU the process holds no memory
// on is not asked; two GPUs' figures are averaged.
func TestSamplerProcessUtilizationSteps(t *testing.T) {
	pid := os.Getpid()
	const other = 7
	dir := t.TempDir()
	procs, procUtil := filepath.Join(dir, "procs"), filepath.Join(dir, "procutil")
	n := openFake(t, env{devices: "2", procFile: procs, procUtilFile: procUtil})

	// A busy period of the pid's from before the watch.
	writeProcUtil(t, procUtil, fakenvml.ProcUtil{GPU: 0, PID: pid, TimeStampUs: 1, SMPct: 99, MemPct: 99})
	s := n.Sample(pid, time.Hour)
	s.Stop() // two readings without the process's memory: no-entry
	base := uint64(s.start.UnixMicro())
	var samples []fakenvml.ProcUtil
	add := func(ps ...fakenvml.ProcUtil) {
		samples = append(samples, ps...)
		writeProcUtil(t, procUtil, samples...)
	}
	writeProcs(t, procs, fmt.Sprintf("%d 100 0\n", pid))

	for i, st := range []struct {
		what     string
		procs    string // "" leaves the file
		add      []fakenvml.ProcUtil
		sm, mem  float64 // -1: no figure
		noSample int     // Timeline.ProcessUtilNoSample after the reading
	}{
		{what: "only a sample from before the watch", sm: -1, mem: -1, noSample: 1},
		{what: "the pid's and another's", add: []fakenvml.ProcUtil{
			{GPU: 0, PID: pid, TimeStampUs: base + 10, SMPct: 40, MemPct: 10},
			{GPU: 0, PID: other, TimeStampUs: base + 10, SMPct: 90, MemPct: 50},
		}, sm: 40, mem: 10, noSample: 1},
		{what: "nothing new since", sm: -1, mem: -1, noSample: 2},
		{what: "two periods of the pid's", add: []fakenvml.ProcUtil{
			{GPU: 0, PID: pid, TimeStampUs: base + 20, SMPct: 20, MemPct: 4},
			{GPU: 0, PID: pid, TimeStampUs: base + 30, SMPct: 30, MemPct: 6},
		}, sm: 25, mem: 5, noSample: 2},
		{what: "another's only: the pid was idle", add: []fakenvml.ProcUtil{
			{GPU: 0, PID: other, TimeStampUs: base + 40, SMPct: 100, MemPct: 100},
		}, sm: 0, mem: 0, noSample: 2},
		{what: "a busy GPU 1 the process is not on", add: []fakenvml.ProcUtil{
			{GPU: 1, PID: pid, TimeStampUs: base + 50, SMPct: 77, MemPct: 77},
		}, sm: -1, mem: -1, noSample: 3},
		{what: "on GPUs 0 and 1: GPU 1's samples since the start, GPU 0's since its last",
			procs: fmt.Sprintf("%d 100 0\n%d 100 1\n", pid, pid), add: []fakenvml.ProcUtil{
				{GPU: 0, PID: pid, TimeStampUs: base + 60, SMPct: 13, MemPct: 3},
			}, sm: 45, mem: 40, noSample: 3},
		{what: "GPU 1 alone has a new sample", add: []fakenvml.ProcUtil{
			{GPU: 1, PID: pid, TimeStampUs: base + 70, SMPct: 8, MemPct: 2},
		}, sm: 8, mem: 2, noSample: 3},
	} {
		if st.procs != "" {
			writeProcs(t, procs, st.procs)
		}
		if st.add != nil {
			add(st.add...)
		}
		s.read()
		smp := lastSample(t, s)
		if !pctIs(smp.ProcessSMUtilPct, st.sm) || !pctIs(smp.ProcessMemUtilPct, st.mem) || s.tl.ProcessUtilNoSample != st.noSample {
			t.Errorf("step %d (%s): SM %s, mem %s, no-sample %d; want %g, %g, %d (-1: none)", i, st.what,
				fmtPct(smp.ProcessSMUtilPct), fmtPct(smp.ProcessMemUtilPct), s.tl.ProcessUtilNoSample, st.sm, st.mem, st.noSample)
		}
	}
	tl := s.Stop()
	// Means of the readings with a figure: 40, 25, 0, 45, 8 and 10, 5, 0, 40, 2.
	if tl.MeanProcessSMUtilPct == nil || *tl.MeanProcessSMUtilPct != 23.6 || tl.MeanProcessMemUtilPct == nil || *tl.MeanProcessMemUtilPct != 11.4 ||
		tl.ProcessUtilErrors != 0 || tl.ProcessUtilFirstErr != "" || tl.Errors != 0 {
		t.Errorf("timeline: mean SM %s, mem %s, errors %d (%q), %d; want 23.6, 11.4, none",
			fmtPct(tl.MeanProcessSMUtilPct), fmtPct(tl.MeanProcessMemUtilPct), tl.ProcessUtilErrors, tl.ProcessUtilFirstErr, tl.Errors)
	}
	b, err := json.Marshal(tl)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"process_sm_util_pct":40`, `"process_mem_util_pct":10`, `"process_sm_util_pct":0`,
		`"mean_process_sm_util_pct":23.6`, `"mean_process_mem_util_pct":11.4`, `"process_util_no_sample":3`, `"process_util_errors":0`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("JSON lacks %s: %s", key, b)
		}
	}
	if b, _ := json.Marshal(Sample{Seconds: 1, Bytes: 2}); strings.Contains(string(b), "process_") {
		t.Errorf("a sample without a per-process figure is %s; want no process_ keys", b)
	}
}

// procFigures is how many of the running sampler's readings had a
// per-process figure.
func procFigures(s *Sampler) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.procN
}

// waitProcFigures polls the sampler until k readings have had a
// per-process figure (a deadline fails a hung test; nothing is timed).
// It counts rather than looks at Latest, which a 1 ms sampler replaces
// with a reading without a new NVML sample before a poll may see it.
func waitProcFigures(t *testing.T, s *Sampler, k int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for procFigures(s) < k {
		if time.Now().After(deadline) {
			t.Fatalf("sampler has %d readings with a per-process figure, never %d", procFigures(s), k)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSamplerProcessUtilization is the same through the Sampler's own
// goroutine at 1 ms, for the race detector: the figures the test writes
// arrive, each in exactly one reading, whatever the timing. Only values
// and counts are asserted.
func TestSamplerProcessUtilization(t *testing.T) {
	pid := os.Getpid()
	dir := t.TempDir()
	procs, procUtil := filepath.Join(dir, "procs"), filepath.Join(dir, "procutil")
	n := openFake(t, env{procFile: procs, procUtilFile: procUtil})
	s := n.Sample(pid, time.Millisecond)
	writeProcs(t, procs, fmt.Sprintf("%d 100 0\n", pid))
	waitFor(t, s, 100)
	base := uint64(time.Now().UnixMicro()) // after the Sampler's start
	var samples []fakenvml.ProcUtil
	for i, st := range []struct {
		sm     int
		others bool // only another process's sample: the pid's figure is 0
	}{{sm: 60}, {sm: 20}, {others: true}, {sm: 35}} {
		ts := base + uint64(i)
		if st.others {
			samples = append(samples, fakenvml.ProcUtil{GPU: 0, PID: 7, TimeStampUs: ts, SMPct: 90})
		} else {
			samples = append(samples, fakenvml.ProcUtil{GPU: 0, PID: pid, TimeStampUs: ts, SMPct: st.sm, MemPct: st.sm / 2},
				fakenvml.ProcUtil{GPU: 0, PID: 7, TimeStampUs: ts, SMPct: 90, MemPct: 90})
		}
		writeProcUtil(t, procUtil, samples...)
		waitProcFigures(t, s, i+1)
	}
	tl := s.Stop()
	seen := map[float64]int{}
	var sum float64
	var with int
	for _, smp := range tl.Samples {
		if smp.ProcessSMUtilPct == nil {
			continue
		}
		seen[*smp.ProcessSMUtilPct]++
		sum += *smp.ProcessSMUtilPct
		with++
		if want := *smp.ProcessSMUtilPct / 2; *smp.ProcessMemUtilPct != float64(int(want)) {
			t.Errorf("sample at SM %g %% has memory %g %%, want %d", *smp.ProcessSMUtilPct, *smp.ProcessMemUtilPct, int(want))
		}
	}
	// Each sample is read once: every figure in exactly one reading.
	for _, v := range []float64{60, 20, 0, 35} {
		if seen[v] != 1 {
			t.Errorf("SM %g %% in %d readings, want 1 (readings: %v)", v, seen[v], seen)
		}
	}
	if len(seen) != 4 || tl.MeanProcessSMUtilPct == nil || *tl.MeanProcessSMUtilPct != sum/float64(with) {
		t.Errorf("figures %v, mean %s; want the four written and their mean", seen, fmtPct(tl.MeanProcessSMUtilPct))
	}
	if tl.ProcessUtilNoSample+with != len(tl.Samples) || tl.ProcessUtilErrors != 0 {
		t.Errorf("%d samples: %d with a figure, %d without a new NVML sample, %d errors; want the last two to make up the rest, no errors",
			len(tl.Samples), with, tl.ProcessUtilNoSample, tl.ProcessUtilErrors)
	}
}

// TestSamplerProcessUtilizationNotSupported: a GPU that says
// NVML_ERROR_NOT_SUPPORTED (a MIG instance) costs each reading one error
// count and its first text, nothing else; readings after the first build
// no error, so they allocate no more than readings with no new NVML
// sample.
func TestSamplerProcessUtilizationNotSupported(t *testing.T) {
	pid := os.Getpid()
	procs := filepath.Join(t.TempDir(), "procs")
	writeProcs(t, procs, fmt.Sprintf("%d 100 0\n", pid))
	perReading := func(procUtilErr string) (float64, Timeline) {
		n, err := openFakeErr(t, env{procFile: procs, procUtilErr: procUtilErr})
		if err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		s := n.Sample(pid, time.Hour)
		s.Stop()
		s.tl.Samples = append(make([]Sample, 0, 1000), s.tl.Samples...) // no growth inside the count
		allocs := testing.AllocsPerRun(200, s.read)
		return allocs, s.Stop()
	}
	noSample, okTL := perReading("")
	failing, tl := perReading("3")
	if okTL.ProcessUtilNoSample != len(okTL.Samples) || okTL.ProcessUtilErrors != 0 {
		t.Errorf("no per-process samples: %d of %d readings counted as no sample, %d errors; want all, none", okTL.ProcessUtilNoSample, len(okTL.Samples), okTL.ProcessUtilErrors)
	}
	if tl.ProcessUtilErrors != len(tl.Samples) || tl.MeanProcessSMUtilPct != nil || tl.ProcessUtilNoSample != 0 || tl.Errors != 0 ||
		!strings.Contains(tl.ProcessUtilFirstErr, "nvmlDeviceGetProcessUtilization(GPU 0): Not Supported (fakenvml)") {
		t.Errorf("%d samples, process-util errors %d (%q), no-sample %d, mean %s; want one error per sample naming the call",
			len(tl.Samples), tl.ProcessUtilErrors, tl.ProcessUtilFirstErr, tl.ProcessUtilNoSample, fmtPct(tl.MeanProcessSMUtilPct))
	}
	if failing > noSample {
		t.Errorf("a reading allocates %v times on a GPU without per-process utilization, %v on one with no new sample; want no more", failing, noSample)
	}
	t.Logf("allocations per reading: %v with no new sample, %v not supported", noSample, failing)
}
