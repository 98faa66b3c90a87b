// Package fakenvml is a test double of NVML (libnvidia-ml.so.1): a C
// shared library (fakenvml.c, compiled with gcc by Build) that exports the
// entry points instrument/gpumem resolves, with their real C signatures, so
// that gpumem and the packages built on it (run/decodebench,
// outside) run their real code paths on a machine with no GPU or
// driver (CI, a laptop). Point gpumem at it with Use (which sets
// EnvLibNVML) or by passing Build's path to gpumem.Open.
//
// What it lists comes from files the test writes and the fake re-reads at
// every query, so a test can change them while a sampler runs:
//
//   - EnvProcBytesFile: the compute processes, one "pid bytes [gpu]" line
//     each (WriteProcs), as nvmlDeviceGetComputeRunningProcesses_v3 lists
//     them; each GPU's used memory is ReservedBytes plus its processes'.
//   - EnvUtilFile: each GPU's utilization, one "index gpuPct memPct" line
//     each (WriteUtil), as nvmlDeviceGetUtilizationRates reports it; a GPU
//     with no line, or no file, gives NVML_ERROR_NOT_SUPPORTED, as a MIG
//     instance does.
//   - EnvProcUtilFile: the driver's buffer of per-process utilization
//     samples, one "gpu pid timeStampUs smPct memPct encPct decPct" line
//     each (WriteProcUtil), as nvmlDeviceGetProcessUtilization returns
//     them: the GPU's samples stamped after the caller's
//     lastSeenTimeStamp, NVML_ERROR_NOT_FOUND when there is none (no
//     file, or nothing new), with nvml.h's size query (a NULL buffer
//     gets NVML_ERROR_INSUFFICIENT_SIZE and the count). The test picks
//     the timestamps, so it decides which reading sees which sample.
//
// The other FAKENVML_* variables (EnvDevices, EnvInitError, ...) are read
// at nvmlInit_v2, that is at gpumem.Open. NVML's init is reference
// counted, and so is the fake's: while an earlier Open of the same library
// instance is not closed, a new Open keeps the settings of the first.
//
// The fake can also list this process with the memory internal/fakecuda
// has handed it (EnvFakeCUDA), under a shifted PID (EnvPIDOffset), for the
// reconciliation of CUDA's and NVML's figures. Error strings end in
// "(fakenvml)" so tests can tell them from text of their own.
//
// Each path returned by Build is one library instance: its state (the
// init count and the settings read at init) is shared by everything that
// opens that path in the process, and Build with other defines gives a
// separate instance.
package fakenvml

import (
	_ "embed"
	"errors"
	"fmt"
	"memprobe/internal/cshared"
	"os"
	"strconv"
	"strings"
	"testing"
)

//go:embed fakenvml.c
var source []byte

// EnvLibNVML is the variable that points gpumem.Open("") at a library;
// equal to gpumem.EnvLibNVML (not imported, so that gpumem's own tests
// can use this package).
const EnvLibNVML = "MEMPROBE_LIBNVML"

// Variables the fake reads at nvmlInit_v2 (gpumem.Open).
const (
	// EnvInitError is the nvmlReturn_t nvmlInit_v2 returns (e.g. "9",
	// NVML_ERROR_DRIVER_NOT_LOADED).
	EnvInitError = "FAKENVML_INIT_ERROR"
	// EnvDevices is the number of GPUs (default 1, at most 8).
	EnvDevices = "FAKENVML_DEVICES"
	// EnvTotalBytes is each GPU's memory in bytes (default TotalBytes).
	EnvTotalBytes = "FAKENVML_TOTAL_BYTES"
	// EnvProcError is the nvmlReturn_t every process query returns.
	EnvProcError = "FAKENVML_PROC_ERROR"
	// EnvProcBytesFile names the process file (WriteProcs), re-read at
	// every query; no file means no processes.
	EnvProcBytesFile = "FAKENVML_PROC_BYTES_FILE"
	// EnvUtilFile names the utilization file (WriteUtil), re-read at every
	// query; no file means every GPU says NVML_ERROR_NOT_SUPPORTED.
	EnvUtilFile = "FAKENVML_UTIL_FILE"
	// EnvProcUtilFile names the per-process utilization file
	// (WriteProcUtil), re-read at every query; no file means no samples
	// (NVML_ERROR_NOT_FOUND).
	EnvProcUtilFile = "FAKENVML_PROC_UTIL_FILE"
	// EnvProcUtilError is the nvmlReturn_t every per-process utilization
	// query returns (e.g. "3", NVML_ERROR_NOT_SUPPORTED, what a MIG
	// instance says).
	EnvProcUtilError = "FAKENVML_PROC_UTIL_ERROR"
	// EnvFakeCUDA names internal/fakecuda's library: when this process
	// has loaded it, the process is listed on GPU 0 with the memory that
	// fake driver has handed it.
	EnvFakeCUDA = "FAKENVML_FAKECUDA"
	// EnvPIDOffset = n lists the EnvFakeCUDA process under its PID plus
	// n, as NVML lists a process of another PID namespace.
	EnvPIDOffset = "FAKENVML_PID_OFFSET"
)

// Envs is every variable the fake reads at init, for a test that sets them
// all (empty means the default) so that one test's settings never reach
// the next Open.
var Envs = []string{EnvInitError, EnvDevices, EnvTotalBytes, EnvProcError, EnvProcBytesFile, EnvUtilFile,
	EnvProcUtilFile, EnvProcUtilError, EnvFakeCUDA, EnvPIDOffset}

