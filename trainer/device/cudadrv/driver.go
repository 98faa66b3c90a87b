package cudadrv

import (
	"unsafe"

	"memprobe/internal/dl"
)

// DevicePtr is a CUdeviceptr: an address in the GPU's memory.
type DevicePtr uint64

// Handles the driver hands out (CUcontext, CUstream, CUmodule, CUfunction,
// CUevent); opaque addresses.
type (
	Context  uintptr
	Stream   uintptr
	Module   uintptr
	Function uintptr
	Event    uintptr
)

// Stream and host allocation flags (cuda.h).
const (
	StreamNonBlocking    = 0x1 // CU_STREAM_NON_BLOCKING: no implicit sync with the legacy default stream
	MemHostAllocPortable = 0x1 // CU_MEMHOSTALLOC_PORTABLE: pinned for every context
)

// Event flags (cuda.h) for EventCreate.
const (
	EventDefault       = 0x0 // CU_EVENT_DEFAULT: timed
	EventDisableTiming = 0x2 // CU_EVENT_DISABLE_TIMING: cheaper, but EventElapsedTime refuses it
)

// eventSymbols are the entry points of CUDA events, which OpenDriver
// resolves optionally, in this order (the first missing one is named).
var eventSymbols = [...]string{"cuEventCreate", "cuEventRecord", "cuEventElapsedTime", "cuEventDestroy_v2"}

// Driver is the CUDA driver API of one opened libcuda.
type Driver struct {
	Library string // the file or soname opened

	cuInit, cuDriverGetVersion, cuGetErrorName, cuGetErrorString           uintptr
	cuDeviceGetCount, cuDeviceGet, cuDeviceGetName, cuDeviceTotalMem       uintptr
	cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRelease, cuCtxSetCurrent   uintptr
	cuMemAlloc, cuMemFree, cuMemsetD32Async, cuMemHostAlloc, cuMemFreeHost uintptr
	cuMemcpyHtoDAsync, cuMemcpyDtoHAsync, cuMemGetInfo                     uintptr
	cuStreamCreate, cuStreamDestroy, cuStreamSynchronize                   uintptr
	cuModuleLoadData, cuModuleUnload, cuModuleGetFunction, cuLaunchKernel  uintptr

	// Optional: timing a stream's work. noEvents holds, by symbol, why
	// each of eventSymbols that did not resolve is missing; empty when
	// all four did.
	cuEventCreate, cuEventRecord, cuEventElapsedTime, cuEventDestroy uintptr
	noEvents                                                         map[string]error
}

// OpenDriver opens the driver library at path ("" = libcuda.so.1 on the
// loader's path), resolves the entry points and calls cuInit(0). Most
// callers want Load, which does this once per process.
func OpenDriver(path string) (*Driver, error) {
	names := []string{DriverLibrary}
	if path != "" {
		names = []string{path}
	}
	lib, err := openLibrary(names)
	if err != nil {
		return nil, err
	}
	d := &Driver{Library: lib.name}
	if err := lib.resolve(map[string]*uintptr{
		"cuInit":                       &d.cuInit,
		"cuDriverGetVersion":           &d.cuDriverGetVersion,
		"cuGetErrorName":               &d.cuGetErrorName,
		"cuGetErrorString":             &d.cuGetErrorString,
		"cuDeviceGetCount":             &d.cuDeviceGetCount,
		"cuDeviceGet":                  &d.cuDeviceGet,
		"cuDeviceGetName":              &d.cuDeviceGetName,
		"cuDeviceTotalMem_v2":          &d.cuDeviceTotalMem,
		"cuDevicePrimaryCtxRetain":     &d.cuDevicePrimaryCtxRetain,
		"cuDevicePrimaryCtxRelease_v2": &d.cuDevicePrimaryCtxRelease,
		"cuCtxSetCurrent":              &d.cuCtxSetCurrent,
		"cuMemAlloc_v2":                &d.cuMemAlloc,
		"cuMemFree_v2":                 &d.cuMemFree,
		"cuMemsetD32Async":             &d.cuMemsetD32Async,
		"cuMemHostAlloc":               &d.cuMemHostAlloc,
		"cuMemFreeHost":                &d.cuMemFreeHost,
		"cuMemcpyHtoDAsync_v2":         &d.cuMemcpyHtoDAsync,
		"cuMemcpyDtoHAsync_v2":         &d.cuMemcpyDtoHAsync,
		"cuMemGetInfo_v2":              &d.cuMemGetInfo,
		"cuStreamCreate":               &d.cuStreamCreate,
		"cuStreamDestroy_v2":           &d.cuStreamDestroy,
		"cuStreamSynchronize":          &d.cuStreamSynchronize,
		"cuModuleLoadData":             &d.cuModuleLoadData,
		"cuModuleUnload":               &d.cuModuleUnload,
		"cuModuleGetFunction":          &d.cuModuleGetFunction,
		"cuLaunchKernel":               &d.cuLaunchKernel,
	}); err != nil {
		return nil, err
	}
	// Events only time the device's work, which runs the same without
	// them: a driver that lacks them still opens (HasEvents says which).
	// cuEventElapsedTime is the v1 symbol, which every driver exports.
	for i, p := range [len(eventSymbols)]*uintptr{&d.cuEventCreate, &d.cuEventRecord, &d.cuEventElapsedTime, &d.cuEventDestroy} {
		if err := lib.resolve(map[string]*uintptr{eventSymbols[i]: p}); err != nil {
			if d.noEvents == nil {
				d.noEvents = map[string]error{}
			}
			d.noEvents[eventSymbols[i]] = err
		}
	}
	if err := d.check("cuInit", call(d.cuInit, 0)); err != nil {
		return nil, err
	}
	return d, nil
}

