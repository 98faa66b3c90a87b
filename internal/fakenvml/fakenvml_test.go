package fakenvml_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"memprobe/internal/dl"
	"memprobe/internal/fakenvml"
	"memprobe/probe/gpumem"
)

// NVML's result codes the tests expect (nvml.h).
const (
	nvmlSuccess         = 0
	nvmlNotSupported    = 3
	nvmlInvalidArgument = 2
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

// TestOmitUtilization: the define leaves exactly
// nvmlDeviceGetUtilizationRates out.
func TestOmitUtilization(t *testing.T) {
	full := fakenvml.Use(t)
	omit := fakenvml.Use(t, fakenvml.OmitUtilization)
	for _, tc := range []struct {
		path string
		has  bool
	}{{full, true}, {omit, false}} {
		l, err := dl.Open(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Sym("nvmlDeviceGetUtilizationRates"); (err == nil) != tc.has {
			t.Errorf("%s: nvmlDeviceGetUtilizationRates present = %v, want %v", tc.path, err == nil, tc.has)
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

// TestFromAnotherPackage is the use a test outside probe/gpumem makes of
// the fake (probe/outside's): a watched process on GPU 1, its GPU busy,
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
