// Package fakecuda is a test double of the CUDA driver API and cuBLAS: a C
// shared library (fakecuda.c, compiled with gcc by Build) that exports the
// entry points trainer/device/cudadrv resolves, with their real C
// signatures, and implements them on the host. One file serves as both
// libcuda and libcublas: Use points MEMPROBE_LIBCUDA and MEMPROBE_LIBCUBLAS
// at it, so that the binding and the cuda device run their real code paths
// on a machine with no GPU, driver or toolkit (CI, a laptop).
//
// It is faithful where a bug in the Go side would otherwise hide:
//
//   - Streams are deferred: a copy, memset, kernel launch or GEMM enqueued on
//     a stream runs only at cuStreamSynchronize (or cuStreamDestroy_v2, or
//     cuMemFree_v2 and cuMemFreeHost, which wait for every stream as the
//     driver's do). Reading a device-to-host result before the sync, or
//     overwriting a staging buffer that a queued host-to-device copy has yet
//     to read, gives wrong values, as on a GPU.
//   - The current context is thread-local (cuCtxSetCurrent), and every
//     memory, stream, module, launch and cuBLAS call needs one: a call from
//     an OS thread the context was not made current on fails with
//     CUDA_ERROR_INVALID_CONTEXT, so a missing runtime.LockOSThread or
//     CtxSetCurrent shows up.
//   - Pinned and pageable host memory differ: a copy whose host side is not
//     inside a cuMemHostAlloc block is done, but counted
//     (Counters.PageableCopies), since the real driver would stage it and
//     block the host.
//   - Events are stream work (cuEventRecord enqueues a record that takes
//     the time when the stream runs it): until the sync,
//     cuEventElapsedTime returns CUDA_ERROR_NOT_READY, and an event never
//     recorded, or made with CU_EVENT_DISABLE_TIMING, gives
//     CUDA_ERROR_INVALID_HANDLE, so a device that reads its timing before
//     waiting, or times an event it never recorded, fails as on a GPU.
//     Because a stream's work runs in one burst at the sync, the time
//     between two events is the host time the fake spent running the work
//     recorded between them (real loops: memsets, copies, the GEMM,
//     softmax): positive when there is work between them, but not a GPU's
//     time, and without the idle gaps a GPU shows while it waits for the
//     host's next enqueue. Re-recording an event makes it pending until
//     the new record runs; destroying one whose record is still queued is
//     safe (the record then does nothing, even when EnvReuseAddresses has
//     handed the handle to a new event; without it a destroyed handle is
//     refused).
//   - cuLaunchKernel reads the kernel's parameters at launch, as the driver
//     copies them; changing the parameter block after the launch does not
//     change what runs. The softmax_sample kernel is computed on the host as
//     trainer/device's softmaxSampleRows defines it (expf/logf in float, a
//     NaN loss for a target that is not a token id, as the CUDA kernel).
//   - Device memory is not host memory: a CUdeviceptr lies in an address
//     range no host allocation uses, and fresh device memory holds NaNs,
//     not zeros. Copies, memsets, launches and GEMMs must stay inside one
//     allocation. Addresses are never reused (a stale pointer is refused),
//     unless EnvReuseAddresses asks the fake to reuse them as the driver's
//     allocator does, so that a stale pointer names a live allocation.
//   - cuMemGetInfo counts what the driver would: the primary context (500
//     MiB), each loaded module (2 MiB), allocations packed into 2 MiB pages
//     (their live total rounded up to 2 MiB, as an H100 with driver 580
//     charged them; EnvHiddenBytes adds memory beside each), each cuBLAS
//     handle's workspace (32 MiB, made by its first Sgemm), what
//     EnvLeakPerLaunchBytes leaks at each kernel launch, and cuBLAS's kernels (12 MiB, loaded into the context by the first Sgemm
//     made in it, as CUDA >= 12.2 loads modules lazily, and kept until the
//     context is destroyed, after every handle is gone).
//   - The driver's reservation (EnvReservedBytes) is outside what CUDA
//     reports, as on a GPU: CUDA's total (cuDeviceTotalMem, cuMemGetInfo)
//     is the physical memory (EnvTotalBytes) less the reservation, and
//     CUDA's free is the physical memory less the reservation and what the
//     process holds: NVML's free, while NVML's total is the physical one.
//   - Errors carry the real codes, names and descriptions; FAKECUDA_*
//     variables (EnvInitError, EnvFailLaunch, ...) make cuInit fail, a
//     launch fail when it runs (sticky, CUDA_ERROR_LAUNCH_FAILED),
//     cublasCreate_v2 fail, or the device small enough to run out of
//     memory.
//
// What it cannot check is the PTX itself: the kernel's code, its launch
// bounds and its arithmetic run only on a GPU (scripts/gpu-check.sh). Nor
// does it model concurrency between streams: a stream's work runs on the
// host thread that waits for it, under one lock.
//
// Each path returned by Build is one library instance: the state (contexts,
// allocations, counters) is shared by everything that opens that path in
// the process, and Build with other defines gives a separate instance.
package fakecuda