// check turns a CUresult into nil or an *Error with the driver's own name
// and description of the code.
func (d *Driver) check(callName string, r Result) error {
	if r == Success {
		return nil
	}
	e := &Error{Call: callName, Code: r}
	var p uintptr
	if callOut(d.cuGetErrorName, uintptr(uint32(r)), uintptr(unsafe.Pointer(&p))) == Success {
		e.Name = dl.GoString(p)
	}
	p = 0
	if callOut(d.cuGetErrorString, uintptr(uint32(r)), uintptr(unsafe.Pointer(&p))) == Success {
		e.Desc = dl.GoString(p)
	}
	return e
}

// Version is the driver's CUDA version as cuDriverGetVersion gives it
// (1000*major + 10*minor: 13000 for CUDA 13.0).
func (d *Driver) Version() (int, error) {
	var v int32
	err := d.check("cuDriverGetVersion", callOut(d.cuDriverGetVersion, uintptr(unsafe.Pointer(&v))))
	return int(v), err
}

// DeviceCount is the number of GPUs the driver sees.
func (d *Driver) DeviceCount() (int, error) {
	var n int32
	err := d.check("cuDeviceGetCount", callOut(d.cuDeviceGetCount, uintptr(unsafe.Pointer(&n))))
	return int(n), err
}

// Device is a CUdevice: the driver's handle of GPU ordinal.
type Device int32

// Device returns the handle of GPU ordinal.
func (d *Driver) Device(ordinal int) (Device, error) {
	var dev int32
	err := d.check("cuDeviceGet", callOut(d.cuDeviceGet, uintptr(unsafe.Pointer(&dev)), uintptr(ordinal)))
	return Device(dev), err
}

// DeviceName is the GPU's marketing name ("NVIDIA H100 80GB HBM3").
func (d *Driver) DeviceName(dev Device) (string, error) {
	buf := make([]byte, 256)
	if err := d.check("cuDeviceGetName", callOut(d.cuDeviceGetName, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), uintptr(dev))); err != nil {
		return "", err
	}
	n := 0
	for n < len(buf) && buf[n] != 0 {
		n++
	}
	return string(buf[:n]), nil
}

// DeviceTotalMem is the GPU's memory in bytes.
func (d *Driver) DeviceTotalMem(dev Device) (uint64, error) {
	var n uint64
	err := d.check("cuDeviceTotalMem_v2", callOut(d.cuDeviceTotalMem, uintptr(unsafe.Pointer(&n)), uintptr(dev)))
	return n, err
}

// PrimaryCtxRetain returns the device's primary context, the one context
// per process and GPU that the runtime API and libraries such as cuBLAS
// share; each Retain is balanced by a PrimaryCtxRelease.
func (d *Driver) PrimaryCtxRetain(dev Device) (Context, error) {
	var c uintptr
	err := d.check("cuDevicePrimaryCtxRetain", callOut(d.cuDevicePrimaryCtxRetain, uintptr(unsafe.Pointer(&c)), uintptr(dev)))
	return Context(c), err
}

// PrimaryCtxRelease drops one reference to the primary context.
func (d *Driver) PrimaryCtxRelease(dev Device) error {
	return d.check("cuDevicePrimaryCtxRelease_v2", call(d.cuDevicePrimaryCtxRelease, uintptr(dev)))
}

