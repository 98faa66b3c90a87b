//go:build cgo

package gpumem

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"unsafe"

	"memprobe/internal/dl"
)

// NVML's result codes that the binding tests for (nvml.h).
const (
	nvmlSuccess          = 0
	nvmlNotSupported     = 3
	nvmlNotFound         = 6
	nvmlInsufficientSize = 7
)

// notAvailable is NVML_VALUE_NOT_AVAILABLE as an unsigned long long: what
// NVML puts in usedGpuMemory when it cannot attribute memory (WDDM,
// missing permission).
const notAvailable = ^uint64(0)

// nvmlMemory is nvml.h's nvmlMemory_t.
type nvmlMemory struct{ total, free, used uint64 }

// nvmlUtilization is nvml.h's nvmlUtilization_t: percent of NVML's last
// sample period during which a kernel ran (gpu) and during which device
// memory was read or written (memory).
type nvmlUtilization struct{ gpu, memory uint32 }

// utilizationCall and processUtilizationCall are the optional entry
// points: they are not needed for the memory figures, and a library
// without them (an old driver, a stand-in, a stripped build) still opens.
const (
	utilizationCall        = "nvmlDeviceGetUtilizationRates"
	processUtilizationCall = "nvmlDeviceGetProcessUtilization"
)

// nvmlProcessUtilizationSample is nvml.h's nvmlProcessUtilizationSample_t,
// what nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
// nvmlProcessUtilizationSample_t *utilization, unsigned int
// *processSamplesCount, unsigned long long lastSeenTimeStamp) fills: one
// process's utilization over one of the driver's sample periods, stamped
// with the CPU time in microseconds (32 bytes: pid, padding, timeStamp,
// then the four percentages).
type nvmlProcessUtilizationSample struct {
	pid       uint32
	_         uint32
	timeStamp uint64
	smUtil    uint32 // SM (3D/compute): the share of the period its kernels ran
	memUtil   uint32 // frame buffer: the share during which it read or wrote device memory
	encUtil   uint32
	decUtil   uint32
}

// The layout is checked at compile time: a wrong size fails the build.
var _ [32]byte = [unsafe.Sizeof(nvmlProcessUtilizationSample{})]byte{}
var _ [8]byte = [unsafe.Offsetof(nvmlProcessUtilizationSample{}.timeStamp)]byte{}

// nvmlProcessInfo is nvml.h's nvmlProcessInfo_t of the _v2 and _v3 process
// queries (24 bytes: pid, padding, usedGpuMemory, the MIG instance ids).
type nvmlProcessInfo struct {
	pid               uint32
	_                 uint32
	usedGPUMemory     uint64
	gpuInstanceID     uint32
	computeInstanceID uint32
}

// NVML is an initialised NVML library, bound at run time through
// internal/dl (dlopen and a cgo trampoline: no NVML header, and no
// whole-program linker flags; NVIDIA's go-nvml links every binary that
// imports it with --export-dynamic, 1.1 MiB more RSS at start in each
// probe child). Close it when done: NVML keeps the driver's state for the
// process until the last nvmlShutdown. mu guards closed.
type NVML struct {
	lib  *dl.Library
	path string

	initV2, shutdown, errorString, getCount, getHandle, getName, getMemory, getProcs uintptr
	procsCall                                                                        string // the process query resolved (_v3, else _v2)
	// getUtil is utilizationCall and getProcUtil processUtilizationCall,
	// each 0 when the library lacks it.
	getUtil, getProcUtil uintptr

	devs   []uintptr // nvmlDevice_t handles by index, taken at Open
	mu     sync.Mutex
	closed bool

	// util is Utilization's out-parameter, kept here, on the heap with n
	// (Open allocates it), so that a sampler's reading allocates nothing:
	// callOut's go:uintptrescapes moves a local out-parameter and the
	// argument slice to the heap at every call. Go's heap objects do not
	// move, and n is used after the call, so call may pass its address.
	// utilMu guards it from the call until it is read.
	utilMu sync.Mutex
	util   nvmlUtilization

	// procUtilCount and procUtilBuf are processUtilization's
	// out-parameters, kept with n for the same reason as util: the buffer
	// grows to the most samples a reply has held and is then reused.
	// procUtilMu guards them.
	procUtilMu    sync.Mutex
	procUtilCount uint32
	procUtilBuf   []nvmlProcessUtilizationSample
}

