package fakenvml_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"memprobe/instrument/gpumem"
	"memprobe/internal/dl"
	"memprobe/internal/fakenvml"
)

// NVML's result codes the tests expect (nvml.h).
const (
	nvmlSuccess          = 0
	nvmlInvalidArgument  = 2
	nvmlNotSupported     = 3
	nvmlNotFound         = 6
	nvmlInsufficientSize = 7
)

// lib is a fake opened directly (no gpumem), initialised with env.
type lib struct {
	t *testing.T
	l *dl.Library
}

func open(t *testing.T, path string, env map[string]string) *lib {
	t.Helper()
	for _, k := range fakenvml.Envs {
		t.Setenv(k, env[k])
	}
	l, err := dl.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	f := &lib{t: t, l: l}
	if r := f.call("nvmlInit_v2"); r != nvmlSuccess {
		t.Fatalf("nvmlInit_v2 = %d", r)
	}
	t.Cleanup(func() {
		if r := f.call("nvmlShutdown"); r != nvmlSuccess {
			t.Errorf("nvmlShutdown = %d", r)
		}
		l.Close()
	})
	return f
}

func (f *lib) sym(name string) uintptr {
	f.t.Helper()
	a, err := f.l.Sym(name)
	if err != nil {
		f.t.Fatal(err)
	}
	return a
}

func (f *lib) call(name string, args ...uintptr) int32 {
	f.t.Helper()
	return int32(dl.CallOut(f.sym(name), args...))
}

// util calls nvmlDeviceGetUtilizationRates on GPU i.
func (f *lib) util(i int) (gpu, mem uint32, ret int32) {
	f.t.Helper()
	var h uintptr
	if r := f.call("nvmlDeviceGetHandleByIndex_v2", uintptr(i), uintptr(unsafe.Pointer(&h))); r != nvmlSuccess {
		f.t.Fatalf("nvmlDeviceGetHandleByIndex_v2(%d) = %d", i, r)
	}
	u := [2]uint32{1000, 1000} // gpu, memory: a value the fake cannot give
	ret = f.call("nvmlDeviceGetUtilizationRates", h, uintptr(unsafe.Pointer(&u)))
	return u[0], u[1], ret
}

// handle returns GPU i's nvmlDevice_t.
func (f *lib) handle(i int) uintptr {
	f.t.Helper()
	var h uintptr
	if r := f.call("nvmlDeviceGetHandleByIndex_v2", uintptr(i), uintptr(unsafe.Pointer(&h))); r != nvmlSuccess {
		f.t.Fatalf("nvmlDeviceGetHandleByIndex_v2(%d) = %d", i, r)
	}
	return h
}

// processUtilizationSample is nvml.h's nvmlProcessUtilizationSample_t:
// pid, 4 bytes of padding, timeStamp (µs), smUtil, memUtil, encUtil,
// decUtil; 32 bytes.
type processUtilizationSample struct {
	pid                               uint32
	_                                 uint32
	timeStamp                         uint64
	smUtil, memUtil, encUtil, decUtil uint32
}

// procUtil calls nvmlDeviceGetProcessUtilization on GPU i with a buffer
// of size entries (0: NULL) and *processSamplesCount = count, the
// buffer's entries preset to a value the fake cannot give.
func (f *lib) procUtil(i int, size, count uint32, lastSeen uint64) ([]processUtilizationSample, uint32, int32) {
	f.t.Helper()
	buf := make([]processUtilizationSample, size+1) // one more: a guard the fake must not write
	for j := range buf {
		buf[j] = processUtilizationSample{pid: 0xdead, timeStamp: 1 << 62, smUtil: 1000}
	}
	var p uintptr
	if size > 0 {
		p = uintptr(unsafe.Pointer(&buf[0]))
	}
	ret := f.call("nvmlDeviceGetProcessUtilization", f.handle(i), p, uintptr(unsafe.Pointer(&count)), uintptr(lastSeen))
	if buf[size].pid != 0xdead {
		f.t.Errorf("nvmlDeviceGetProcessUtilization wrote past the %d entries it was given", size)
	}
	return buf[:size], count, ret
}