// CtxSetCurrent binds c to the calling OS thread; the caller holds the
// thread (runtime.LockOSThread) for as long as it uses the binding.
func (d *Driver) CtxSetCurrent(c Context) error {
	return d.check("cuCtxSetCurrent", call(d.cuCtxSetCurrent, uintptr(c)))
}

// MemAlloc allocates bytes of device memory.
func (d *Driver) MemAlloc(bytes int) (DevicePtr, error) {
	var p uint64
	err := d.check("cuMemAlloc_v2", callOut(d.cuMemAlloc, uintptr(unsafe.Pointer(&p)), uintptr(bytes)))
	return DevicePtr(p), err
}

// MemFree frees device memory from MemAlloc.
func (d *Driver) MemFree(p DevicePtr) error {
	return d.check("cuMemFree_v2", call(d.cuMemFree, uintptr(p)))
}

// MemsetD32Async enqueues n 32-bit words of value v at p.
func (d *Driver) MemsetD32Async(p DevicePtr, v uint32, n int, s Stream) error {
	return d.check("cuMemsetD32Async", call(d.cuMemsetD32Async, uintptr(p), uintptr(v), uintptr(n), uintptr(s)))
}

// MemHostAlloc allocates bytes of page-locked host memory, which the GPU's
// copy engines read and write directly: a copy from it is asynchronous,
// where one from pageable memory is staged and blocks the host.
func (d *Driver) MemHostAlloc(bytes int) (uintptr, error) {
	var p uintptr
	err := d.check("cuMemHostAlloc", callOut(d.cuMemHostAlloc, uintptr(unsafe.Pointer(&p)), uintptr(bytes), MemHostAllocPortable))
	return p, err
}

// MemFreeHost frees memory from MemHostAlloc.
func (d *Driver) MemFreeHost(p uintptr) error {
	return d.check("cuMemFreeHost", call(d.cuMemFreeHost, p))
}

// MemcpyHtoDAsync enqueues a copy of bytes from host address src (pinned)
// to dst.
func (d *Driver) MemcpyHtoDAsync(dst DevicePtr, src uintptr, bytes int, s Stream) error {
	return d.check("cuMemcpyHtoDAsync_v2", call(d.cuMemcpyHtoDAsync, uintptr(dst), src, uintptr(bytes), uintptr(s)))
}

// MemcpyDtoHAsync enqueues a copy of bytes from src to host address dst
// (pinned).
func (d *Driver) MemcpyDtoHAsync(dst uintptr, src DevicePtr, bytes int, s Stream) error {
	return d.check("cuMemcpyDtoHAsync_v2", call(d.cuMemcpyDtoHAsync, dst, uintptr(src), uintptr(bytes), uintptr(s)))
}

// MemGetInfo returns the free and total memory of the current context's
// GPU, in bytes, as the driver counts it (every process's use included).
func (d *Driver) MemGetInfo() (free, total uint64, err error) {
	err = d.check("cuMemGetInfo_v2", callOut(d.cuMemGetInfo, uintptr(unsafe.Pointer(&free)), uintptr(unsafe.Pointer(&total))))
	return free, total, err
}

// StreamCreate makes a stream with flags (StreamNonBlocking).
func (d *Driver) StreamCreate(flags uint32) (Stream, error) {
	var s uintptr
	err := d.check("cuStreamCreate", callOut(d.cuStreamCreate, uintptr(unsafe.Pointer(&s)), uintptr(flags)))
	return Stream(s), err
}

// StreamDestroy destroys s once its queued work is done.
func (d *Driver) StreamDestroy(s Stream) error {
	return d.check("cuStreamDestroy_v2", call(d.cuStreamDestroy, uintptr(s)))
}

// StreamSynchronize blocks the calling thread until s is idle, and returns
// the first error of its work.
func (d *Driver) StreamSynchronize(s Stream) error {
	return d.check("cuStreamSynchronize", call(d.cuStreamSynchronize, uintptr(s)))
}

// ModuleLoadData loads a module from image, NUL-terminated PTX (which
// the driver JIT-compiles for the GPU) or a cubin, in C memory.
func (d *Driver) ModuleLoadData(image uintptr) (Module, error) {
	var m uintptr
	err := d.check("cuModuleLoadData", callOut(d.cuModuleLoadData, uintptr(unsafe.Pointer(&m)), image))
	return Module(m), err
}

// ModuleUnload unloads m.
func (d *Driver) ModuleUnload(m Module) error {
	return d.check("cuModuleUnload", call(d.cuModuleUnload, uintptr(m)))
}

