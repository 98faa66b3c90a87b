//go:build cgo

package gpumem

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeLib is the path of testdata/fakenvml.c built as a shared library,
// or "" with fakeSkip saying why not. It is built once per test binary and
// every test loads this one file (the library's state, its process list
// and its init count, is then one for the whole test binary).
var fakeLib, fakeSkip string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "fakenvml")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if gcc, err := exec.LookPath("gcc"); err != nil {
		fakeSkip = "gcc not found, so the fake NVML library cannot be built: " + err.Error()
	} else {
		lib := filepath.Join(dir, "libnvidia-ml.so.1")
		out, err := exec.Command(gcc, "-shared", "-fPIC", "-Wall", "-o", lib, filepath.Join("testdata", "fakenvml.c")).CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "building the fake NVML: %v\n%s", err, out)
			return 1
		}
		fakeLib = lib
	}
	return m.Run()
}

// env is the fake's behaviour for one Open; every FAKENVML_ variable is
// set (empty means the default), so one test's settings never leak into
// the next Open.
type env struct {
	devices, initErr, procErr, totalBytes, procFile string
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
	t.Setenv("FAKENVML_DEVICES", e.devices)
	t.Setenv("FAKENVML_INIT_ERROR", e.initErr)
	t.Setenv("FAKENVML_PROC_ERROR", e.procErr)
	t.Setenv("FAKENVML_TOTAL_BYTES", e.totalBytes)
	t.Setenv("FAKENVML_PROC_BYTES_FILE", e.procFile)
	return Open(fakeLib)
}

// writeProcs replaces the fake's process file whole (write, then rename),
// so the fake, which re-reads it on every query from the sampler's
// goroutine, never sees half a file.
func writeProcs(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
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

// waitFor polls the sampler until its latest reading is want. Only the
// values are asserted, never timings: the deadline is there to fail a
// hung test, not to measure.
func waitFor(t *testing.T, s *Sampler, want int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if last, ok := s.Latest(); ok && last.Bytes == want {
			return
		}
		if time.Now().After(deadline) {
			last, ok := s.Latest()
			t.Fatalf("sampler never read %d bytes; latest %+v (%v)", want, last, ok)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestSampler(t *testing.T) {
	pid := os.Getpid()
	procs := filepath.Join(t.TempDir(), "procs")
	n := openFake(t, env{devices: "2", procFile: procs})
	const mib = 1 << 20

	// Before the context exists: no entry, counted apart from errors.
	s := n.Sample(pid, time.Millisecond)
	deadline := time.Now().Add(30 * time.Second)
	for noEntrySeen(s) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("sampler never read the empty process list")
		}
		time.Sleep(time.Millisecond)
	}
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