// TestBuild: one library per set of defines, whatever their order or
// spelling, and a separate one for other defines; a define that is not one
// is refused rather than passed to gcc.
func TestBuild(t *testing.T) {
	a := fakenvml.Use(t)
	if got := os.Getenv(fakenvml.EnvLibNVML); got != a {
		t.Errorf("%s = %q after Use, want %q", fakenvml.EnvLibNVML, got, a)
	}
	if filepath.Base(a) != "libnvidia-ml.so.1" {
		t.Errorf("library %s is not named as the driver's", a)
	}
	if b, err := fakenvml.Build(); err != nil || b != a {
		t.Errorf("Build() again = %q, %v; want %q", b, err, a)
	}
	x, err := fakenvml.Build("X_ONE", "-DX_TWO=2")
	if err != nil || x == a {
		t.Fatalf("Build(X_ONE, X_TWO=2) = %q, %v; want a library other than %q", x, err, a)
	}
	if y, err := fakenvml.Build("-DX_TWO=2", "X_ONE"); err != nil || y != x {
		t.Errorf("Build with the defines reordered = %q, %v; want %q", y, err, x)
	}
	if _, err := fakenvml.Build("1BAD; rm"); err == nil {
		t.Error("Build accepted a define that is not an identifier")
	}
}

// TestBuildNoCgo: in a build without cgo, Build says so (and Use skips)
// rather than compiling a library nothing could load.
func TestBuildNoCgo(t *testing.T) {
	_, err := fakenvml.Build()
	switch {
	case errors.Is(err, fakenvml.ErrNoCgo):
	case err == nil || errors.Is(err, fakenvml.ErrNoGCC):
		t.Skip("a cgo build: see TestBuild")
	default:
		t.Fatalf("Build: %v", err)
	}
}

