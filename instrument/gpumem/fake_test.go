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

	"memprobe/internal/fakenvml"
)

// fakeLib is internal/fakenvml's library, or "" with fakeSkip saying why
// not. It is built once per test binary and every test loads this one
// file (the library's state, its process list and its init count, is then
// one for the whole test binary), except those that ask for another
// build (env.lib).
var fakeLib, fakeSkip string

func TestMain(m *testing.M) {
	lib, err := fakenvml.Build()
	switch {
	case errors.Is(err, fakenvml.ErrNoGCC):
		fakeSkip = err.Error()
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	default:
		fakeLib = lib
	}
	os.Exit(m.Run())
}

// env is the fake's behaviour for one Open; every FAKENVML_ variable is
// set (empty means the default), so one test's settings never leak into
// the next Open. lib is the library to open ("": fakeLib).
type env struct {
	devices, initErr, procErr, totalBytes, procFile, utilFile string
	procUtilFile, procUtilErr                                 string
	lib                                                       string
}

// openFake sets the fake's environment and opens it, closing it when the
// test ends.
func openFake(t *testing.T, e env) *NVML {
	t.Helper()
	n, err := openFakeErr(t, e)
	if err != nil {
		t.Fatalf("Open(fake): %v", err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return n
}

func openFakeErr(t *testing.T, e env) (*NVML, error) {
	t.Helper()
	if fakeLib == "" {
		t.Skip(fakeSkip)
	}
	t.Setenv(fakenvml.EnvDevices, e.devices)
	t.Setenv(fakenvml.EnvInitError, e.initErr)
	t.Setenv(fakenvml.EnvProcError, e.procErr)
	t.Setenv(fakenvml.EnvTotalBytes, e.totalBytes)
	t.Setenv(fakenvml.EnvProcBytesFile, e.procFile)
	t.Setenv(fakenvml.EnvUtilFile, e.utilFile)
	t.Setenv(fakenvml.EnvProcUtilFile, e.procUtilFile)
	t.Setenv(fakenvml.EnvProcUtilError, e.procUtilErr)
	if e.lib == "" {
		return Open(fakeLib)
	}
	return Open(e.lib)
}

// writeProcs replaces the fake's process file whole (write, then rename),
// so the fake, which re-reads it on every query from the sampler's
// goroutine, never sees half a file. The utilization file is written the
// same way.
func writeProcs(t *testing.T, path, content string) {
	t.Helper()
	if err := fakenvml.WriteFile(path, content); err != nil {
		t.Fatal(err)
	}
}

func TestOpenMissingLibrary(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope", "libnvidia-ml.so.1")
	n, err := Open(missing)
	if err == nil {
		n.Close()
		t.Fatal("Open of a missing library succeeded")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "no NVML: libnvidia-ml.so.1 not found: ") {
		t.Errorf("error %q does not start %q", msg, "no NVML: libnvidia-ml.so.1 not found: ")
	}
	if !strings.Contains(msg, missing) || !strings.Contains(msg, "No such file") {
		t.Errorf("error %q lacks the dlopen reason (path, No such file)", msg)
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("error %q is not one line", msg)
	}
	if !errors.Is(err, ErrNoLibrary) {
		t.Errorf("error %q does not wrap ErrNoLibrary", msg)
	}

	// "" falls back to $MEMPROBE_LIBNVML.
	t.Setenv(EnvLibNVML, missing)
	if _, err := Open(""); err == nil || !errors.Is(err, ErrNoLibrary) || !strings.Contains(err.Error(), missing) {
		t.Errorf("Open(\"\") with %s=%s: %v, want ErrNoLibrary naming it", EnvLibNVML, missing, err)
	}
}

func TestOpenFromEnv(t *testing.T) {
	if fakeLib == "" {
		t.Skip(fakeSkip)
	}
	t.Setenv(EnvLibNVML, fakeLib)
	n, err := openFakeErr(t, env{})
	if err != nil {
		t.Fatalf("Open(\"\") with %s set to the fake: %v", EnvLibNVML, err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := n.Devices(); err == nil {
		t.Error("Devices after Close succeeded")
	}
}

func TestInitFailure(t *testing.T) {
	n, err := openFakeErr(t, env{initErr: "9"}) // NVML_ERROR_DRIVER_NOT_LOADED
	if err == nil {
		n.Close()
		t.Fatal("Open succeeded though nvmlInit failed")
	}
	msg := err.Error()
	if !strings.Contains(msg, "nvmlInit") || !strings.Contains(msg, "Driver Not Loaded (fakenvml)") {
		t.Errorf("error %q does not name nvmlInit and the library's error string", msg)
	}
	if errors.Is(err, ErrNoLibrary) {
		t.Errorf("init failure %q wraps ErrNoLibrary", msg)
	}
	// A failed Open leaves nothing behind that breaks the next one.
	openFake(t, env{})
}

func TestDevices(t *testing.T) {
	procs := filepath.Join(t.TempDir(), "procs")
	writeProcs(t, procs, "4242 1000000 0\n4343 2000000 1\n")
	n := openFake(t, env{devices: "2", totalBytes: "1000000000", procFile: procs})
	devs, err := n.Devices()
	if err != nil {
		t.Fatal(err)
	}
	const reserved = 256 << 20 // the fake's driver reservation
	want := []Device{
		{Index: 0, Name: "FakeNVML GPU 0", TotalBytes: 1e9, UsedBytes: reserved + 1000000, FreeBytes: 1e9 - reserved - 1000000},
		{Index: 1, Name: "FakeNVML GPU 1", TotalBytes: 1e9, UsedBytes: reserved + 2000000, FreeBytes: 1e9 - reserved - 2000000},
	}
	if fmt.Sprint(devs) != fmt.Sprint(want) {
		t.Errorf("Devices() = %+v, want %+v", devs, want)
	}
}

func TestProcessBytes(t *testing.T) {
	pid := os.Getpid()
	procs := filepath.Join(t.TempDir(), "procs")
	n := openFake(t, env{devices: "3", procFile: procs})

	// Our pid on GPUs 0 and 2 (twice on 2, as under MIG), others around it.
	writeProcs(t, procs, fmt.Sprintf("1 999 0\n%d 100 0\n%d 30 2\n2 5 1\n%d 20 2\n", pid, pid, pid))
	got, err := n.ProcessBytes(pid)
	if err != nil || got != 150 {
		t.Errorf("ProcessBytes = %d, %v; want 150, nil", got, err)
	}
	per, err := n.ProcessBytesPerDevice(pid)
	if err != nil || fmt.Sprint(per) != "[100 0 50]" {
		t.Errorf("ProcessBytesPerDevice = %v, %v; want [100 0 50], nil", per, err)
	}

	for _, tc := range []struct{ name, procs, why string }{
		{"no file", "", "lists no compute process on 3 GPU(s)"},
		{"others only", "1 999 0\n2 5 1\n", "not among the 2 compute processes"},
		{"not available", fmt.Sprintf("%d na 1\n", pid), "not available"},
	} {
		if tc.procs == "" {
			os.Remove(procs)
		} else {
			writeProcs(t, procs, tc.procs)
		}
		got, err := n.ProcessBytes(pid)
		if got != 0 || !errors.Is(err, ErrNoProcessEntry) || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%s: ProcessBytes = %d, %v; want 0 and ErrNoProcessEntry saying %q", tc.name, got, err, tc.why)
		}
	}

	if _, err := n.ProcessBytes(0); err == nil {
		t.Error("ProcessBytes(0) succeeded")
	}
}

func TestProcessQueryError(t *testing.T) {
	n := openFake(t, env{procErr: "999"}) // NVML_ERROR_UNKNOWN
	_, err := n.ProcessBytes(os.Getpid())
	if err == nil || errors.Is(err, ErrNoProcessEntry) ||
		!strings.Contains(err.Error(), "nvmlDeviceGetComputeRunningProcesses(GPU 0)") ||
		!strings.Contains(err.Error(), "Unknown Error (fakenvml)") {
		t.Fatalf("ProcessBytes error = %v; want one naming the call, the GPU and the library's string", err)
	}
	tl := n.Sample(os.Getpid(), time.Millisecond).Stop()
	if tl.Errors < 2 || tl.FirstErr != err.Error() || len(tl.Samples) != 0 || tl.NoEntry != 0 || tl.Available() {
		t.Errorf("timeline %+v; want >= 2 errors (first and last reading) with FirstErr %q, no samples", tl, err)
	}
}

// noEntrySeen peeks at the running sampler's no-entry count.
func noEntrySeen(s *Sampler) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tl.NoEntry
}

// waitNoEntry polls the sampler until it has read a process list without
// the pid (a deadline fails a hung test; nothing is timed).
func waitNoEntry(t *testing.T, s *Sampler) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for noEntrySeen(s) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("sampler never read the empty process list")
		}
		time.Sleep(time.Millisecond)
	}
}