// ModuleGetFunction returns the kernel name of m.
func (d *Driver) ModuleGetFunction(m Module, name string) (Function, error) {
	cname := append([]byte(name), 0)
	var f uintptr
	err := d.check("cuModuleGetFunction", callOut(d.cuModuleGetFunction, uintptr(unsafe.Pointer(&f)), uintptr(m), uintptr(unsafe.Pointer(&cname[0]))))
	return Function(f), err
}

// LaunchKernel enqueues f on s with grid × block threads. params is the
// address of an array of pointers, one per kernel parameter, each to the
// parameter's value; all of it in C memory (see ParamBlock).
func (d *Driver) LaunchKernel(f Function, grid, block [3]uint32, sharedBytes uint32, s Stream, params uintptr) error {
	return d.check("cuLaunchKernel", call(d.cuLaunchKernel, uintptr(f),
		uintptr(grid[0]), uintptr(grid[1]), uintptr(grid[2]),
		uintptr(block[0]), uintptr(block[1]), uintptr(block[2]),
		uintptr(sharedBytes), uintptr(s), params, 0))
}

// HasEvents reports whether the driver has all four event entry points
// (cuEventCreate, cuEventRecord, cuEventElapsedTime, cuEventDestroy_v2);
// without them the Event methods return a *LibraryError and the device's
// work cannot be timed.
func (d *Driver) HasEvents() bool { return len(d.noEvents) == 0 }

// eventsMissing is nil when the event entry points resolved, else the
// *LibraryError of sym when sym is the missing one, or of the first one
// missing: the methods use them together, so none is called without all.
func (d *Driver) eventsMissing(sym string) error {
	if len(d.noEvents) == 0 {
		return nil
	}
	if err, ok := d.noEvents[sym]; ok {
		return err
	}
	for _, s := range eventSymbols {
		if err, ok := d.noEvents[s]; ok {
			return err
		}
	}
	return nil
}

// EventCreate makes an event in the current context with flags
// (EventDefault: timed).
func (d *Driver) EventCreate(flags uint32) (Event, error) {
	if err := d.eventsMissing("cuEventCreate"); err != nil {
		return 0, err
	}
	var e uintptr
	err := d.check("cuEventCreate", callOut(d.cuEventCreate, uintptr(unsafe.Pointer(&e)), uintptr(flags)))
	return Event(e), err
}

// EventRecord enqueues e on s: the event completes, taking the GPU's time,
// when s reaches it, after the work enqueued before it. Recording an event
// again makes it stand for the new point. It allocates nothing, as it may
// be called around every host wait.
func (d *Driver) EventRecord(e Event, s Stream) error {
	if err := d.eventsMissing("cuEventRecord"); err != nil {
		return err
	}
	return d.check("cuEventRecord", call(d.cuEventRecord, uintptr(e), uintptr(s)))
}

// EventElapsedTime is the time in milliseconds from start to end (about
// half a microsecond of resolution; negative if end completed first).
// Both must be recorded, timed (not EventDisableTiming) and completed:
// an event whose stream has yet to reach it gives an *Error of
// ErrNotReady, one never recorded CUDA_ERROR_INVALID_HANDLE. Its float
// out-parameter goes through callOut, which costs two small heap
// allocations a call; EventElapsedTimeInto costs none.
func (d *Driver) EventElapsedTime(start, end Event) (float32, error) {
	if err := d.eventsMissing("cuEventElapsedTime"); err != nil {
		return 0, err
	}
	var ms float32
	err := d.check("cuEventElapsedTime", callOut(d.cuEventElapsedTime, uintptr(unsafe.Pointer(&ms)), uintptr(start), uintptr(end)))
	return ms, err
}

// EventElapsedTimeInto is EventElapsedTime writing the milliseconds to
// the float32 at ms, in C memory (a slot of pinned host memory from
// MemHostAlloc), so that it allocates nothing: for reading the time after
// every host wait of a decode loop. The slot is written only on success.
func (d *Driver) EventElapsedTimeInto(ms uintptr, start, end Event) error {
	if err := d.eventsMissing("cuEventElapsedTime"); err != nil {
		return err
	}
	return d.check("cuEventElapsedTime", call(d.cuEventElapsedTime, ms, uintptr(start), uintptr(end)))
}

// EventDestroy destroys e; a record of it still queued completes without
// it.
func (d *Driver) EventDestroy(e Event) error {
	if err := d.eventsMissing("cuEventDestroy_v2"); err != nil {
		return err
	}
	return d.check("cuEventDestroy_v2", call(d.cuEventDestroy, uintptr(e)))
}