// Open loads NVML from libPath ("" = $MEMPROBE_LIBNVML if set, else
// libnvidia-ml.so.1) and initialises it. A library that cannot be loaded
// gives an error wrapping ErrNoLibrary, whose text is "no NVML:
// libnvidia-ml.so.1 not found: " and the dlopen reason (which names the
// file); any other failure names the NVML call and NVML's error string,
// e.g. "nvmlInit: Driver Not Loaded". The device handles are taken once
// here, so that each sample costs only the per-GPU process query.
func Open(libPath string) (*NVML, error) {
	path := libPathOrDefault(libPath)
	lib, err := dl.Open(path)
	if err != nil {
		if err == dl.ErrNoCgo {
			return nil, ErrNoCgo
		}
		return nil, fmt.Errorf("%w: %v", ErrNoLibrary, strings.TrimSpace(err.Error()))
	}
	n := &NVML{lib: lib, path: path}
	for _, s := range []struct {
		p     *uintptr
		names []string
	}{
		{&n.initV2, []string{"nvmlInit_v2"}},
		{&n.shutdown, []string{"nvmlShutdown"}},
		{&n.errorString, []string{"nvmlErrorString"}},
		{&n.getCount, []string{"nvmlDeviceGetCount_v2"}},
		{&n.getHandle, []string{"nvmlDeviceGetHandleByIndex_v2"}},
		{&n.getName, []string{"nvmlDeviceGetName"}},
		{&n.getMemory, []string{"nvmlDeviceGetMemoryInfo"}},
		{&n.getProcs, []string{"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"}},
	} {
		for _, name := range s.names {
			if a, err := lib.Sym(name); err == nil {
				*s.p = a
				if s.p == &n.getProcs {
					n.procsCall = name
				}
				break
			}
		}
		if *s.p == 0 {
			return nil, fmt.Errorf("NVML %s lacks %s (a driver older than R470?)", path, strings.Join(s.names, " and "))
		}
	}
	// Optional: Utilization and ProcessUtilization say they are missing,
	// the memory figures do not need them.
	n.getUtil, _ = lib.Sym(utilizationCall)
	n.getProcUtil, _ = lib.Sym(processUtilizationCall)
	if ret := n.call(n.initV2); ret != nvmlSuccess {
		return nil, n.callErr("nvmlInit", -1, ret)
	}
	var count uint32
	if ret := n.callOut(n.getCount, uintptr(unsafe.Pointer(&count))); ret != nvmlSuccess {
		err := n.callErr("nvmlDeviceGetCount", -1, ret)
		n.call(n.shutdown)
		return nil, err
	}
	for i := range int(count) {
		var h uintptr
		if ret := n.callOut(n.getHandle, uintptr(i), uintptr(unsafe.Pointer(&h))); ret != nvmlSuccess {
			err := n.callErr("nvmlDeviceGetHandleByIndex", i, ret)
			n.call(n.shutdown)
			return nil, err
		}
		n.devs = append(n.devs, h)
	}
	return n, nil
}

// callMu serialises the NVML calls of the process: NVML is thread-safe,
// but the calls are few (a sample every few milliseconds at most) and one
// at a time keeps any stand-in library (the tests') simple.
var callMu sync.Mutex

func (n *NVML) call(fn uintptr, args ...uintptr) int32 {
	callMu.Lock()
	defer callMu.Unlock()
	return int32(dl.Call(fn, args...))
}

//go:uintptrescapes
func (n *NVML) callOut(fn uintptr, args ...uintptr) int32 {
	callMu.Lock()
	defer callMu.Unlock()
	return int32(dl.CallOut(fn, args...))
}

// callErr names the NVML call (and the GPU, if gpu >= 0) with NVML's own
// error string (nvmlErrorString).
func (n *NVML) callErr(call string, gpu int, ret int32) error {
	callMu.Lock()
	msg := dl.GoString(dl.Call(n.errorString, uintptr(uint32(ret))))
	callMu.Unlock()
	if msg == "" {
		msg = fmt.Sprintf("NVML error %d", ret)
	}
	if gpu >= 0 {
		return fmt.Errorf("%s(GPU %d): %s", call, gpu, msg)
	}
	return fmt.Errorf("%s: %s", call, msg)
}