import (
	_ "embed"
	"errors"
	"fmt"
	"memprobe/internal/cshared"
	"testing"

	"memprobe/internal/dl"
)

//go:embed fakecuda.c
var source []byte

// The variables that point trainer/device/cudadrv at a library; equal to
// cudadrv.EnvLibCUDA and cudadrv.EnvLibCUBLAS (not imported, so that
// cudadrv's own tests can use this package).
const (
	EnvLibCUDA   = "MEMPROBE_LIBCUDA"
	EnvLibCUBLAS = "MEMPROBE_LIBCUBLAS"
)

// Variables the fake reads at each use.
const (
	// EnvInitError is the CUresult cuInit returns (e.g. "100").
	EnvInitError = "FAKECUDA_INIT_ERROR"
	// EnvDevices is the number of GPUs (default 1; 0 makes cuInit return
	// CUDA_ERROR_NO_DEVICE).
	EnvDevices = "FAKECUDA_DEVICES"
	// EnvTotalBytes is each GPU's physical memory in bytes (default
	// TotalBytes): NVML's total. CUDA reports it less EnvReservedBytes.
	EnvTotalBytes = "FAKECUDA_TOTAL_BYTES"
	// EnvReservedBytes is the driver's own reservation on each GPU (default
	// 0): used memory to NVML, and outside CUDA's total.
	EnvReservedBytes = "FAKECUDA_RESERVED_BYTES"
	// EnvUnchargedBytes is device memory each GPU's context takes that
	// NVML charges to no process (default 0), as an H100 with driver 580
	// showed (5.56 MiB): while the context exists it is used memory to
	// CUDA's free and to NVML's (fakenvml asks for it), but not in
	// fakecuda_process_bytes, NVML's per-process figure.
	EnvUnchargedBytes = "FAKECUDA_UNCHARGED_BYTES"
	// EnvHiddenBytes is device memory each cuMemAlloc_v2 takes beside what
	// it was asked for (default 0), outside the 2 MiB pages, until it is
	// freed: charged to the process (CUDA's free, NVML's per-process
	// figure) but in no ledger of the caller's, so that a reconciliation
	// has memory it cannot name.
	EnvHiddenBytes = "FAKECUDA_HIDDEN_BYTES"
	// EnvLeakPerLaunchBytes is device memory each accepted cuLaunchKernel
	// takes and keeps until the context is destroyed (default 0): charged
	// to the process (CUDA's free, NVML's per-process figure), in no
	// ledger, made while a decoder runs, after every set-up allocation and
	// outside cuBLAS's calls, as a leak in a driver or library would be.
	// LeakedBytes says how much it has taken.
	EnvLeakPerLaunchBytes = "FAKECUDA_LEAK_PER_LAUNCH_BYTES"
	// EnvFailLaunch = n: the n-th cuLaunchKernel the process makes (1-based,
	// see Counters.Launches) is accepted, and when it runs its stream
	// fails: that stream's syncs return CUDA_ERROR_LAUNCH_FAILED from then
	// on, and so do later enqueues on it.
	EnvFailLaunch = "FAKECUDA_FAIL_LAUNCH"
	// EnvReuseAddresses = 1: cuMemAlloc_v2 hands out the most recently
	// freed address whose charged size (rounded up to Granularity) is the
	// one asked for, as the driver's allocator does, instead of a fresh
	// one; a stale CUdeviceptr then names a live allocation. cuEventCreate
	// likewise returns the most recently destroyed event's handle.
	EnvReuseAddresses = "FAKECUDA_REUSE_ADDRESSES"
	// EnvFailBLASCreate = 1: cublasCreate_v2 returns
	// CUBLAS_STATUS_NOT_INITIALIZED (1), as when cuBLAS cannot set itself up
	// in the context.
	EnvFailBLASCreate = "FAKECUDA_FAIL_BLAS_CREATE"
)

