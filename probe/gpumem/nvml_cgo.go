//go:build cgo

package gpumem

import (
	"fmt"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/dl"
	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// callMu serialises every go-nvml call in the process. go-nvml swaps
// package-level function variables (the error-string function, the
// versioned entry points) when any instance loads or unloads its library,
// under a lock of that instance only, and reads them on every call; one
// lock around all calls makes that safe across NVML values and samplers.
var callMu sync.Mutex

// notAvailable is NVML_VALUE_NOT_AVAILABLE as an unsigned long long: what
// NVML puts in usedGpuMemory when it cannot attribute memory (WDDM,
// missing permission).
const notAvailable = ^uint64(0)

// NVML is an initialised NVML library. Close it when done: NVML keeps the
// driver's state for the process until the last nvmlShutdown.
type NVML struct {
	lib    nvml.Interface
	devs   []nvml.Device // handles by index, taken at Open
	closed bool          // guarded by callMu
}

// Open loads NVML from libPath ("" = $MEMPROBE_LIBNVML if set, else
// libnvidia-ml.so.1) and initialises it. A library that cannot be loaded
// gives an error wrapping ErrNoLibrary, whose text is "no NVML:
// libnvidia-ml.so.1 not found: " and the dlopen reason (which names the
// file); any other failure names the NVML call and NVML's error string,
// e.g. "nvmlInit: Driver Not Loaded". The device handles are taken once
// here, so that each sample costs only the per-GPU process query.
//
// A failed nvmlInit leaves go-nvml's reference to the library loaded
// (go-nvml unloads it only on a successful nvmlShutdown); that costs one
// mapping of the library per failed Open, nothing more.
func Open(libPath string) (*NVML, error) {
	path := libPathOrDefault(libPath)
	callMu.Lock()
	defer callMu.Unlock()

	// go-nvml's Init reports a failed dlopen only as
	// NVML_ERROR_LIBRARY_NOT_FOUND and drops dlerror's reason (which file,
	// missing or of the wrong architecture), so open the library once
	// ourselves to get it. Holding this handle until Init is done also
	// keeps the library from being unloaded and reloaded in between.
	pre := dl.New(path, dl.RTLD_LAZY|dl.RTLD_GLOBAL)
	if err := pre.Open(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoLibrary, err)
	}
	defer func() { _ = pre.Close() }()

	lib := nvml.New(nvml.WithLibraryPath(path))
	if ret := lib.Init(); ret != nvml.SUCCESS {
		if ret == nvml.ERROR_LIBRARY_NOT_FOUND {
			return nil, fmt.Errorf("%w: %s (go-nvml could not open it)", ErrNoLibrary, path)
		}
		return nil, callErr("nvmlInit", -1, ret)
	}
	n := &NVML{lib: lib}
	count, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		err := callErr("nvmlDeviceGetCount", -1, ret)
		_ = lib.Shutdown()
		return nil, err
	}
	for i := range count {
		d, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			err := callErr("nvmlDeviceGetHandleByIndex", i, ret)
			_ = lib.Shutdown()
			return nil, err
		}
		n.devs = append(n.devs, d)
	}
	return n, nil
}

// callErr names the NVML call (and the GPU, if gpu >= 0) with NVML's own
// error string, which go-nvml takes from nvmlErrorString once the library
// is loaded. Callers hold callMu.
func callErr(call string, gpu int, ret nvml.Return) error {
	if gpu >= 0 {
		return fmt.Errorf("%s(GPU %d): %s", call, gpu, ret.Error())
	}
	return fmt.Errorf("%s: %s", call, ret.Error())
}

// Close shuts NVML down (nvmlShutdown) and unloads the library once no
// other NVML holds it. Closing twice, or a nil NVML, is a no-op.
func (n *NVML) Close() error {
	if n == nil {
		return nil
	}
	callMu.Lock()
	defer callMu.Unlock()
	if n.closed {
		return nil
	}
	n.closed = true
	n.devs = nil
	if ret := n.lib.Shutdown(); ret != nvml.SUCCESS {
		return callErr("nvmlShutdown", -1, ret)
	}
	return nil
}

// Devices lists every GPU with its name and memory, read now (the totals
// are fixed, the used figures are not).
func (n *NVML) Devices() ([]Device, error) {
	callMu.Lock()
	defer callMu.Unlock()
	if n == nil || n.closed {
		return nil, errClosed
	}
	out := make([]Device, 0, len(n.devs))
	for i, d := range n.devs {
		name, ret := d.GetName()
		if ret != nvml.SUCCESS {
			return nil, callErr("nvmlDeviceGetName", i, ret)
		}
		mem, ret := d.GetMemoryInfo()
		if ret != nvml.SUCCESS {
			return nil, callErr("nvmlDeviceGetMemoryInfo", i, ret)
		}
		out = append(out, Device{Index: i, Name: name, TotalBytes: mem.Total, UsedBytes: mem.Used})
	}
	return out, nil
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
	callMu.Lock()
	defer callMu.Unlock()
	if n == nil || n.closed {
		return nil, errClosed
	}
	per := make([]int64, len(n.devs))
	found, others, unavailable := false, 0, 0
	for i, d := range n.devs {
		procs, ret := d.GetComputeRunningProcesses()
		if ret != nvml.SUCCESS {
			return nil, callErr("nvmlDeviceGetComputeRunningProcesses", i, ret)
		}
		for _, p := range procs {
			switch {
			case int64(p.Pid) != int64(pid):
				others++
			case p.UsedGpuMemory == notAvailable:
				unavailable++
			default:
				per[i] += int64(p.UsedGpuMemory)
				found = true
			}
		}
	}
	if !found {
		return per, noEntry(pid, len(n.devs), others, unavailable)
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