// Close shuts NVML down (nvmlShutdown). Closing twice, or a nil NVML, is a
// no-op. The library stays mapped (NVML keeps threads of its own).
func (n *NVML) Close() error {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil
	}
	n.closed = true
	n.devs = nil
	if ret := n.call(n.shutdown); ret != nvmlSuccess {
		return n.callErr("nvmlShutdown", -1, ret)
	}
	return nil
}

// open returns the device handles, or errClosed.
func (n *NVML) open() ([]uintptr, error) {
	if n == nil {
		return nil, errClosed
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, errClosed
	}
	return n.devs, nil
}

// Devices lists every GPU with its name and memory, read now (the totals
// are fixed, the used figures are not).
func (n *NVML) Devices() ([]Device, error) {
	devs, err := n.open()
	if err != nil {
		return nil, err
	}
	out := make([]Device, 0, len(devs))
	for i, d := range devs {
		name := make([]byte, 96) // NVML_DEVICE_NAME_V2_BUFFER_SIZE
		if ret := n.callOut(n.getName, d, uintptr(unsafe.Pointer(&name[0])), uintptr(len(name))); ret != nvmlSuccess {
			return nil, n.callErr("nvmlDeviceGetName", i, ret)
		}
		var mem nvmlMemory
		if ret := n.callOut(n.getMemory, d, uintptr(unsafe.Pointer(&mem))); ret != nvmlSuccess {
			return nil, n.callErr("nvmlDeviceGetMemoryInfo", i, ret)
		}
		end := 0
		for end < len(name) && name[end] != 0 {
			end++
		}
		out = append(out, Device{Index: i, Name: string(name[:end]), TotalBytes: mem.total, UsedBytes: mem.used, FreeBytes: mem.free})
	}
	return out, nil
}

// processes reads GPU d's compute processes, growing the buffer while NVML
// says it is too small (processes come and go between the calls).
func (n *NVML) processes(i int, d uintptr) ([]nvmlProcessInfo, error) {
	buf := make([]nvmlProcessInfo, 16)
	for {
		count := uint32(len(buf))
		ret := n.callOut(n.getProcs, d, uintptr(unsafe.Pointer(&count)), uintptr(unsafe.Pointer(&buf[0])))
		switch {
		case ret == nvmlSuccess:
			return buf[:min(int(count), len(buf))], nil
		case ret == nvmlInsufficientSize && int(count) >= len(buf):
			buf = make([]nvmlProcessInfo, int(count)+8)
		default:
			return nil, n.callErr(strings.TrimSuffix(strings.TrimSuffix(n.procsCall, "_v3"), "_v2"), i, ret)
		}
	}
}

// ProcessBytesPerDevice is ProcessBytes split by GPU: element i is what
// NVML charges to pid on device i (0 where it is not listed), so a
// multi-GPU run shows where its memory went. Every GPU's compute-process
// list is read; the sum of the entries for pid (a process has one per GPU
// instance under MIG) is its figure. If no GPU gives a figure for pid the
// slice (all zeros) comes with an error wrapping ErrNoProcessEntry.
func (n *NVML) ProcessBytesPerDevice(pid int) ([]int64, error) {
	if err := checkPID(pid); err != nil {
		return nil, err
	}
	devs, err := n.open()
	if err != nil {
		return nil, err
	}
	per := make([]int64, len(devs))
	found, others, unavailable := false, 0, 0
	for i, d := range devs {
		procs, err := n.processes(i, d)
		if err != nil {
			return nil, err
		}
		for _, p := range procs {
			switch {
			case int64(p.pid) != int64(pid):
				others++
			case p.usedGPUMemory == notAvailable:
				unavailable++
			default:
				per[i] += int64(p.usedGPUMemory)
				found = true
			}
		}
	}
	if !found {
		return per, noEntry(pid, len(devs), others, unavailable)
	}
	return per, nil
}

// noEntry words ErrNoProcessEntry for what the lists held, since that is
// what tells a process without a CUDA context from one NVML cannot see.
func noEntry(pid, gpus, others, unavailable int) error {
	var why string
	switch {
	case gpus == 0:
		why = "NVML sees no GPU"
	case unavailable > 0:
		why = fmt.Sprintf("pid %d is listed but NVML reports its memory as not available", pid)
	case others > 0:
		why = fmt.Sprintf("pid %d is not among the %d compute processes NVML lists on %d GPU(s); it has no CUDA context yet, or it runs in a PID namespace and NVML lists host PIDs", pid, others, gpus)
	default:
		why = fmt.Sprintf("NVML lists no compute process on %d GPU(s): pid %d has no CUDA context yet, or the driver hides processes of this PID namespace", gpus, pid)
	}
	return fmt.Errorf("%w: %s", ErrNoProcessEntry, why)
}