// waitFor polls the sampler until its latest reading is want. Only the
// values are asserted, never timings: the deadline is there to fail a
// hung test, not to measure.
func waitFor(t *testing.T, s *Sampler, want int64) {
	t.Helper()
	waitForSample(t, s, fmt.Sprintf("%d bytes", want), func(smp Sample) bool { return smp.Bytes == want })
}

func TestSampler(t *testing.T) {
	pid := os.Getpid()
	procs := filepath.Join(t.TempDir(), "procs")
	n := openFake(t, env{devices: "2", procFile: procs})
	const mib = 1 << 20

	// Before the context exists: no entry, counted apart from errors.
	s := n.Sample(pid, time.Millisecond)
	waitNoEntry(t, s)
	if last, ok := s.Latest(); ok {
		t.Fatalf("Latest before any figure = %+v", last)
	}
	// Up on two GPUs, higher, then down: the peak is the middle value.
	steps := []struct {
		file string
		want int64
	}{
		{fmt.Sprintf("%d %d 0\n", pid, 100*mib), 100 * mib},
		{fmt.Sprintf("%d %d 0\n%d %d 1\n7 %d 1\n", pid, 200*mib, pid, 100*mib, 999*mib), 300 * mib},
		{fmt.Sprintf("%d %d 1\n", pid, 50*mib), 50 * mib},
	}
	for _, st := range steps {
		writeProcs(t, procs, st.file)
		waitFor(t, s, st.want)
	}
	tl := s.Stop()
	if tl.PeakBytes != 300*mib {
		t.Errorf("PeakBytes = %d, want %d", tl.PeakBytes, 300*mib)
	}
	if !tl.Available() || tl.Samples[len(tl.Samples)-1].Bytes != 50*mib {
		t.Errorf("last sample %+v, want %d bytes", tl.Samples[len(tl.Samples)-1], 50*mib)
	}
	if tl.Errors != 0 || tl.FirstErr != "" {
		t.Errorf("errors %d (%q), want none", tl.Errors, tl.FirstErr)
	}
	if tl.NoEntry < 1 || !strings.Contains(tl.NoEntryReason, "no compute process") {
		t.Errorf("NoEntry %d (%q); want the readings before the first figure counted", tl.NoEntry, tl.NoEntryReason)
	}
	if tl.PID != pid || tl.IntervalSeconds != 0.001 {
		t.Errorf("PID %d interval %g, want %d and 0.001", tl.PID, tl.IntervalSeconds, pid)
	}
	seen := map[int64]bool{}
	for i, smp := range tl.Samples {
		seen[smp.Bytes] = true
		if i > 0 && smp.Seconds < tl.Samples[i-1].Seconds {
			t.Errorf("sample %d at %gs before sample %d at %gs", i, smp.Seconds, i-1, tl.Samples[i-1].Seconds)
		}
	}
	for _, st := range steps {
		if !seen[st.want] {
			t.Errorf("timeline lacks a %d-byte sample", st.want)
		}
	}
	if again := s.Stop(); len(again.Samples) != len(tl.Samples) || again.PeakBytes != tl.PeakBytes {
		t.Errorf("second Stop differs: %+v vs %+v", again, tl)
	}

	// The record's JSON carries the units in its names.
	b, err := json.Marshal(tl)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"pid":`, `"interval_seconds":`, `"samples":[{"t_seconds":`, `"bytes":`, `"peak_bytes":`, `"no_entry_samples":`, `"no_entry_reason":`, `"errors":0`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("JSON %s lacks %s", b, key)
		}
	}
}

// TestSamplerNoEntry is the PID-namespace case: NVML lists processes, none
// of them ours, for the whole run.
func TestSamplerNoEntry(t *testing.T) {
	procs := filepath.Join(t.TempDir(), "procs")
	writeProcs(t, procs, "1 12345 0\n")
	n := openFake(t, env{procFile: procs})
	tl := n.Sample(os.Getpid(), time.Hour).Stop()
	if tl.Available() || tl.PeakBytes != 0 || tl.NoEntry != 2 || tl.Errors != 0 ||
		!strings.Contains(tl.NoEntryReason, "not among the 1 compute processes") {
		t.Errorf("timeline %+v; want 2 no-entry readings (first and last), no samples, no errors", tl)
	}
	if tl.Samples == nil {
		t.Error("Samples is nil; want empty so the JSON says []")
	}
}

// TestSamplerAfterClose checks that a sampler outliving its NVML records
// errors instead of calling into a shut-down library.
func TestSamplerAfterClose(t *testing.T) {
	n, err := openFakeErr(t, env{})
	if err != nil {
		t.Fatal(err)
	}
	s := n.Sample(os.Getpid(), time.Hour)
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	tl := s.Stop()
	if tl.Errors+tl.NoEntry != 2 || tl.Errors < 1 || !strings.Contains(tl.FirstErr, "closed") {
		t.Errorf("timeline %+v; want the reading after Close to be a 'closed' error", tl)
	}
}

// TestUtilization reads the fake's utilization file through the binding:
// the listed GPUs' figures, NVML_ERROR_NOT_SUPPORTED (a GPU not listed, as
// a MIG instance, or no file) as ErrUtilizationNotSupported naming the
// call and the GPU, an index NVML does not have as a plain error.
func TestUtilization(t *testing.T) {
	util := filepath.Join(t.TempDir(), "util")
	n := openFake(t, env{devices: "3", utilFile: util})

	if _, _, err := n.Utilization(0); !errors.Is(err, ErrUtilizationNotSupported) {
		t.Errorf("no util file: Utilization(0) error %v, want ErrUtilizationNotSupported", err)
	}
	writeProcs(t, util, "0 87 41\n2 3 0\n")
	for _, tc := range []struct{ gpu, g, m int }{{0, 87, 41}, {2, 3, 0}} {
		if g, m, err := n.Utilization(tc.gpu); g != tc.g || m != tc.m || err != nil {
			t.Errorf("Utilization(%d) = %d, %d, %v; want %d, %d, nil", tc.gpu, g, m, err, tc.g, tc.m)
		}
	}
	g, m, err := n.Utilization(1)
	if g != 0 || m != 0 || !errors.Is(err, ErrUtilizationNotSupported) ||
		!strings.Contains(err.Error(), "nvmlDeviceGetUtilizationRates(GPU 1)") || !strings.Contains(err.Error(), "Not Supported (fakenvml)") {
		t.Errorf("Utilization(1) = %d, %d, %v; want ErrUtilizationNotSupported naming the call, GPU 1 and the library's string", g, m, err)
	}
	for _, i := range []int{-1, 3} {
		if _, _, err := n.Utilization(i); err == nil || errors.Is(err, ErrUtilizationNotSupported) || !strings.Contains(err.Error(), "out of range") {
			t.Errorf("Utilization(%d): %v; want an out-of-range error", i, err)
		}
	}
	// Re-read at each call.
	writeProcs(t, util, "0 100 100\n")
	if g, m, err := n.Utilization(0); g != 100 || m != 100 || err != nil {
		t.Errorf("after rewrite, Utilization(0) = %d, %d, %v; want 100, 100, nil", g, m, err)
	}
	if _, _, err := n.Utilization(2); !errors.Is(err, ErrUtilizationNotSupported) {
		t.Errorf("after rewrite, Utilization(2): %v; want ErrUtilizationNotSupported", err)
	}
	if allocs := testing.AllocsPerRun(100, func() { n.Utilization(0) }); allocs != 0 {
		t.Errorf("Utilization allocates %v times per call, want 0", allocs)
	}
}

func TestUtilizationAfterClose(t *testing.T) {
	n, err := openFakeErr(t, env{})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := n.Utilization(0); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Utilization after Close: %v, want a 'closed' error", err)
	}
}

// TestUtilizationMissingSymbol opens a library without
// nvmlDeviceGetUtilizationRates: it opens, the memory figures are read as
// ever, Utilization names the missing symbol, and a Sampler's samples
// carry no utilization, each counted in UtilErrors and not in Errors.
func TestUtilizationMissingSymbol(t *testing.T) {
	if fakeLib == "" {
		t.Skip(fakeSkip)
	}
	lib, err := fakenvml.Build(fakenvml.OmitUtilization)
	if err != nil {
		t.Fatal(err)
	}
	pid := os.Getpid()
	dir := t.TempDir()
	procs, util := filepath.Join(dir, "procs"), filepath.Join(dir, "util")
	writeProcs(t, procs, fmt.Sprintf("%d 100 0\n", pid))
	writeProcs(t, util, "0 50 50\n")
	n := openFake(t, env{lib: lib, procFile: procs, utilFile: util})

	if _, err := n.Devices(); err != nil {
		t.Errorf("Devices: %v", err)
	}
	if b, err := n.ProcessBytes(pid); b != 100 || err != nil {
		t.Errorf("ProcessBytes = %d, %v; want 100, nil", b, err)
	}
	_, _, err = n.Utilization(0)
	if !errors.Is(err, ErrUtilizationNotSupported) || !strings.Contains(err.Error(), "lacks nvmlDeviceGetUtilizationRates") || !strings.Contains(err.Error(), lib) {
		t.Errorf("Utilization(0): %v; want ErrUtilizationNotSupported saying %s lacks nvmlDeviceGetUtilizationRates", err, lib)
	}

	tl := n.Sample(pid, time.Hour).Stop()
	if len(tl.Samples) != 2 || tl.PeakBytes != 100 || tl.Errors != 0 || tl.NoEntry != 0 {
		t.Errorf("timeline %+v; want 2 samples of 100 bytes, no errors", tl)
	}
	for i, smp := range tl.Samples {
		if smp.GPUUtilPct != nil {
			t.Errorf("sample %d has utilization %g, want none", i, *smp.GPUUtilPct)
		}
	}
	if tl.MeanGPUUtilPct != nil || tl.UtilErrors != 2 || tl.UtilFirstErr != err.Error() {
		t.Errorf("mean %v, util errors %d (%q); want no mean, 2 errors, the first %q", tl.MeanGPUUtilPct, tl.UtilErrors, tl.UtilFirstErr, err)
	}
}

// waitForSample polls the sampler until its latest reading satisfies ok
// (a deadline fails a hung test; nothing is timed).
func waitForSample(t *testing.T, s *Sampler, what string, ok func(Sample) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if last, seen := s.Latest(); seen && ok(last) {
			return
		}
		if time.Now().After(deadline) {
			last, seen := s.Latest()
			t.Fatalf("sampler never read %s; latest %+v (%v)", what, last, seen)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSamplerUtilization: each sample carries the mean utilization of the
// GPUs the process holds memory on (never of a GPU it is not on, however
// busy), nil when none of them reports one; GPUs without utilization are
// counted in UtilErrors, not Errors, and the memory samples are as
// without utilization. The files change in an order that gives each
// memory figure one utilization, so every sample can be checked.
func TestSamplerUtilization(t *testing.T) {
	pid := os.Getpid()
	dir := t.TempDir()
	procs, util := filepath.Join(dir, "procs"), filepath.Join(dir, "util")
	const mib = 1 << 20
	writeProcs(t, util, "0 40 10\n1 90 90\n2 70 5\n")
	n := openFake(t, env{devices: "3", procFile: procs, utilFile: util})

	s := n.Sample(pid, time.Millisecond)
	// No process file yet: no-entry readings, which read no utilization.
	waitNoEntry(t, s)
	steps := []struct {
		util  string // written before procs ("" leaves it)
		procs string
		bytes int64
		pct   float64 // -1: no utilization
	}{
		// GPU 0 only; GPU 1 busy with another process's work.
		{"", fmt.Sprintf("%d %d 0\n7 %d 1\n", pid, 100*mib, 999*mib), 100 * mib, 40},
		// GPUs 0 and 2: their mean.
		{"", fmt.Sprintf("%d %d 0\n%d %d 2\n", pid, 100*mib, pid, 200*mib), 300 * mib, 55},
		// GPU 1 stops reporting (as a MIG instance), then the process
		// moves there: no utilization.
		{"0 40 10\n2 70 5\n", fmt.Sprintf("%d %d 1\n", pid, 50*mib), 50 * mib, -1},
		// GPUs 0 and 1: the mean over GPU 0, the one that reports.
		{"", fmt.Sprintf("%d %d 0\n%d %d 1\n", pid, 100*mib, pid, 50*mib), 150 * mib, 40},
	}
	want := map[int64]float64{}
	for _, st := range steps {
		want[st.bytes] = st.pct
		if st.util != "" {
			writeProcs(t, util, st.util)
		}
		writeProcs(t, procs, st.procs)
		waitForSample(t, s, fmt.Sprintf("%d bytes", st.bytes), func(smp Sample) bool { return smp.Bytes == st.bytes })
	}
	tl := s.Stop()

	if tl.PeakBytes != 300*mib || tl.Errors != 0 || tl.FirstErr != "" || tl.NoEntry < 1 {
		t.Errorf("peak %d, errors %d (%q), no-entry %d; want %d, none, the readings before the first figure", tl.PeakBytes, tl.Errors, tl.FirstErr, tl.NoEntry, 300*mib)
	}
	var sum float64
	var withUtil, wantUtilErrors int
	seen := map[int64]bool{}
	for i, smp := range tl.Samples {
		pct, ok := want[smp.Bytes]
		if !ok {
			t.Errorf("sample %d: %d bytes, not a figure the test wrote", i, smp.Bytes)
			continue
		}
		seen[smp.Bytes] = true
		switch {
		case pct < 0 && smp.GPUUtilPct != nil:
			t.Errorf("sample %d (%d bytes): utilization %g, want none", i, smp.Bytes, *smp.GPUUtilPct)
		case pct >= 0 && (smp.GPUUtilPct == nil || *smp.GPUUtilPct != pct):
			t.Errorf("sample %d (%d bytes): utilization %v, want %g", i, smp.Bytes, smp.GPUUtilPct, pct)
		}
		if smp.GPUUtilPct != nil {
			sum += *smp.GPUUtilPct
			withUtil++
		}
		if smp.Bytes == 50*mib || smp.Bytes == 150*mib { // on GPU 1, which does not report
			wantUtilErrors++
		}
	}
	for _, st := range steps {
		if !seen[st.bytes] {
			t.Errorf("timeline lacks a %d-byte sample", st.bytes)
		}
	}
	if withUtil == 0 || tl.MeanGPUUtilPct == nil || *tl.MeanGPUUtilPct != sum/float64(withUtil) {
		t.Errorf("MeanGPUUtilPct %v; want the mean %g of the %d samples with utilization", tl.MeanGPUUtilPct, sum/float64(withUtil), withUtil)
	}
	if tl.UtilErrors != wantUtilErrors || !strings.Contains(tl.UtilFirstErr, "nvmlDeviceGetUtilizationRates(GPU 1)") ||
		!strings.Contains(tl.UtilFirstErr, "Not Supported (fakenvml)") {
		t.Errorf("UtilErrors %d (%q); want %d (the samples on GPU 1), naming the call and GPU 1", tl.UtilErrors, tl.UtilFirstErr, wantUtilErrors)
	}

	b, err := json.Marshal(tl)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"gpu_util_pct":40`, `"gpu_util_pct":55`, `"mean_gpu_util_pct":`, `"util_errors":`, `"util_first_error":"nvmlDeviceGetUtilizationRates(GPU 1)`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("JSON lacks %s", key)
		}
	}
	if b, _ := json.Marshal(Sample{Seconds: 1, Bytes: 2}); string(b) != `{"t_seconds":1,"bytes":2}` {
		t.Errorf("a sample without utilization is %s; want no gpu_util_pct key", b)
	}
}

