package device

// The cuda device: the CUDA driver API and cuBLAS bound at run time
// (package cudadrv: no CUDA header, toolkit or driver is needed to build),
// and the SoftmaxSample kernel as PTX that the driver JIT-compiles
// (package kernels, made from CUDA C by kernels/gen.sh).
//
// What it shares and what it owns, and why:
//   - One primary context per process and GPU (cuDevicePrimaryCtxRetain),
//     and the kernel module loaded into it once: a context costs hundreds
//     of MiB of device memory and a module a JIT compilation, so the
//     executors of one process must not each make their own.
//   - A stream per Device (an executor), non-blocking, so executors'
//     work overlaps and a Sync waits for this executor's work only.
//   - A cuBLAS handle per Device, bound to its stream: a handle's
//     workspace is not safe to use from two streams at once, and binding
//     it once keeps cublasSetStream off the per-token path.
//   - Pinned (page-locked) staging buffers per Device, one for each
//     direction: CopyToDevice copies the caller's slice into pinned memory
//     and enqueues an asynchronous copy from there; CopyToHost enqueues a
//     copy into pinned memory and Sync moves it into the caller's slice
//     once the stream is idle. A copy from pageable memory would make the
//     driver stage it and block the host, a wait the counters would miss.
//   - Page-locked blocks the caller owns (HostMemory: AllocHost, made by
//     cuMemHostAlloc and listed in hostBlocks): a copy whose host slice
//     lies wholly inside one skips the staging, the DMA reading or
//     writing the caller's memory itself. For a large device-to-host copy
//     (the (T, V) probabilities) this removes the host's second copy,
//     staging to slice after the wait, which at the GPT-2 head was most
//     of a batch decode's time.
//   - Every host wait is counted in Stats.Syncs: Sync itself, and the
//     waits the device makes on its own (Stats.ImplicitWaits): when the
//     staging between two Syncs outgrows its buffer (the buffer then
//     grows, up to maxStaging, so a repeated pattern stops waiting after
//     its first round), and before cuMemFree. Its wall time goes to
//     Stats.HostWaitNs.
//   - The GPU's share is timed with two CUDA events per Device: the
//     first command enqueued after a wait records one, the next wait
//     records the other before it synchronises and then adds the span
//     between them to Stats.DeviceBusyNs (read into the pinned block, so
//     timing allocates nothing). That is two cuEventRecord calls and one
//     cuEventElapsedTime per wait, the price of knowing the GPU's busy
//     fraction; a driver without events, or an event call that fails,
//     leaves the device untimed (Stats.DeviceTimed false), not broken.
//
// The methods run on the caller's goroutine (as a C++ host thread calls
// the driver): each locks the OS thread and makes the context current for
// the duration of its driver calls. There is no stream goroutine in
// between, so per-token host overhead is what the driver costs.

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"memprobe/ledger"
	"memprobe/trainer/device/cudadrv"
	"memprobe/trainer/device/kernels"
	"memprobe/trainer/gemm"
)

func init() {
	register("cuda", func(_ gemm.Backend, acct *ledger.Account) (Device, error) { return NewCUDA(0, acct) })
}

// Staging sizes: a Device starts with minStaging bytes of pinned memory per
// direction and grows to the bytes moved between two Syncs, at most
// maxStaging (larger copies go in maxStaging chunks, with a wait each).
const (
	minStaging = 1 << 20
	maxStaging = 64 << 20
)

// cudaGPU is the process's hold on one GPU: driver, primary context and
// the kernel module, made once and kept for the process's life (a primary
// context released by its last user is destroyed, and remaking it for
// each decode head would cost what sharing it saves).
type cudaGPU struct {
	drv     *cudadrv.Driver
	blas    *cudadrv.BLAS
	ordinal int
	dev     cudadrv.Device
	ctx     cudadrv.Context
	mod     cudadrv.Module
	softmax cudadrv.Function
	info    GPUInfo
}