// Utilization reads GPU index's utilization (nvmlDeviceGetUtilizationRates):
// the percent of NVML's last sample period (1/6 s to 1 s by product) during
// which one or more kernels ran on the GPU, and during which its memory
// was read or written. Both are device-wide, every process's work
// included (see the package doc). Where NVML has no such counter (a MIG
// instance, some products: NVML_ERROR_NOT_SUPPORTED) or the library lacks
// the entry point, the error wraps ErrUtilizationNotSupported, so a
// caller can leave the figure out and carry on; other errors name the
// call and the GPU. A successful call allocates nothing.
func (n *NVML) Utilization(index int) (gpuPct, memPct int, err error) {
	g, m, ret, err := n.utilization(index)
	switch {
	case err == errNoUtilization:
		return 0, 0, fmt.Errorf("NVML %s lacks %s: %w", n.path, utilizationCall, ErrUtilizationNotSupported)
	case err != nil:
		return 0, 0, err
	case ret == nvmlSuccess:
		return g, m, nil
	case ret == nvmlNotSupported:
		return 0, 0, fmt.Errorf("%w: %w", n.callErr(utilizationCall, index, ret), ErrUtilizationNotSupported)
	default:
		return 0, 0, n.callErr(utilizationCall, index, ret)
	}
}

// gpuUtil is Utilization's gpuPct for a Sampler that already holds the
// text of a utilization failure: ok is false on any failure, and no error
// is built, so that a GPU which never reports (a MIG instance) costs each
// reading one NVML call and no allocation.
func (n *NVML) gpuUtil(index int) (pct int, ok bool) {
	g, _, ret, err := n.utilization(index)
	return g, err == nil && ret == nvmlSuccess
}

// errNoUtilization is utilization's error when the library lacks
// utilizationCall; Utilization words it.
var errNoUtilization = errors.New("no " + utilizationCall)

// utilization makes the NVML call and returns its code, leaving the
// error's words (callErr allocates) to the caller; err is for a failure
// before any call: a closed NVML, an index NVML does not have, or
// errNoUtilization.
func (n *NVML) utilization(index int) (gpuPct, memPct int, ret int32, err error) {
	devs, err := n.open()
	if err != nil {
		return 0, 0, 0, err
	}
	if index < 0 || index >= len(devs) {
		return 0, 0, 0, fmt.Errorf("gpumem: GPU %d out of range (NVML sees %d)", index, len(devs))
	}
	if n.getUtil == 0 {
		return 0, 0, 0, errNoUtilization
	}
	n.utilMu.Lock()
	ret = n.call(n.getUtil, devs[index], uintptr(unsafe.Pointer(&n.util)))
	u := n.util // after the call: keeps n, and so util, alive through it
	n.utilMu.Unlock()
	if ret != nvmlSuccess {
		return 0, 0, ret, nil
	}
	return int(u.gpu), int(u.memory), ret, nil
}

// errNoProcessUtilization is processUtilization's error when the library
// lacks processUtilizationCall; ProcessUtilization words it.
var errNoProcessUtilization = errors.New("no " + processUtilizationCall)

// ProcessUtilization reads what nvmlDeviceGetProcessUtilization says of
// pid on GPU index in the samples the driver stamped after since (NVML's
// CPU timestamp, microseconds): pass the returned LastSeen as since to
// the next call so that each reading sees only new samples (a caller
// reading several GPUs keeps one since per GPU). NVML_ERROR_NOT_FOUND, no
// sample newer than since, is no error: the result has no samples and
// LastSeen is since. Where NVML has no such figure (a MIG instance, some
// products: NVML_ERROR_NOT_SUPPORTED) or the library lacks the entry
// point, the error wraps ErrProcessUtilizationNotSupported; other errors
// name the call and the GPU. A successful call allocates nothing once the
// buffer has grown to the replies' size.
func (n *NVML) ProcessUtilization(index, pid int, since uint64) (ProcessUtil, error) {
	if err := checkPID(pid); err != nil {
		return ProcessUtil{LastSeen: since}, err
	}
	u, ret, err := n.processUtilization(index, pid, since)
	if !processUtilOK(ret, err) {
		return u, n.processUtilErr(index, ret, err)
	}
	return u, nil
}