// TestSamplerReadAllocs: a reading that finds the process on a GPU which
// never reports utilization (a MIG instance) allocates no more than one
// on a GPU which does: after the first failure, whose text the timeline
// keeps, failures are counted without building an error each time.
func TestSamplerReadAllocs(t *testing.T) {
	pid := os.Getpid()
	dir := t.TempDir()
	procs, util := filepath.Join(dir, "procs"), filepath.Join(dir, "util")
	writeProcs(t, procs, fmt.Sprintf("%d 100 0\n%d 100 1\n", pid, pid))
	n := openFake(t, env{devices: "2", procFile: procs, utilFile: util})
	perReading := func(utilLines string) (float64, Timeline) {
		writeProcs(t, util, utilLines)
		s := n.Sample(pid, time.Hour)
		s.Stop()
		s.tl.Samples = append(make([]Sample, 0, 1000), s.tl.Samples...) // no growth inside the count
		allocs := testing.AllocsPerRun(200, s.read)
		return allocs, s.Stop()
	}
	ok, okTL := perReading("0 10 0\n1 30 0\n")
	failing, failTL := perReading("")
	if okTL.UtilErrors != 0 || okTL.MeanGPUUtilPct == nil || *okTL.MeanGPUUtilPct != 20 {
		t.Fatalf("reporting GPUs: util errors %d, mean %v; want none and 20", okTL.UtilErrors, okTL.MeanGPUUtilPct)
	}
	if failTL.UtilErrors != len(failTL.Samples) || failTL.MeanGPUUtilPct != nil || !strings.Contains(failTL.UtilFirstErr, "GPU 0") {
		t.Fatalf("GPUs without utilization: %d util errors for %d samples, mean %v, first %q; want one per sample, no mean, GPU 0's",
			failTL.UtilErrors, len(failTL.Samples), failTL.MeanGPUUtilPct, failTL.UtilFirstErr)
	}
	if failing > ok {
		t.Errorf("a reading allocates %v times on GPUs without utilization, %v on GPUs with it; want no more", failing, ok)
	}
	t.Logf("allocations per reading: %v with utilization, %v without", ok, failing)
}