// Defines for Build that leave entry points out of the library.
const (
	// OmitDtoH: the library lacks cuMemcpyDtoHAsync_v2, as a driver too
	// old for the binding would.
	OmitDtoH = "FAKECUDA_OMIT_DTOH"
	// OmitEvents: the library lacks cuEventCreate, cuEventRecord,
	// cuEventElapsedTime and cuEventDestroy_v2, which the binding resolves
	// optionally (the device then runs untimed).
	OmitEvents = "FAKECUDA_OMIT_EVENTS"
)

// What the fake reports and charges.
const (
	DeviceName     = "Fake GPU (memprobe test double)"
	DriverVersion  = 13000
	BLASVersion    = 130100
	TotalBytes     = 80 << 30 // default memory per GPU
	ContextBytes   = 500 << 20
	ModuleBytes    = 2 << 20
	WorkspaceBytes = 32 << 20 // per cuBLAS handle, from its first Sgemm
	// BLASKernelBytes is cuBLAS's kernels in a context: charged by the
	// first Sgemm in the context's lifetime, whichever handle makes it, and
	// released only when the context is destroyed.
	BLASKernelBytes = 12 << 20
	// Granularity is the page allocations are packed into: their live
	// total is charged rounded up to it.
	Granularity = 2 << 20
)

// library is the fake's C source and how gcc builds it.
var library = &cshared.Library{Prefix: "fakecuda", Source: source, SourceName: "fakecuda.c", LibName: "libfakecuda.so",
	CFlags: []string{"-O2", "-shared", "-fPIC", "-pthread", "-ffp-contract=off"}, LDLibs: []string{"-lm"}}

// Build compiles the fake (once per set of defines in the test process) and
// returns the path of the shared library. defines are preprocessor
// definitions, "NAME" or "NAME=VALUE" (a leading -D is accepted): OmitDtoH,
// OmitEvents, or any otherwise unused name to get a separate library
// instance with its own state. Build skips the test when gcc is not installed, and in a
// build without cgo (where the binding refuses every library).
func Build(t testing.TB, defines ...string) string {
	t.Helper()
	lib, err := library.Build(defines...)
	switch {
	case errors.Is(err, cshared.ErrNoCgo):
		t.Skip("CGO_ENABLED=0: the cuda device's binding (trainer/device/cudadrv) needs cgo, so there is nothing to test on the fake driver")
	case errors.Is(err, cshared.ErrNoGCC):
		t.Skip("gcc not found: the fake CUDA driver (internal/fakecuda) cannot be built")
	case err != nil:
		t.Fatal(err)
	}
	return lib
}

// Use builds the fake (Build) and points the binding at it for the test:
// t.Setenv of EnvLibCUDA and EnvLibCUBLAS (so the test must not be
// parallel). It returns the library's path. cudadrv.Load and LoadBLAS
// open a library once per process: tests that need a fresh instance call
// cudadrv.OpenDriver(path) directly.
func Use(t testing.TB, defines ...string) string {
	t.Helper()
	p := Build(t, defines...)
	t.Setenv(EnvLibCUDA, p)
	t.Setenv(EnvLibCUBLAS, p)
	return p
}