// processUtilOK says whether processUtilization's ret and err are a good
// reading: samples, or none newer than since.
func processUtilOK(ret int32, err error) bool {
	return err == nil && (ret == nvmlSuccess || ret == nvmlNotFound)
}

// processUtilErr words a failure of processUtilization (its ret and err).
func (n *NVML) processUtilErr(index int, ret int32, err error) error {
	switch {
	case err == errNoProcessUtilization:
		return fmt.Errorf("NVML %s lacks %s: %w", n.path, processUtilizationCall, ErrProcessUtilizationNotSupported)
	case err != nil:
		return err
	case ret == nvmlNotSupported:
		return fmt.Errorf("%w: %w", n.callErr(processUtilizationCall, index, ret), ErrProcessUtilizationNotSupported)
	default:
		return n.callErr(processUtilizationCall, index, ret)
	}
}

// processUtilization makes the calls and returns the last one's code
// (nvmlSuccess or nvmlNotFound when the reading is good), leaving the
// error's words to the caller, as utilization does. It follows nvml.h's
// protocol: a call with a NULL buffer gives the count of samples
// (NVML_ERROR_INSUFFICIENT_SIZE), a second call with a buffer at least
// that large fills it; if samples arrived between the two, the second
// says INSUFFICIENT_SIZE again and the pair is repeated, a few times at
// most. Samples stamped at or before since are skipped, should a driver
// return them (or zeroed entries) despite lastSeenTimeStamp.
func (n *NVML) processUtilization(index, pid int, since uint64) (u ProcessUtil, ret int32, err error) {
	u.LastSeen = since
	devs, err := n.open()
	if err != nil {
		return u, 0, err
	}
	if index < 0 || index >= len(devs) {
		return u, 0, fmt.Errorf("gpumem: GPU %d out of range (NVML sees %d)", index, len(devs))
	}
	if n.getProcUtil == 0 {
		return u, 0, errNoProcessUtilization
	}
	n.procUtilMu.Lock()
	defer n.procUtilMu.Unlock()
	// lastSeenTimeStamp, an unsigned long long, is passed by value: one
	// integer register on the 64-bit ABIs internal/dl calls through.
	for range 4 {
		n.procUtilCount = 0
		ret = n.call(n.getProcUtil, devs[index], 0, uintptr(unsafe.Pointer(&n.procUtilCount)), uintptr(since))
		switch {
		case ret == nvmlSuccess && n.procUtilCount == 0, ret == nvmlNotFound:
			return u, nvmlNotFound, nil
		case ret != nvmlInsufficientSize && ret != nvmlSuccess:
			return u, ret, nil
		}
		if need := int(n.procUtilCount); need > len(n.procUtilBuf) {
			n.procUtilBuf = make([]nvmlProcessUtilizationSample, need+8)
		}
		n.procUtilCount = uint32(len(n.procUtilBuf))
		ret = n.call(n.getProcUtil, devs[index], uintptr(unsafe.Pointer(&n.procUtilBuf[0])), uintptr(unsafe.Pointer(&n.procUtilCount)), uintptr(since))
		switch ret {
		case nvmlSuccess:
			// n.procUtilBuf and n.procUtilCount are read after the call,
			// which keeps them alive through it.
			got := n.procUtilBuf[:min(int(n.procUtilCount), len(n.procUtilBuf))]
			var sm, mem uint64
			for _, s := range got {
				if s.timeStamp <= since {
					continue
				}
				u.LastSeen = max(u.LastSeen, s.timeStamp)
				if int64(s.pid) != int64(pid) {
					u.Others++
					continue
				}
				u.Samples++
				sm += uint64(s.smUtil)
				mem += uint64(s.memUtil)
			}
			if u.Samples > 0 {
				u.SMPct = float64(sm) / float64(u.Samples)
				u.MemPct = float64(mem) / float64(u.Samples)
			}
			return u, nvmlSuccess, nil
		case nvmlNotFound:
			return u, nvmlNotFound, nil
		case nvmlInsufficientSize:
			continue // samples arrived between the calls
		default:
			return u, ret, nil
		}
	}
	return u, nvmlInsufficientSize, nil
}