// Defines for Build that leave out an entry point gpumem resolves
// optionally, as an older driver or a stripped build lacks it.
const (
	// OmitUtilization: the library lacks nvmlDeviceGetUtilizationRates.
	OmitUtilization = "FAKENVML_OMIT_UTILIZATION"
	// OmitProcessUtilization: the library lacks
	// nvmlDeviceGetProcessUtilization.
	OmitProcessUtilization = "FAKENVML_OMIT_PROCESS_UTILIZATION"
)

// What the fake reports.
const (
	// TotalBytes is each GPU's memory when EnvTotalBytes is not set.
	TotalBytes = 80 << 30
	// ReservedBytes is the driver's reservation on each GPU: used memory
	// to NVML beside the processes' bytes.
	ReservedBytes = 256 << 20
	// NameFormat is each GPU's name, formatted with its index.
	NameFormat = "FakeNVML GPU %d"
	// NotAvailable as a Proc's Bytes is written "na": NVML's
	// NVML_VALUE_NOT_AVAILABLE, a process listed without a figure.
	NotAvailable = ^uint64(0)
)

var (
	// ErrNoCgo is wrapped by Build's error in a build without cgo, where
	// gpumem's NVML binding refuses every library: nothing to test on the
	// fake.
	ErrNoCgo = cshared.ErrNoCgo
	// ErrNoGCC is wrapped by Build's error when gcc is not installed.
	ErrNoGCC = cshared.ErrNoGCC
)

// library is the fake's C source and how gcc builds it, named after the
// driver's soname so that a loader message names what it would.
var library = &cshared.Library{Prefix: "fakenvml", Source: source, SourceName: "fakenvml.c",
	LibName: "libnvidia-ml.so.1", CFlags: []string{"-O2", "-shared", "-fPIC", "-Wall"}}

// Build compiles the fake (once per set of defines in the process) and
// returns the path of the shared library. defines are preprocessor
// definitions, "NAME" or "NAME=VALUE" (a leading -D is accepted):
// OmitUtilization, OmitProcessUtilization, or any otherwise unused name to get a separate library
// instance with its own state. Without cgo the error wraps ErrNoCgo, and
// without gcc ErrNoGCC: a test should skip on those (Use does) and fail on
// any other. Build is for TestMain and for code with no testing.TB; tests
// call Use.
func Build(defines ...string) (string, error) { return library.Build(defines...) }

// Use builds the fake (Build) and points gpumem at it for the test:
// t.Setenv of EnvLibNVML, so the test must not be parallel, and
// gpumem.Open("") opens the fake. It returns the library's path. It skips
// the test without cgo or gcc, and fails it if gcc fails.
func Use(t testing.TB, defines ...string) string {
	t.Helper()
	p, err := Build(defines...)
	if errors.Is(err, ErrNoCgo) || errors.Is(err, ErrNoGCC) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvLibNVML, p)
	return p
}

// Proc is one line of the process file: pid holds Bytes on GPU (Bytes
// NotAvailable: listed without a figure).
type Proc struct {
	PID   int
	Bytes uint64
	GPU   int
}

// Util is one line of the utilization file: GPU's percentages.
type Util struct {
	GPU, GPUPct, MemPct int
}

// ProcUtil is one line of the per-process utilization file: one of the
// driver's samples of PID on GPU, stamped TimeStampUs (NVML's CPU
// timestamp, microseconds), with its utilization in percent over the
// driver's sample period: SM (its kernels running), memory (device memory
// read or written), video encoder and decoder.
type ProcUtil struct {
	GPU, PID                      int
	TimeStampUs                   uint64
	SMPct, MemPct, EncPct, DecPct int
}

// WriteProcUtil replaces the per-process utilization file at path with
// samples (none: the driver has none, NVML_ERROR_NOT_FOUND). To model a
// driver taking new samples, write the old ones again with the new ones
// after them: the fake returns those stamped after the caller's
// lastSeenTimeStamp, as the driver's buffer does.
func WriteProcUtil(path string, samples ...ProcUtil) error {
	var b strings.Builder
	for _, s := range samples {
		fmt.Fprintf(&b, "%d %d %d %d %d %d %d\n", s.GPU, s.PID, s.TimeStampUs, s.SMPct, s.MemPct, s.EncPct, s.DecPct)
	}
	return WriteFile(path, b.String())
}

// WriteProcs replaces the process file at path with procs (none: an
// empty list).
func WriteProcs(path string, procs ...Proc) error {
	var b strings.Builder
	for _, p := range procs {
		bytes := strconv.FormatUint(p.Bytes, 10)
		if p.Bytes == NotAvailable {
			bytes = "na"
		}
		fmt.Fprintf(&b, "%d %s %d\n", p.PID, bytes, p.GPU)
	}
	return WriteFile(path, b.String())
}

// WriteUtil replaces the utilization file at path with utils (a GPU
// without one says NVML_ERROR_NOT_SUPPORTED).
func WriteUtil(path string, utils ...Util) error {
	var b strings.Builder
	for _, u := range utils {
		fmt.Fprintf(&b, "%d %d %d\n", u.GPU, u.GPUPct, u.MemPct)
	}
	return WriteFile(path, b.String())
}

// WriteFile replaces the file at path with content whole (write a
// sibling, then rename), so that the fake, which may read it at any
// moment from a sampler's goroutine, never sees half a file.
func WriteFile(path, content string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
