// Package cudadrv binds the CUDA driver API (libcuda.so.1) and cuBLAS
// (libcublas.so.N) at run time, so that the cuda device builds, vets and
// tests on every machine: no CUDA header, toolkit or driver is needed to
// compile, and a binary built here runs on a GPU machine that has the
// driver. Each entry point is resolved by its versioned name (cuMemAlloc_v2, not the cuda.h macro cuMemAlloc), which
// is the driver's stable ABI (instrument/gpumem binds NVML the same way).
//
// The libraries are opened and called through internal/dl (dlopen and
// one cgo trampoline for functions of integer-class arguments), so no
// CUDA declaration is needed and a call allocates nothing: a decode loop
// through this package shows no host allocations of its own. On the hot
// path the arguments are integers, device pointers or pointers to C
// memory (pinned host memory from MemHostAlloc); calls with Go
// out-parameters go through callOut. A build without cgo compiles and
// refuses the device in one line.
//
// The entry points of CUDA events (cuEventCreate, cuEventRecord,
// cuEventElapsedTime, cuEventDestroy_v2), which time the GPU's share of
// the work, are resolved optionally: a driver without them still opens,
// Driver.HasEvents says so, and the Event methods return its
// *LibraryError, as the device's work runs the same untimed.
//
// Every function returns an *Error naming the call, the driver's code, its
// name and its description (cuGetErrorName, cuGetErrorString), so that a
// failure reads "cuInit: CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device
// is detected".
package cudadrv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"memprobe/internal/dl"
)

// Env names the variables that point the binding at a particular library
// file (a driver in a non-standard place, or a test's stand-in).
const (
	EnvLibCUDA   = "MEMPROBE_LIBCUDA"
	EnvLibCUBLAS = "MEMPROBE_LIBCUBLAS"
)

// DriverLibrary is the soname the NVIDIA driver installs; it is part of the
// driver, not of the toolkit, so every GPU machine has it.
const DriverLibrary = "libcuda.so.1"

// cuBLASLibraries are the sonames tried, newest first: cuBLAS ships with
// the toolkit or a framework, not the driver, and its major version
// follows CUDA's.
var cuBLASLibraries = []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"}

// Result is a CUresult or cublasStatus_t.
type Result int32

// Driver API codes the binding tests for.
const (
	Success           Result = 0
	ErrNotInitialized Result = 3
	ErrNoDevice       Result = 100
	ErrInvalidDevice  Result = 101
	ErrNotReady       Result = 600
)

// Error is a failed driver or cuBLAS call.
type Error struct {
	Call string // the entry point, e.g. "cuMemAlloc_v2"
	Code Result
	Name string // e.g. "CUDA_ERROR_OUT_OF_MEMORY"; "" if the library gave none
	Desc string // the library's description; "" if none
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: ", e.Call)
	if e.Name != "" {
		fmt.Fprintf(&b, "%s (%d)", e.Name, int(e.Code))
	} else {
		fmt.Fprintf(&b, "error %d", int(e.Code))
	}
	if e.Desc != "" {
		fmt.Fprintf(&b, ": %s", e.Desc)
	}
	return b.String()
}

// LibraryError says a library could not be opened or lacks an entry point.
type LibraryError struct {
	Library string // what was asked for: a soname or a path
	Symbol  string // "" when the library itself was not found
	Reason  string // dlopen's or dlsym's message
}

func (e *LibraryError) Error() string {
	if e.Symbol != "" {
		return fmt.Sprintf("%s lacks %s (a driver or library older than this binary needs?): %s", e.Library, e.Symbol, e.Reason)
	}
	if strings.Contains(e.Library, "libcuda") {
		return fmt.Sprintf("no CUDA driver: %s not found (%s)", e.Library, e.Reason)
	}
	return fmt.Sprintf("%s not found (%s)", e.Library, e.Reason)
}

// ErrNoCgo is returned where this binary was built without cgo.
var ErrNoCgo = errors.New("the cuda device needs a cgo build (this binary was built with CGO_ENABLED=0)")