// Counters are the fake's state as the test queries see it.
type Counters struct {
	PageableCopies int // copies whose host side was not pinned (since ResetCounters)
	LiveAllocs     int // cuMemAlloc_v2 not yet freed
	LivePinned     int // cuMemHostAlloc not yet freed
	LiveStreams    int // cuStreamCreate not yet destroyed
	LiveHandles    int // cuBLAS handles not yet destroyed
	LiveModules    int // modules loaded and not unloaded
	LiveEvents     int // cuEventCreate not yet destroyed
	CtxRefs        int // retains of GPU 0's primary context
	Launches       int // cuLaunchKernel calls accepted by the process
}

// ReadCounters reads the counters of the library instance at path (a path
// from Build). The loader returns the instance the binding opened, so
// the counters are those of the library the code under test used.
func ReadCounters(path string) (Counters, error) {
	var c Counters
	err := withLibrary(path, func(call func(string, ...uintptr) int) {
		c = Counters{
			PageableCopies: call("fakecuda_pageable_copies"),
			LiveAllocs:     call("fakecuda_live_allocs"),
			LivePinned:     call("fakecuda_live_pinned"),
			LiveStreams:    call("fakecuda_live_streams"),
			LiveHandles:    call("fakecuda_live_handles"),
			LiveModules:    call("fakecuda_live_modules"),
			LiveEvents:     call("fakecuda_live_events"),
			CtxRefs:        call("fakecuda_ctx_refs", 0),
			Launches:       call("fakecuda_launches"),
		}
	})
	return c, err
}

// CtxRefs returns the reference count of GPU dev's primary context, -1 for
// a device the fake cannot have.
func CtxRefs(path string, dev int) (int, error) {
	var n int
	err := withLibrary(path, func(call func(string, ...uintptr) int) { n = call("fakecuda_ctx_refs", uintptr(dev)) })
	return n, err
}

// ProcessBytes returns the device memory this process holds on GPU dev in
// the library instance at path (fakecuda_process_bytes: context, modules,
// allocations, cuBLAS workspaces and kernels, not the driver's
// reservation): what a stand-in NVML lists for the process.
func ProcessBytes(path string, dev int) (uint64, error) {
	lib, err := dl.Open(path)
	if err != nil {
		return 0, fmt.Errorf("fakecuda: %s: %w", path, err)
	}
	defer lib.Close()
	sym, err := lib.Sym("fakecuda_process_bytes")
	if err != nil {
		return 0, fmt.Errorf("fakecuda: %s: %w", path, err)
	}
	return uint64(dl.Call(sym, uintptr(dev))), nil
}

// LeakedBytes returns what EnvLeakPerLaunchBytes has taken on GPU dev
// since its context was made, in the library instance at path.
func LeakedBytes(path string, dev int) (uint64, error) {
	lib, err := dl.Open(path)
	if err != nil {
		return 0, fmt.Errorf("fakecuda: %s: %w", path, err)
	}
	defer lib.Close()
	sym, err := lib.Sym("fakecuda_leaked_bytes")
	if err != nil {
		return 0, fmt.Errorf("fakecuda: %s: %w", path, err)
	}
	return uint64(dl.Call(sym, uintptr(dev))), nil
}

// ResetCounters sets the counters that count events (PageableCopies) to 0.
func ResetCounters(path string) error {
	return withLibrary(path, func(call func(string, ...uintptr) int) { call("fakecuda_reset_counters") })
}

// withLibrary opens path and hands f a caller of its int-returning
// functions.
func withLibrary(path string, f func(call func(name string, args ...uintptr) int)) (err error) {
	lib, err := dl.Open(path)
	if err != nil {
		return fmt.Errorf("fakecuda: %s: %w", path, err)
	}
	defer func() {
		if cerr := lib.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	var missing error
	f(func(name string, args ...uintptr) int {
		sym, err := lib.Sym(name)
		if err != nil {
			missing = errors.Join(missing, fmt.Errorf("fakecuda: %s: %w", path, err))
			return 0
		}
		return int(int32(dl.Call(sym, args...)))
	})
	return missing
}