// TestOmitUtilization: each define leaves exactly its entry point out.
func TestOmitUtilization(t *testing.T) {
	full := fakenvml.Use(t)
	omit := fakenvml.Use(t, fakenvml.OmitUtilization)
	omitProc := fakenvml.Use(t, fakenvml.OmitProcessUtilization)
	for _, tc := range []struct {
		path           string
		util, procUtil bool
	}{{full, true, true}, {omit, false, true}, {omitProc, true, false}} {
		l, err := dl.Open(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Sym("nvmlDeviceGetUtilizationRates"); (err == nil) != tc.util {
			t.Errorf("%s: nvmlDeviceGetUtilizationRates present = %v, want %v", tc.path, err == nil, tc.util)
		}
		if _, err := l.Sym("nvmlDeviceGetProcessUtilization"); (err == nil) != tc.procUtil {
			t.Errorf("%s: nvmlDeviceGetProcessUtilization present = %v, want %v", tc.path, err == nil, tc.procUtil)
		}
		for _, name := range []string{"nvmlInit_v2", "nvmlShutdown", "nvmlErrorString", "nvmlDeviceGetCount_v2",
			"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetName", "nvmlDeviceGetMemoryInfo", "nvmlDeviceGetComputeRunningProcesses_v3"} {
			if _, err := l.Sym(name); err != nil {
				t.Errorf("%s lacks %s: %v", tc.path, name, err)
			}
		}
		l.Close()
	}
}

// TestUtilization: the utilization file is re-read at every call; a GPU
// without a line, or no file, is NVML_ERROR_NOT_SUPPORTED, and the output
// is left alone then.
func TestUtilization(t *testing.T) {
	path := fakenvml.Use(t, "UTIL_TEST") // its own instance: init count 0
	file := filepath.Join(t.TempDir(), "util")
	f := open(t, path, map[string]string{fakenvml.EnvDevices: "3", fakenvml.EnvUtilFile: file})

	if _, _, r := f.util(0); r != nvmlNotSupported {
		t.Errorf("no file: %d, want NVML_ERROR_NOT_SUPPORTED", r)
	}
	if err := fakenvml.WriteUtil(file, fakenvml.Util{GPU: 0, GPUPct: 87, MemPct: 41}, fakenvml.Util{GPU: 2, GPUPct: 3, MemPct: 0}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		gpu  int
		g, m uint32
		ret  int32
	}{{0, 87, 41, nvmlSuccess}, {1, 1000, 1000, nvmlNotSupported}, {2, 3, 0, nvmlSuccess}} {
		if g, m, r := f.util(tc.gpu); g != tc.g || m != tc.m || r != tc.ret {
			t.Errorf("GPU %d: %d%% %d%% ret %d; want %d%% %d%% ret %d", tc.gpu, g, m, r, tc.g, tc.m, tc.ret)
		}
	}
	if err := fakenvml.WriteFile(file, "1 100 100\n"); err != nil {
		t.Fatal(err)
	}
	if g, m, r := f.util(1); g != 100 || m != 100 || r != nvmlSuccess {
		t.Errorf("after rewrite, GPU 1: %d%% %d%% ret %d; want 100%% 100%%", g, m, r)
	}
	if _, _, r := f.util(0); r != nvmlNotSupported {
		t.Errorf("after rewrite, GPU 0: ret %d, want NVML_ERROR_NOT_SUPPORTED", r)
	}
	if r := f.call("nvmlDeviceGetUtilizationRates", 0, 0); r != nvmlInvalidArgument {
		t.Errorf("NULL device: ret %d, want NVML_ERROR_INVALID_ARGUMENT", r)
	}
}

// TestProcessUtilization: nvml.h's protocol for
// nvmlDeviceGetProcessUtilization. A NULL buffer asks for the count
// (NVML_ERROR_INSUFFICIENT_SIZE); a buffer too small gets the count
// needed and nothing written; one large enough gets the GPU's samples
// stamped after lastSeenTimeStamp, in nvml.h's layout; nothing after it
// is NVML_ERROR_NOT_FOUND; FAKENVML_PROC_UTIL_ERROR fails every call.
func TestProcessUtilization(t *testing.T) {
	path := fakenvml.Use(t, "PROC_UTIL_TEST")
	file := filepath.Join(t.TempDir(), "procutil")
	f := open(t, path, map[string]string{fakenvml.EnvDevices: "2", fakenvml.EnvProcUtilFile: file})

	if _, _, r := f.procUtil(0, 0, 0, 0); r != nvmlNotFound {
		t.Errorf("no file: ret %d, want NVML_ERROR_NOT_FOUND", r)
	}
	if err := fakenvml.WriteProcUtil(file,
		fakenvml.ProcUtil{GPU: 0, PID: 42, TimeStampUs: 1_000_000, SMPct: 87, MemPct: 41, EncPct: 2, DecPct: 3},
		fakenvml.ProcUtil{GPU: 1, PID: 43, TimeStampUs: 1_000_100, SMPct: 5},
		fakenvml.ProcUtil{GPU: 0, PID: 44, TimeStampUs: 1_000_200, SMPct: 12, MemPct: 1},
	); err != nil {
		t.Fatal(err)
	}
	if _, n, r := f.procUtil(0, 0, 0, 0); r != nvmlInsufficientSize || n != 2 {
		t.Errorf("size query: count %d ret %d; want 2, NVML_ERROR_INSUFFICIENT_SIZE", n, r)
	}
	if buf, n, r := f.procUtil(0, 1, 1, 0); r != nvmlInsufficientSize || n != 2 || buf[0].pid != 0xdead {
		t.Errorf("1 entry for 2: count %d ret %d, entry %+v; want 2, NVML_ERROR_INSUFFICIENT_SIZE, nothing written", n, r, buf[0])
	}
	buf, n, r := f.procUtil(0, 4, 4, 0)
	want := []processUtilizationSample{
		{pid: 42, timeStamp: 1_000_000, smUtil: 87, memUtil: 41, encUtil: 2, decUtil: 3},
		{pid: 44, timeStamp: 1_000_200, smUtil: 12, memUtil: 1},
	}
	if r != nvmlSuccess || n != 2 || buf[0] != want[0] || buf[1] != want[1] {
		t.Errorf("GPU 0: count %d ret %d, %+v; want 2, success, %+v", n, r, buf[:2], want)
	}
	if buf, n, r := f.procUtil(0, 4, 4, 1_000_000); r != nvmlSuccess || n != 1 || buf[0] != want[1] {
		t.Errorf("GPU 0 after 1000000: count %d ret %d, %+v; want only %+v", n, r, buf[0], want[1])
	}
	for _, size := range []uint32{0, 4} {
		if _, _, r := f.procUtil(0, size, size, 1_000_200); r != nvmlNotFound {
			t.Errorf("GPU 0 after its newest, %d entries: ret %d, want NVML_ERROR_NOT_FOUND", size, r)
		}
	}
	if buf, n, r := f.procUtil(1, 4, 4, 0); r != nvmlSuccess || n != 1 || buf[0].pid != 43 || buf[0].smUtil != 5 {
		t.Errorf("GPU 1: count %d ret %d, %+v; want pid 43's sample only", n, r, buf[0])
	}
	if r := f.call("nvmlDeviceGetProcessUtilization", f.handle(0), 0, 0, 0); r != nvmlInvalidArgument {
		t.Errorf("NULL count: ret %d, want NVML_ERROR_INVALID_ARGUMENT", r)
	}

	g := open(t, fakenvml.Use(t, "PROC_UTIL_TEST_ERROR"), map[string]string{fakenvml.EnvProcUtilFile: file, fakenvml.EnvProcUtilError: "3"})
	if _, _, r := g.procUtil(0, 4, 4, 0); r != nvmlNotSupported {
		t.Errorf("%s=3: ret %d, want NVML_ERROR_NOT_SUPPORTED", fakenvml.EnvProcUtilError, r)
	}
}

// TestWriteProcUtil: the lines the fake parses.
func TestWriteProcUtil(t *testing.T) {
	file := filepath.Join(t.TempDir(), "procutil")
	if err := fakenvml.WriteProcUtil(file, fakenvml.ProcUtil{GPU: 1, PID: 42, TimeStampUs: 1700000000123456, SMPct: 87, MemPct: 41, EncPct: 2, DecPct: 3}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if want := "1 42 1700000000123456 87 41 2 3\n"; string(b) != want {
		t.Errorf("file %q, want %q", b, want)
	}
}

// TestWriteProcs: the lines the fake parses, "na" for NotAvailable.
func TestWriteProcs(t *testing.T) {
	file := filepath.Join(t.TempDir(), "procs")
	if err := fakenvml.WriteProcs(file, fakenvml.Proc{PID: 42, Bytes: 1 << 20, GPU: 1}, fakenvml.Proc{PID: 7, Bytes: fakenvml.NotAvailable}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if want := "42 1048576 1\n7 na 0\n"; string(b) != want {
		t.Errorf("process file %q, want %q", b, want)
	}
	if _, err := os.Stat(file + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temporary file left behind: %v", err)
	}
}

// TestFromAnotherPackage is the use a test outside instrument/gpumem makes of
// the fake (outside's): a watched process on GPU 1, its GPU busy,
// read through gpumem.
func TestFromAnotherPackage(t *testing.T) {
	fakenvml.Use(t, "FROM_ANOTHER_PACKAGE") // gpumem.Open("") now opens the fake (an instance of its own)
	dir := t.TempDir()
	procs, util := filepath.Join(dir, "procs"), filepath.Join(dir, "util")
	t.Setenv(fakenvml.EnvDevices, "2")
	t.Setenv(fakenvml.EnvProcBytesFile, procs)
	t.Setenv(fakenvml.EnvUtilFile, util)
	const pid = 4242 // any pid: the fake lists what the file says
	if err := fakenvml.WriteProcs(procs, fakenvml.Proc{PID: pid, Bytes: 3 << 20, GPU: 1}); err != nil {
		t.Fatal(err)
	}
	if err := fakenvml.WriteUtil(util, fakenvml.Util{GPU: 1, GPUPct: 75, MemPct: 20}); err != nil {
		t.Fatal(err)
	}
	n, err := gpumem.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	tl := n.Sample(pid, time.Hour).Stop()
	if tl.PeakBytes != 3<<20 || len(tl.Samples) != 2 || tl.MeanGPUUtilPct == nil || *tl.MeanGPUUtilPct != 75 || tl.UtilErrors != 0 {
		t.Errorf("timeline %+v; want 2 samples of 3 MiB at 75%% utilization", tl)
	}
	if g, m, err := n.Utilization(0); !errors.Is(err, gpumem.ErrUtilizationNotSupported) {
		t.Errorf("Utilization(0) = %d, %d, %v; want ErrUtilizationNotSupported (GPU 0 has no line)", g, m, err)
	}
}