// ErrNoDriver matches (errors.Is) a LibraryError for a missing driver
// library, so callers and tests can tell "no GPU stack here" from a broken
// one.
var ErrNoDriver = errors.New("no CUDA driver")

// Is reports whether target is ErrNoDriver and e is a missing library.
func (e *LibraryError) Is(target error) bool {
	return target == ErrNoDriver && e.Symbol == "" && strings.Contains(e.Library, "libcuda")
}

// library is an opened shared object.
type library struct {
	name string
	lib  *dl.Library
}

func openLibrary(names []string) (library, error) {
	var first error
	for _, n := range names {
		l, err := dl.Open(n)
		if err == nil {
			return library{name: n, lib: l}, nil
		}
		if err == dl.ErrNoCgo {
			return library{}, ErrNoCgo
		}
		if first == nil {
			first = &LibraryError{Library: n, Reason: strings.TrimSpace(err.Error())}
		}
	}
	return library{}, first
}

// resolve fills each *uintptr in syms with the address of its symbol.
func (l library) resolve(syms map[string]*uintptr) error {
	for name, p := range syms {
		a, err := l.lib.Sym(name)
		if err != nil {
			return &LibraryError{Library: l.name, Symbol: name, Reason: strings.TrimSpace(err.Error())}
		}
		*p = a
	}
	return nil
}

// call invokes fn with integer arguments (no Go pointers) and returns its
// int32 result, allocation-free: the per-token path.
func call(fn uintptr, args ...uintptr) Result { return Result(int32(dl.Call(fn, args...))) }

// callOut is call for calls that pass Go pointers (out-parameters, names)
// as uintptr, through dl.CallOut (go:uintptrescapes). The directive must be
// on this function too: the pointers travel through its arguments.
//
//go:uintptrescapes
func callOut(fn uintptr, args ...uintptr) Result { return Result(int32(dl.CallOut(fn, args...))) }

// callRaw returns fn's whole result register (a pointer result).
func callRaw(fn uintptr, args ...uintptr) uintptr { return dl.Call(fn, args...) }

// libraryNames returns the names to try: the environment's file, else the
// defaults, each also looked for under $CUDA_HOME/lib64 and
// /usr/local/cuda/lib64 (where a toolkit installs cuBLAS without adding
// it to the loader's path).
func libraryNames(env string, defaults []string, searchToolkit bool) []string {
	if p := os.Getenv(env); p != "" {
		return []string{p}
	}
	names := append([]string(nil), defaults...)
	if searchToolkit {
		var dirs []string
		if h := os.Getenv("CUDA_HOME"); h != "" {
			dirs = append(dirs, filepath.Join(h, "lib64"))
		}
		dirs = append(dirs, "/usr/local/cuda/lib64")
		for _, d := range dirs {
			for _, n := range defaults {
				names = append(names, filepath.Join(d, n))
			}
		}
	}
	return names
}

// loaded caches Load and LoadBLAS by library path.
type loaded[T any] struct {
	mu   sync.Mutex
	byAt map[string]result[T]
}

type result[T any] struct {
	v   T
	err error
}

func (l *loaded[T]) get(path string, open func(string) (T, error)) (T, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r, ok := l.byAt[path]; ok {
		return r.v, r.err
	}
	v, err := open(path)
	if l.byAt == nil {
		l.byAt = map[string]result[T]{}
	}
	l.byAt[path] = result[T]{v, err}
	return v, err
}

var (
	drivers loaded[*Driver]
	blases  loaded[*BLAS]
)

// Load opens the driver library ($MEMPROBE_LIBCUDA, else libcuda.so.1),
// resolves every entry point the cuda device uses and calls cuInit, once
// per library path for the process: its result, success or error, is
// kept, as a process has one driver.
func Load() (*Driver, error) {
	return drivers.get(os.Getenv(EnvLibCUDA), OpenDriver)
}

// LoadBLAS is OpenBLAS, once per $MEMPROBE_LIBCUBLAS value for the process.
func LoadBLAS() (*BLAS, error) {
	return blases.get(os.Getenv(EnvLibCUBLAS), func(string) (*BLAS, error) { return OpenBLAS() })
}