// GPUInfo describes the GPU and what making the process's context cost.
type GPUInfo struct {
	Name          string `json:"name"`
	Ordinal       int    `json:"ordinal"`
	DriverVersion int    `json:"driver_version"` // 13000 for CUDA 13.0
	BLASVersion   int    `json:"cublas_version"`
	BLASLibrary   string `json:"cublas_library"`
	// TotalBytes is cuDeviceTotalMem: the memory CUDA manages, which on a
	// GPU is the physical memory less the driver's own reservation, so it
	// is below NVML's total (cuMemGetInfo's free is NVML's free).
	TotalBytes uint64 `json:"total_bytes"`
	// FreeAfterContextBytes is cuMemGetInfo's free memory once the primary
	// context and the kernel module exist, before any buffer: the baseline
	// of the device's own memory reconciliation.
	FreeAfterContextBytes uint64 `json:"free_after_context_bytes"`
}

// gpuKey names a GPU as seen through one opened driver library (tests
// open stand-in libraries beside the real one).
type gpuKey struct {
	drv     *cudadrv.Driver
	ordinal int
}

var (
	gpusMu sync.Mutex
	gpus   = map[gpuKey]*cudaGPU{}
)

// Available for cuda: the driver library opens, cuInit succeeds and there
// is at least one GPU. Cheap after the first call.
func cudaAvailable() error {
	drv, err := cudadrv.Load()
	if err != nil {
		return fmt.Errorf("device cuda: %w", err)
	}
	n, err := drv.DeviceCount()
	if err != nil {
		return fmt.Errorf("device cuda: %w", err)
	}
	if n == 0 {
		return errors.New("device cuda: the CUDA driver sees no GPU")
	}
	return nil
}

// openGPU returns the process's hold on GPU ordinal, making it on first use.
// A failure after the context was retained gives back what was made (the
// module, the context reference): nothing is kept for a GPU that failed to
// open, and the next call starts over.
func openGPU(ordinal int) (_ *cudaGPU, err error) {
	drv, err := cudadrv.Load()
	if err != nil {
		return nil, err
	}
	gpusMu.Lock()
	defer gpusMu.Unlock()
	if g, ok := gpus[gpuKey{drv, ordinal}]; ok {
		return g, nil
	}
	blas, err := cudadrv.LoadBLAS()
	if err != nil {
		return nil, err
	}
	n, err := drv.DeviceCount()
	if err != nil {
		return nil, err
	}
	if ordinal < 0 || ordinal >= n {
		return nil, fmt.Errorf("no GPU %d (the driver sees %d)", ordinal, n)
	}
	g := &cudaGPU{drv: drv, blas: blas, ordinal: ordinal, info: GPUInfo{Ordinal: ordinal, BLASLibrary: blas.Library}}
	if g.dev, err = drv.Device(ordinal); err != nil {
		return nil, err
	}
	if g.info.Name, err = drv.DeviceName(g.dev); err != nil {
		return nil, err
	}
	if g.info.TotalBytes, err = drv.DeviceTotalMem(g.dev); err != nil {
		return nil, err
	}
	if g.info.DriverVersion, err = drv.Version(); err != nil {
		return nil, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if g.ctx, err = drv.PrimaryCtxRetain(g.dev); err != nil {
		return nil, err
	}
	// Runs before the deferred UnlockOSThread: the context is still
	// current on this thread for cuModuleUnload.
	defer func() {
		if err == nil {
			return
		}
		if g.mod != 0 {
			drv.ModuleUnload(g.mod)
		}
		drv.PrimaryCtxRelease(g.dev)
	}()
	if err := drv.CtxSetCurrent(g.ctx); err != nil {
		return nil, err
	}
	ptx := append([]byte(kernels.SoftmaxSamplePTX), 0)
	mod, err := drv.ModuleLoadData(uintptr(unsafe.Pointer(&ptx[0])))
	runtime.KeepAlive(ptx)
	if err != nil {
		return nil, fmt.Errorf("loading the softmax_sample PTX: %w", err)
	}
	g.mod = mod // set only once loaded: the cleanup above unloads it
	if g.softmax, err = drv.ModuleGetFunction(g.mod, kernels.SoftmaxSampleName); err != nil {
		return nil, err
	}
	// cuBLAS's version needs a handle: one made and dropped here, under
	// gpusMu, so that info is written once, before any device reads it.
	h, err := blas.Create()
	if err != nil {
		return nil, err
	}
	g.info.BLASVersion, _ = blas.Version(h)
	if err := blas.Destroy(h); err != nil {
		return nil, err
	}
	if g.info.FreeAfterContextBytes, _, err = drv.MemGetInfo(); err != nil {
		return nil, err
	}
	gpus[gpuKey{drv, ordinal}] = g
	return g, nil
}

// stagingBuf is pinned host memory used as a bump allocator between waits.
type stagingBuf struct {
	base uintptr // from cuMemHostAlloc; 0 until first use
	size int     // bytes
	used int     // bytes handed out since the last wait
	high int     // most bytes wanted between two waits: the size to grow to
}

func (s *stagingBuf) floats(off, n int) []float32 {
	return unsafe.Slice((*float32)(unsafe.Add(unsafe.Pointer(nil), s.base+uintptr(off))), n)
}

// pendingD2H is a copy the stream makes into staging, which the host moves
// to dst after the next wait.
type pendingD2H struct {
	dst []float32
	off int // into the d2h staging, bytes
}

// hostBlock is one block of page-locked memory AllocHost handed out.
type hostBlock struct {
	base  uintptr // from cuMemHostAlloc
	bytes int
	name  string // what it holds, for HostBuffers
}

// paramBlock is the layout of the pinned block that holds kernel
// arguments, GEMM scalars and the event timer's output, so no Go pointer
// is passed to the driver: slots, then pointers to the slots
// (cuLaunchKernel's kernelParams), then alpha, beta and the milliseconds
// cuEventElapsedTime writes.
const (
	paramSlots   = 8
	paramPtrsOff = paramSlots * 8
	paramAlpha   = paramPtrsOff + paramSlots*8
	paramBeta    = paramAlpha + 4
	paramElapsed = paramBeta + 4
	paramBytes   = paramElapsed + 4
)

// CUDA is the "cuda" device.
type CUDA struct {
	book
	gpu    *cudaGPU
	stream cudadrv.Stream
	handle cudadrv.BLASHandle
	params uintptr // pinned paramBlock

	h2d, d2h stagingBuf
	pending  []pendingD2H

	// hostBlocks are the page-locked blocks AllocHost handed out and
	// FreeHost has not freed: copies from and into them skip the staging.
	// Few (a decoder's handful), so a copy finds its block by a scan.
	hostBlocks []hostBlock

	// The busy-time span (Stats.DeviceBusyNs): spanStart is recorded
	// before the first command after a wait (spanOpen), spanEnd at the
	// wait. timed is false from the first event call that failed.
	spanStart, spanEnd cudadrv.Event
	spanOpen, timed    bool

	memBeforeOpen uint64 // cuMemGetInfo free bytes before the stream and handle were made
	memAfterOpen  uint64 // cuMemGetInfo free bytes when the device was ready

	// cuBLAS's own device memory (MemoryInfo.BLASBytes): the GEMM shapes
	// (m, n, k) this device has run, and what cuMemGetInfo's free memory
	// fell by across the first Sgemm of each; blasErr is the first
	// cuMemGetInfo error met there.
	blasShapes [][3]int
	blasBytes  int64
	blasErr    error
}

// OpenCUDAContext makes GPU ordinal's primary context and kernel module, as
// the first NewCUDA on it would, without a device, and returns the GPU's
// description and cuMemGetInfo's free bytes now: so that a caller can
// measure the context on its own, before any device allocates. The
// context stays the process's, as every device's does.
func OpenCUDAContext(ordinal int) (info GPUInfo, freeBytes uint64, err error) {
	g, err := openGPU(ordinal)
	if err != nil {
		return GPUInfo{}, 0, fmt.Errorf("device cuda: %w", err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := g.drv.CtxSetCurrent(g.ctx); err != nil {
		return GPUInfo{}, 0, fmt.Errorf("device cuda: %w", err)
	}
	if freeBytes, _, err = g.drv.MemGetInfo(); err != nil {
		return GPUInfo{}, 0, fmt.Errorf("device cuda: %w", err)
	}
	return g.info, freeBytes, nil
}

// NewCUDA opens GPU ordinal (the primary context, shared by the process),
// and makes this device's stream, cuBLAS handle and pinned blocks.
// Device memory is counted in acct.
func NewCUDA(ordinal int, acct *ledger.Account) (*CUDA, error) {
	g, err := openGPU(ordinal)
	if err != nil {
		return nil, fmt.Errorf("device cuda: %w", err)
	}
	d := &CUDA{book: newBook("cuda", acct), gpu: g}
	if err := d.open(); err != nil {
		d.release()
		return nil, fmt.Errorf("device cuda: %w", err)
	}
	return d, nil
}

func (d *CUDA) open() (err error) {
	defer d.enter()()
	drv := d.gpu.drv
	if d.memBeforeOpen, _, err = drv.MemGetInfo(); err != nil {
		return err
	}
	if d.stream, err = drv.StreamCreate(cudadrv.StreamNonBlocking); err != nil {
		return err
	}
	if d.handle, err = d.gpu.blas.Create(); err != nil {
		return err
	}
	if err = d.gpu.blas.SetStream(d.handle, d.stream); err != nil {
		return err
	}
	if d.params, err = drv.MemHostAlloc(paramBytes); err != nil {
		return err
	}
	d.pinned.Add(paramBytes)
	for i := 0; i < paramSlots; i++ {
		*(*uintptr)(d.paramAddr(paramPtrsOff + 8*i)) = d.params + uintptr(8*i)
	}
	*(*float32)(d.paramAddr(paramAlpha)) = 1
	*(*float32)(d.paramAddr(paramBeta)) = 0
	d.pending = make([]pendingD2H, 0, 16)
	d.openTiming()
	d.memAfterOpen, _, err = drv.MemGetInfo()
	return err
}

// openTiming makes the two events of the busy-time span, or marks the
// device untimed where the driver cannot.
func (d *CUDA) openTiming() {
	drv := d.gpu.drv
	if !drv.HasEvents() {
		d.untimed.Store(true)
		return
	}
	var err error
	if d.spanStart, err = drv.EventCreate(cudadrv.EventDefault); err == nil {
		d.spanEnd, err = drv.EventCreate(cudadrv.EventDefault)
	}
	d.timed = err == nil
	d.untimed.Store(!d.timed)
}

// beginSpan is called before each command is enqueued: the first after a
// wait opens the span. The context must be current.
func (d *CUDA) beginSpan() {
	if !d.timed || d.spanOpen {
		return
	}
	if err := d.gpu.drv.EventRecord(d.spanStart, d.stream); err != nil {
		d.stopTiming()
		return
	}
	d.spanOpen = true
}

// stopTiming gives up timing: the busy time so far is kept, but Stats
// says the device is untimed.
func (d *CUDA) stopTiming() {
	d.timed, d.spanOpen = false, false
	d.untimed.Store(true)
}

func (d *CUDA) paramAddr(off int) unsafe.Pointer {
	return unsafe.Add(unsafe.Pointer(nil), d.params+uintptr(off))
}

// enter locks the OS thread and makes the context current on it; the
// returned func unlocks. Every method that calls the driver brackets its
// calls with it: a goroutine may move between threads between two calls.
func (d *CUDA) enter() func() {
	runtime.LockOSThread()
	if err := d.gpu.drv.CtxSetCurrent(d.gpu.ctx); err != nil {
		d.setErr(err)
	}
	return runtime.UnlockOSThread
}

// release frees what open made; the context and module stay (the process's).
func (d *CUDA) release() {
	defer d.enter()()
	drv := d.gpu.drv
	if d.stream != 0 {
		drv.StreamSynchronize(d.stream)
	}
	if d.handle != 0 {
		d.gpu.blas.Destroy(d.handle)
		d.handle = 0
	}
	for _, s := range []*stagingBuf{&d.h2d, &d.d2h} {
		if s.base != 0 {
			drv.MemFreeHost(s.base)
			d.pinned.Add(-int64(s.size))
			*s = stagingBuf{}
		}
	}
	for _, b := range d.hostBlocks { // the caller's, not freed: Close frees them
		drv.MemFreeHost(b.base)
		d.pinned.Add(-int64(b.bytes))
	}
	d.hostBlocks = nil
	for _, e := range []*cudadrv.Event{&d.spanStart, &d.spanEnd} {
		if *e != 0 {
			drv.EventDestroy(*e)
			*e = 0
		}
	}
	d.timed, d.spanOpen = false, false
	if d.params != 0 {
		drv.MemFreeHost(d.params)
		d.pinned.Add(-paramBytes)
		d.params = 0
	}
	if d.stream != 0 {
		drv.StreamDestroy(d.stream)
		d.stream = 0
	}
}

// Name implements Device.
func (d *CUDA) Name() string { return "cuda" }

// GPU describes the GPU this device runs on.
func (d *CUDA) GPU() GPUInfo { return d.gpu.info }

// MemoryInfo is the device's view of GPU memory for the reconciliation
// in run/decodebench: cuMemGetInfo now, and at earlier points.
type MemoryInfo struct {
	GPU GPUInfo `json:"gpu"` // with the free bytes once the context existed
	// Free bytes (cuMemGetInfo, the whole GPU) just before this device made
	// its stream and cuBLAS handle, once they existed, and now. What the
	// stream and handle cost is FreeBeforeOpen − FreeAfterOpen, not
	// GPU.FreeAfterContext − FreeAfterOpen: the latter also holds whatever
	// the process took between making the context and opening this device
	// (other devices' buffers, streams and workspaces, the cuBLAS kernels
	// an earlier device's first GEMM loaded into the context).
	FreeBeforeOpenBytes uint64 `json:"free_before_open_bytes"`
	FreeAfterOpenBytes  uint64 `json:"free_after_open_bytes"`
	FreeNowBytes        uint64 `json:"free_now_bytes"`
	// BLASBytes is what cuBLAS took on this device's behalf, known from
	// its own calls: the fall in free memory across the first cublasSgemm
	// of each shape (m, n, k) the device ran. That is where cuBLAS makes
	// what it makes lazily: its workspace, and the kernels CUDA loads at
	// their first launch (the first GEMM in a context; another shape may
	// pick another kernel). A fall anywhere else while the device runs is
	// not in it. Another device allocating during such a call would be.
	BLASBytes int64 `json:"blas_bytes"`
}

// MemoryInfo reads cuMemGetInfo now; it does not wait for the stream. An
// error reading free memory around a GEMM (BLASBytes) is returned here.
func (d *CUDA) MemoryInfo() (MemoryInfo, error) {
	defer d.enter()()
	free, _, err := d.gpu.drv.MemGetInfo()
	if err == nil && d.blasErr != nil {
		err = fmt.Errorf("measuring cuBLAS's memory: %w", d.blasErr)
	}
	return MemoryInfo{GPU: d.gpu.info, FreeBeforeOpenBytes: d.memBeforeOpen, FreeAfterOpenBytes: d.memAfterOpen, FreeNowBytes: free,
		BLASBytes: d.blasBytes}, err
}

// fail records err as the stream's sticky error and returns it.
func (d *CUDA) fail(err error) error {
	err = fmt.Errorf("device cuda: %w", err)
	d.setErr(err)
	return err
}

// Alloc implements Device: cuMemAlloc, then a zero fill on the stream.
func (d *CUDA) Alloc(name string, n int) (Buffer, error) {
	if err := d.checkAlloc(name, n); err != nil {
		return Buffer{}, err
	}
	defer d.enter()()
	p, err := d.gpu.drv.MemAlloc(n * 4)
	if err != nil {
		return Buffer{}, fmt.Errorf("device cuda: alloc %s: %d floats: %w", name, n, err)
	}
	d.beginSpan()
	if err := d.gpu.drv.MemsetD32Async(p, 0, n, d.stream); err != nil {
		d.gpu.drv.MemFree(p)
		return Buffer{}, d.fail(err)
	}
	b := Buffer{id: d.newID(), n: n, ptr: uint64(p)}
	d.added(name, b)
	d.acct.Alloc(int64(n) * 4)
	return b, nil
}

// Free implements Device. It waits for the stream first (counted), since
// work queued before may still use b.
func (d *CUDA) Free(b Buffer) error {
	if d.closed {
		return ErrClosed
	}
	if err := d.removed(b); err != nil {
		return err
	}
	d.acct.Free(int64(b.n) * 4)
	defer d.enter()()
	werr := d.wait(true) // a failed stream still frees: nothing would free b later
	if err := d.gpu.drv.MemFree(cudadrv.DevicePtr(b.ptr)); err != nil {
		return d.fail(err)
	}
	return werr
}

// wait blocks until the stream is idle, moves pending device-to-host copies
// into their destinations and empties the staging buffers; implicit says
// it was not a Sync call. The context must be current.
func (d *CUDA) wait(implicit bool) error {
	drv := d.gpu.drv
	if d.spanOpen {
		if err := drv.EventRecord(d.spanEnd, d.stream); err != nil {
			d.stopTiming()
		}
	}
	start := time.Now()
	err := drv.StreamSynchronize(d.stream)
	d.waited(start, implicit)
	if err != nil {
		d.pending = d.pending[:0]
		return d.fail(err)
	}
	if d.spanOpen {
		d.spanOpen = false
		if err := drv.EventElapsedTimeInto(d.params+paramElapsed, d.spanStart, d.spanEnd); err != nil {
			d.stopTiming()
		} else {
			d.busyNs.Add(int64(float64(*(*float32)(d.paramAddr(paramElapsed))) * 1e6))
		}
	}
	for i, p := range d.pending {
		copy(p.dst, d.d2h.floats(p.off, len(p.dst)))
		d.pending[i] = pendingD2H{}
	}
	d.pending = d.pending[:0]
	d.h2d.used, d.d2h.used = 0, 0
	return d.stickyErr()
}

// reserve returns the offset of bytes in s, waiting (and, while the stream
// is idle, growing s to the most bytes asked for between two waits) when
// they do not fit. bytes is at most maxStaging.
func (d *CUDA) reserve(s *stagingBuf, bytes int) (int, error) {
	s.high = max(s.high, s.used+bytes)
	if s.base != 0 && s.used+bytes <= s.size {
		off := s.used
		s.used += bytes
		return off, nil
	}
	if s.base != 0 {
		if err := d.wait(true); err != nil {
			return 0, err
		}
	}
	if want := min(maxStaging, max(minStaging, roundPow2(s.high))); want > s.size {
		if s.base != 0 {
			d.gpu.drv.MemFreeHost(s.base)
			d.pinned.Add(-int64(s.size))
			s.base, s.size = 0, 0
		}
		p, err := d.gpu.drv.MemHostAlloc(want)
		if err != nil {
			return 0, d.fail(err)
		}
		s.base, s.size = p, want
		d.pinned.Add(int64(want))
	}
	s.used = bytes
	return 0, nil
}

func roundPow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}

// CopyToDevice implements Device: src is copied into pinned staging now,
// and from there to the device on the stream; or, when src lies wholly
// inside a block AllocHost returned, the stream copies from src itself
// (so src must not change until the next Sync, as Device says).
func (d *CUDA) CopyToDevice(dst Buffer, dstOff int, src []float32) error {
	if err := d.checkH2D(dst, dstOff, src); err != nil || len(src) == 0 {
		return err
	}
	if d.failed() {
		return d.stickyErr()
	}
	defer d.enter()()
	if p := d.hostAddr(src); p != 0 {
		d.beginSpan()
		if err := d.gpu.drv.MemcpyHtoDAsync(cudadrv.DevicePtr(dst.ptr+uint64(dstOff)*4), p, len(src)*4, d.stream); err != nil {
			return d.fail(err)
		}
		return nil
	}
	const chunk = maxStaging / 4
	for len(src) > 0 {
		n := min(len(src), chunk)
		off, err := d.reserve(&d.h2d, n*4)
		if err != nil {
			return err
		}
		copy(d.h2d.floats(off, n), src[:n])
		d.beginSpan()
		if err := d.gpu.drv.MemcpyHtoDAsync(cudadrv.DevicePtr(dst.ptr+uint64(dstOff)*4), d.h2d.base+uintptr(off), n*4, d.stream); err != nil {
			return d.fail(err)
		}
		src, dstOff = src[n:], dstOff+n
	}
	return nil
}

// CopyToHost implements Device: the stream copies into pinned staging, and
// the next Sync (or implicit wait) moves the values into dst. When dst
// lies wholly inside a block AllocHost returned, the stream copies into
// dst itself and nothing is left for the wait to do: dst holds the values
// once the next Sync returns, and not before (as Device says).
func (d *CUDA) CopyToHost(dst []float32, src Buffer, srcOff int) error {
	if err := d.checkD2H(dst, src, srcOff); err != nil || len(dst) == 0 {
		return err
	}
	if d.failed() {
		return d.stickyErr()
	}
	defer d.enter()()
	if p := d.hostAddr(dst); p != 0 {
		d.beginSpan()
		if err := d.gpu.drv.MemcpyDtoHAsync(p, cudadrv.DevicePtr(src.ptr+uint64(srcOff)*4), len(dst)*4, d.stream); err != nil {
			return d.fail(err)
		}
		return nil
	}
	const chunk = maxStaging / 4
	for len(dst) > 0 {
		n := min(len(dst), chunk)
		off, err := d.reserve(&d.d2h, n*4)
		if err != nil {
			return err
		}
		d.beginSpan()
		if err := d.gpu.drv.MemcpyDtoHAsync(d.d2h.base+uintptr(off), cudadrv.DevicePtr(src.ptr+uint64(srcOff)*4), n*4, d.stream); err != nil {
			return d.fail(err)
		}
		d.pending = append(d.pending, pendingD2H{dst: dst[:n], off: off})
		dst, srcOff = dst[n:], srcOff+n
	}
	return nil
}

// Logits implements Device with cublasSgemm_v2 on the device's stream.
// cuBLAS is column-major: the row-major out (rows, V) is the column-major
// outᵀ (V, rows) = weight (V, C) · hiddenᵀ (C, rows), and the row-major
// weight read column-major is weightᵀ (C, V), so: Sgemm(T, N, m=V,
// n=rows, k=C, A=weight lda=C, B=hidden ldb=C, C=out ldc=V).
func (d *CUDA) Logits(out, hidden, weight Buffer, rows, C, V int) error {
	if err := d.checkLogits(out, hidden, weight, rows, C, V); err != nil {
		return err
	}
	if d.failed() {
		return d.stickyErr()
	}
	defer d.enter()()
	d.beginSpan()
	measure := d.newBLASShape(V, rows, C)
	err := d.gpu.blas.Sgemm(d.handle, cudadrv.OpT, cudadrv.OpN, V, rows, C,
		d.params+paramAlpha, cudadrv.DevicePtr(weight.ptr), C, cudadrv.DevicePtr(hidden.ptr), C,
		d.params+paramBeta, cudadrv.DevicePtr(out.ptr), V)
	if measure != nil {
		measure()
	}
	if err != nil {
		return d.fail(err)
	}
	return nil
}

// newBLASShape is called before a cublasSgemm of shape (m, n, k): for the
// first of the shape it reads the free memory and returns what adds its
// fall, once the call returns, to blasBytes (MemoryInfo.BLASBytes); for a
// shape run before, nil, so the per-token path costs a scan of the few
// shapes seen. The context must be current.
func (d *CUDA) newBLASShape(m, n, k int) func() {
	shape := [3]int{m, n, k}
	if slices.Contains(d.blasShapes, shape) {
		return nil
	}
	d.blasShapes = append(d.blasShapes, shape)
	before, _, err := d.gpu.drv.MemGetInfo()
	if err != nil {
		d.blasErr = cmp.Or(d.blasErr, err)
		return nil
	}
	return func() {
		after, _, err := d.gpu.drv.MemGetInfo()
		if err != nil {
			d.blasErr = cmp.Or(d.blasErr, err)
			return
		}
		d.blasBytes += int64(before) - int64(after)
	}
}

// SoftmaxSample implements Device with the softmax_sample kernel: a block
// of kernels.SoftmaxSampleBlock threads per row. A target outside [0, V)
// gives a NaN loss rather than an error (the kernel cannot return one).
func (d *CUDA) SoftmaxSample(out, logits, targets Buffer, rows, V int, s Sampling) error {
	if err := d.checkSoftmax(out, logits, targets, rows, V, s); err != nil {
		return err
	}
	if d.failed() {
		return d.stickyErr()
	}
	defer d.enter()()
	var tg uint64 // NULL: no targets, no loss
	if targets.Valid() {
		tg = targets.ptr
	}
	slots := (*[paramSlots]uint64)(d.paramAddr(0))
	*slots = [paramSlots]uint64{out.ptr, logits.ptr, tg, uint64(uint32(int32(rows))), uint64(uint32(int32(V))),
		uint64(math.Float32bits(s.Temperature)), s.Seed, s.Pos}
	d.beginSpan()
	err := d.gpu.drv.LaunchKernel(d.gpu.softmax, [3]uint32{uint32(rows), 1, 1}, [3]uint32{kernels.SoftmaxSampleBlock, 1, 1},
		0, d.stream, d.params+paramPtrsOff)
	if err != nil {
		return d.fail(err)
	}
	return nil
}

// Sync implements Device: cuStreamSynchronize on this device's stream,
// then the staged device-to-host copies land in their slices.
func (d *CUDA) Sync() error {
	if d.closed {
		return ErrClosed
	}
	defer d.enter()()
	return d.wait(false)
}

// Stats implements Device.
func (d *CUDA) Stats() Stats { return d.stats() }

// Buffers implements Device.
func (d *CUDA) Buffers() []BufferUse { return d.buffers() }

// Close implements Device: it waits for the stream, frees every buffer
// still allocated, and destroys the stream, handle and pinned memory. The
// process's context stays for the next device.
func (d *CUDA) Close() error {
	if d.closed {
		return nil
	}
	func() {
		defer d.enter()()
		d.wait(true)
		for _, b := range d.live {
			d.removed(b)
			d.acct.Free(int64(b.n) * 4)
			if err := d.gpu.drv.MemFree(cudadrv.DevicePtr(b.ptr)); err != nil {
				d.setErr(err)
			}
		}
	}()
	d.release()
	d.closed = true
	return d.stickyErr()
}

var _ HostMemory = (*CUDA)(nil)

// AllocHost implements HostMemory: n float32s of cuMemHostAlloc's
// page-locked memory, zeroed (the driver does not promise to), counted in
// Stats.PinnedHostBytes and listed under name in HostBuffers until
// FreeHost or Close.
func (d *CUDA) AllocHost(name string, n int) ([]float32, error) {
	if err := d.checkAlloc("host "+name, n); err != nil {
		return nil, err
	}
	defer d.enter()()
	p, err := d.gpu.drv.MemHostAlloc(n * 4)
	if err != nil {
		return nil, fmt.Errorf("device cuda: alloc host %s: %d floats: %w", name, n, err)
	}
	s := unsafe.Slice((*float32)(unsafe.Add(unsafe.Pointer(nil), p)), n)
	clear(s)
	d.hostBlocks = append(d.hostBlocks, hostBlock{base: p, bytes: n * 4, name: name})
	d.pinned.Add(int64(n) * 4)
	return s, nil
}

// FreeHost implements HostMemory. It waits for the stream first (counted,
// as Free does): a copy queued from or into the block may not have run.
func (d *CUDA) FreeHost(p []float32) error {
	if d.closed {
		return ErrClosed
	}
	at := uintptr(unsafe.Pointer(unsafe.SliceData(p)))
	i := slices.IndexFunc(d.hostBlocks, func(b hostBlock) bool { return b.base == at })
	if p == nil || i < 0 {
		return errors.New("cuda free host: not a block AllocHost returned on this device, or freed already")
	}
	b := d.hostBlocks[i]
	d.hostBlocks = slices.Delete(d.hostBlocks, i, i+1)
	defer d.enter()()
	werr := d.wait(true) // a failed stream still frees: nothing would free the block later
	if err := d.gpu.drv.MemFreeHost(b.base); err != nil {
		return d.fail(err)
	}
	d.pinned.Add(-int64(b.bytes))
	return werr
}

// HostBuffers implements HostMemory.
func (d *CUDA) HostBuffers() []BufferUse {
	out := make([]BufferUse, 0, len(d.hostBlocks))
	for _, b := range d.hostBlocks {
		i := slices.IndexFunc(out, func(u BufferUse) bool { return u.Name == b.name })
		if i < 0 {
			out = append(out, BufferUse{Name: b.name})
			i = len(out) - 1
		}
		out[i].Bytes += int64(b.bytes)
	}
	slices.SortFunc(out, func(a, b BufferUse) int {
		if a.Bytes != b.Bytes {
			return cmp.Compare(b.Bytes, a.Bytes)
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// hostAddr is p's address when p lies wholly inside one of the blocks
// AllocHost handed out, else 0: the copy then goes the staged way.
func (d *CUDA) hostAddr(p []float32) uintptr {
	at, n := uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p))*4
	for _, b := range d.hostBlocks {
		if at >= b.base && at-b.base < uintptr(b.bytes) && n <= uintptr(b.bytes)-(at-b.base) {
			return at
		}
	}
	return 0
}
