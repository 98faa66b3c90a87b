package device

import (
	"errors"
	"math/rand"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"memprobe/internal/fakecuda"
	"memprobe/ledger"
)

// The cuda device's tests run on internal/fakecuda, a C stand-in for the
// driver and cuBLAS whose streams defer work to the next synchronize and
// whose contexts are thread-local: what they check is the device's side
// (staging, waits, ordering, threads, errors, leaks), not the GPU.

func openFakeCUDA(t *testing.T, acct *ledger.Account) (*CUDA, string) {
	t.Helper()
	lib := fakecuda.Use(t)
	if err := Available("cuda"); err != nil {
		t.Fatalf("Available(cuda) on the fake driver: %v", err)
	}
	d, err := Open("cuda", nil, acct)
	if err != nil {
		t.Fatal(err)
	}
	return d.(*CUDA), lib
}

func counters(t *testing.T, lib string) fakecuda.Counters {
	t.Helper()
	c, err := fakecuda.ReadCounters(lib)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCUDARoundTrip: values come back only at Sync, from pinned staging;
// the ledger and the fake agree on what is live; Close leaves nothing.
func TestCUDARoundTrip(t *testing.T) {
	acct := ledger.New().Account(ledger.DeviceBuffers)
	d, lib := openFakeCUDA(t, acct)
	fakecuda.ResetCounters(lib)
	b, err := d.Alloc("test.buf", 10)
	if err != nil {
		t.Fatal(err)
	}
	src := []float32{1, 2, 3, 4}
	if err := d.CopyToDevice(b, 3, src); err != nil {
		t.Fatal(err)
	}
	src[0] = 99 // the device copied src into staging at the call: no effect
	dst := make([]float32, 5)
	if err := d.CopyToHost(dst, b, 2); err != nil {
		t.Fatal(err)
	}
	if dst[1] != 0 {
		t.Fatalf("dst written before Sync: %v", dst)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	if want := []float32{0, 1, 2, 3, 4}; !slices.Equal(dst, want) {
		t.Fatalf("round trip: got %v, want %v", dst, want)
	}
	s := d.Stats()
	if s.Syncs != 1 || s.ImplicitWaits != 0 || s.H2DBytes != 16 || s.D2HBytes != 20 || s.DeviceBytesInUse != 40 || s.PinnedHostBytes < 2*minStaging {
		t.Errorf("stats = %+v", s)
	}
	if bu := d.Buffers(); len(bu) != 1 || bu[0] != (BufferUse{"test.buf", 40}) || acct.Current() != 40 {
		t.Errorf("ledger %v, account %d; want test.buf 40 B", bu, acct.Current())
	}
	if c := counters(t, lib); c.PageableCopies != 0 || c.LiveAllocs != 1 || c.LiveStreams != 1 || c.LiveHandles != 1 || c.LivePinned != 3 {
		t.Errorf("fake driver: %+v; want no pageable copy, 1 allocation, 1 stream, 1 cuBLAS handle, 3 pinned blocks", c)
	}
	if err := d.Free(b); err != nil {
		t.Fatal(err)
	}
	if s := d.Stats(); s.Syncs != 2 || s.ImplicitWaits != 1 {
		t.Errorf("Free: syncs %d, implicit %d; want the wait before cuMemFree counted", s.Syncs, s.ImplicitWaits)
	}
	if _, err := d.Alloc("test.left", 7); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if c := counters(t, lib); c.LiveAllocs != 0 || c.LivePinned != 0 || c.LiveStreams != 0 || c.LiveHandles != 0 || c.CtxRefs != 1 || c.LiveModules != 1 {
		t.Errorf("after Close: %+v; want nothing of the device left, the process's context and module kept", c)
	}
	if acct.Current() != 0 || d.Stats().PinnedHostBytes != 0 {
		t.Errorf("after Close: ledger %d, pinned %d", acct.Current(), d.Stats().PinnedHostBytes)
	}
	if err := d.Sync(); err != ErrClosed {
		t.Errorf("Sync after Close = %v, want ErrClosed", err)
	}
}

// TestCUDAStaging: more bytes between two Syncs than the staging holds
// costs a counted wait and grows it, once; a copy above maxStaging goes in
// chunks, a wait each; the values survive both.
func TestCUDAStaging(t *testing.T) {
	d, _ := openFakeCUDA(t, nil)
	defer d.Close()
	const n = 3 << 20 // 12 MiB of floats
	r := rand.New(rand.NewSource(2))
	a, b := randSlice(r, n), randSlice(r, n)
	ba, _ := d.Alloc("a", n)
	bb, _ := d.Alloc("b", n)
	back := make([]float32, 2*n)
	round := func() Stats {
		before := d.Stats()
		for _, c := range []struct {
			buf Buffer
			src []float32
		}{{ba, a}, {bb, b}} {
			if err := d.CopyToDevice(c.buf, 0, c.src); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.CopyToHost(back[:n], ba, 0); err != nil {
			t.Fatal(err)
		}
		if err := d.CopyToHost(back[n:], bb, 0); err != nil {
			t.Fatal(err)
		}
		if err := d.Sync(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(back[:n], a) || !slices.Equal(back[n:], b) {
			t.Fatal("staged copies: values differ")
		}
		after := d.Stats()
		return Stats{Syncs: after.Syncs - before.Syncs, ImplicitWaits: after.ImplicitWaits - before.ImplicitWaits, PinnedHostBytes: after.PinnedHostBytes}
	}
	first := round()
	second := round()
	t.Logf("24 MiB each way between Syncs: first round %d waits (%d implicit), second %d (%d); pinned %d B",
		first.Syncs, first.ImplicitWaits, second.Syncs, second.ImplicitWaits, second.PinnedHostBytes)
	if first.ImplicitWaits < 1 || second.ImplicitWaits != 0 || second.Syncs != 1 {
		t.Errorf("first round %+v, second %+v: want the staging to outgrow itself once, then one wait per Sync", first, second)
	}

	// Above maxStaging: chunks, a wait between each.
	big := randSlice(r, maxStaging/4+1000)
	bg, err := d.Alloc("big", len(big))
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, len(big))
	if err := d.CopyToDevice(bg, 0, big); err != nil {
		t.Fatal(err)
	}
	if err := d.CopyToHost(out, bg, 0); err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out, big) {
		t.Fatal("chunked copy: values differ")
	}
	if p := d.Stats().PinnedHostBytes; p > 2*maxStaging+paramBytes {
		t.Errorf("pinned %d B, above two staging buffers of %d B", p, maxStaging)
	}
}

// TestCUDAStickyError: a kernel that fails on the device fails the next
// Sync, and every call after it, with the driver's name for the error.
func TestCUDAStickyError(t *testing.T) {
	d, lib := openFakeCUDA(t, nil)
	const rows, V = 2, 5
	bl, _ := d.Alloc("logits", rows*V)
	bo, _ := d.Alloc("out", rows*OutStride)
	t.Setenv("FAKECUDA_FAIL_LAUNCH", strconv.Itoa(counters(t, lib).Launches+1))
	if err := d.SoftmaxSample(bo, bl, Buffer{}, rows, V, Sampling{}); err != nil {
		t.Fatalf("enqueue: %v (the failure belongs to the Sync)", err)
	}
	err := d.Sync()
	const want = "cuStreamSynchronize: CUDA_ERROR_LAUNCH_FAILED (719): unspecified launch failure"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Sync = %v, want %q", err, want)
	}
	os.Unsetenv("FAKECUDA_FAIL_LAUNCH")
	if err2 := d.SoftmaxSample(bo, bl, Buffer{}, rows, V, Sampling{}); err2 == nil || !strings.Contains(err2.Error(), want) {
		t.Errorf("after the failure: %v, want the sticky error", err2)
	}
	if err2 := d.Close(); err2 == nil {
		t.Error("Close after a failure: no error")
	}
	if c := counters(t, lib); c.LiveAllocs != 0 || c.LiveStreams != 0 || c.LivePinned != 0 {
		t.Errorf("after Close of a failed device: %+v, want nothing left", c)
	}
}

// TestCUDAThreads: devices driven from goroutines that move between OS
// threads (each call on a fresh goroutine) and several devices at once: the
// fake's contexts are thread-local, so a call that did not make the context
// current on its thread fails.
func TestCUDAThreads(t *testing.T) {
	fakecuda.Use(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := Open("cuda", nil, nil)
			if err != nil {
				errs <- err
				return
			}
			defer d.Close()
			b, err := d.Alloc("t", 64)
			if err != nil {
				errs <- err
				return
			}
			src := make([]float32, 64)
			dst := make([]float32, 64)
			for i := 0; i < 20; i++ {
				for j := range src {
					src[j] = float32(i*64 + j)
				}
				done := make(chan error)
				go func() { done <- d.CopyToDevice(b, 0, src) }()
				if err := <-done; err != nil {
					errs <- err
					return
				}
				go func() { runtime.Gosched(); done <- d.CopyToHost(dst, b, 0) }()
				if err := <-done; err != nil {
					errs <- err
					return
				}
				go func() { done <- d.Sync() }()
				if err := <-done; err != nil {
					errs <- err
					return
				}
				if !slices.Equal(dst, src) {
					errs <- errBadValues
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

var errBadValues = errors.New("values differ after a round trip")

// TestCUDAMissingSymbol: a driver without an entry point the device needs
// is refused in one line naming it.
func TestCUDAMissingSymbol(t *testing.T) {
	fakecuda.Use(t, "-DFAKECUDA_OMIT_DTOH")
	err := Available("cuda")
	if err == nil || !strings.Contains(err.Error(), "lacks cuMemcpyDtoHAsync_v2") || strings.Contains(err.Error(), "\n") {
		t.Errorf("Available(cuda) = %v, want one line naming cuMemcpyDtoHAsync_v2", err)
	}
}

// TestCUDAStaleBuffer: the driver's allocator hands a freed address out
// again (FAKECUDA_REUSE_ADDRESSES makes the fake do so), so a Buffer kept
// past its Free names, by its CUdeviceptr, a live allocation of the same
// size. Every call must still refuse it, and a stale Free must not free
// the new buffer.
func TestCUDAStaleBuffer(t *testing.T) {
	d, _ := openFakeCUDA(t, nil)
	defer d.Close()
	t.Setenv(fakecuda.EnvReuseAddresses, "1")
	const rows, V = 2, 3
	logits, err := d.Alloc("logits", rows*V) // before the free: it would take the freed address
	if err != nil {
		t.Fatal(err)
	}
	stale, err := d.Alloc("out", rows*OutStride)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Free(stale); err != nil {
		t.Fatal(err)
	}
	fresh, err := d.Alloc("out", rows*OutStride)
	if err != nil {
		t.Fatal(err)
	}
	if fresh.ptr != stale.ptr {
		t.Fatalf("the fake did not reuse the freed address %#x (got %#x): the test checks nothing", stale.ptr, fresh.ptr)
	}
	const want = "buffer is not allocated on this device"
	for _, c := range []struct {
		call string
		err  error
	}{
		{"CopyToDevice", d.CopyToDevice(stale, 0, []float32{1, 2})},
		{"CopyToHost", d.CopyToHost(make([]float32, 2), stale, 0)},
		{"SoftmaxSample", d.SoftmaxSample(stale, logits, Buffer{}, rows, V, Sampling{})},
		{"Logits", d.Logits(stale, logits, logits, 1, 2, 2)},
		{"Free", d.Free(stale)},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), want) {
			t.Errorf("%s with a freed Buffer whose address was reused: %v, want %q", c.call, c.err, want)
		}
	}
	// The new buffer is intact: the stale calls neither wrote nor freed it.
	src := []float32{1, 2, 3, 4}
	if err := d.CopyToDevice(fresh, 0, src); err != nil {
		t.Fatal(err)
	}
	back := make([]float32, len(src))
	if err := d.CopyToHost(back, fresh, 0); err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back, src) {
		t.Errorf("the live buffer after the stale calls: %v, want %v", back, src)
	}
}

// openFailures numbers the fake instances TestCUDAOpenGPUFailureReleases
// builds: openGPU keeps a GPU for the process once it opened, so each run
// of the test (-count=N) needs a library it has not opened yet.
var openFailures int

// TestCUDAOpenGPUFailureReleases: when making the process's hold on the
// GPU fails after the context was retained and the module loaded (here
// cublasCreate_v2), both are given back, and a later open succeeds and
// holds one reference.
func TestCUDAOpenGPUFailureReleases(t *testing.T) {
	openFailures++
	lib := fakecuda.Use(t, "FAKECUDA_INSTANCE_OPEN_FAILURE_"+strconv.Itoa(openFailures))
	t.Setenv(fakecuda.EnvFailBLASCreate, "1")
	_, err := Open("cuda", nil, nil)
	if want := "CUBLAS_STATUS_NOT_INITIALIZED"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Open with cublasCreate_v2 failing: %v, want %s", err, want)
	}
	if c := counters(t, lib); c.CtxRefs != 0 || c.LiveModules != 0 || c.LiveHandles != 0 {
		t.Errorf("after the failed open: %+v; want the context released and the module unloaded", c)
	}
	t.Setenv(fakecuda.EnvFailBLASCreate, "")
	d, err := Open("cuda", nil, nil)
	if err != nil {
		t.Fatalf("Open once cuBLAS works: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if c := counters(t, lib); c.CtxRefs != 1 || c.LiveModules != 1 || c.LiveHandles != 0 {
		t.Errorf("after a good open and Close: %+v; want the process's one context reference and module", c)
	}
}

// TestCUDAFreeBeforeOpen: a device's FreeBeforeOpenBytes is the GPU's free
// memory just before it made its stream and handle, so it leaves out what
// the process took earlier (another device's buffer and workspace), which
// the figure from when the context was made still counts.
func TestCUDAFreeBeforeOpen(t *testing.T) {
	a, _ := openFakeCUDA(t, nil)
	defer a.Close()
	const rows, C, V = 2, 3, 4
	out, _ := a.Alloc("out", rows*V)
	hidden, _ := a.Alloc("hidden", rows*C)
	weight, _ := a.Alloc("weight", V*C)
	if err := a.Logits(out, hidden, weight, rows, C, V); err != nil { // makes a's cuBLAS workspace
		t.Fatal(err)
	}
	if err := a.Sync(); err != nil {
		t.Fatal(err)
	}
	held, err := a.MemoryInfo()
	if err != nil {
		t.Fatal(err)
	}
	d, err := Open("cuda", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	b, err := d.(*CUDA).MemoryInfo()
	if err != nil {
		t.Fatal(err)
	}
	if b.FreeBeforeOpenBytes != held.FreeNowBytes {
		t.Errorf("second device: free before open %d B, want the %d B free once the first held its buffers", b.FreeBeforeOpenBytes, held.FreeNowBytes)
	}
	// The fake's streams and handles take no device memory until a GEMM.
	if b.FreeBeforeOpenBytes != b.FreeAfterOpenBytes {
		t.Errorf("second device: free %d B before open, %d B after: want the stream and handle to cost 0 B on the fake", b.FreeBeforeOpenBytes, b.FreeAfterOpenBytes)
	}
	if b.GPU.FreeAfterContextBytes-b.FreeAfterOpenBytes < fakecuda.WorkspaceBytes {
		t.Errorf("free after the context %d B, after the second open %d B: want the first device's workspace in between", b.GPU.FreeAfterContextBytes, b.FreeAfterOpenBytes)
	}
}

// TestCUDABLASBytes: MemoryInfo.BLASBytes is the fall in free memory
// across the first GEMM of each shape: on a fresh fake, cuBLAS's kernels
// and this handle's workspace, made by the first; a second device's first
// GEMM adds only its workspace. Memory made anywhere else (a leak at each
// kernel launch), or a GEMM of a shape run before, adds nothing to it.
func TestCUDABLASBytes(t *testing.T) {
	lib := fakecuda.Use(t, "DEVICE_BLAS_BYTES") // its own instance: no kernels loaded, no leak left behind
	const rows, C, V = 3, 4, 5
	for i, want := range []int64{fakecuda.BLASKernelBytes + fakecuda.WorkspaceBytes, fakecuda.WorkspaceBytes} {
		t.Setenv(fakecuda.EnvLeakPerLaunchBytes, "0")
		dev, err := Open("cuda", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		d := dev.(*CUDA)
		out, _ := d.Alloc("out", rows*V)
		hidden, _ := d.Alloc("hidden", rows*C)
		weight, _ := d.Alloc("weight", V*C)
		sampled, _ := d.Alloc("sampled", 2*rows)
		start, err := d.MemoryInfo()
		if err != nil {
			t.Fatal(err)
		}
		if start.BLASBytes != 0 {
			t.Errorf("device %d before any GEMM: BLASBytes %d, want 0", i, start.BLASBytes)
		}
		const leak = 1 << 20
		t.Setenv(fakecuda.EnvLeakPerLaunchBytes, strconv.Itoa(leak))
		for _, r := range []int{rows, rows, 1} { // a shape, again, another
			if err := d.Logits(out, hidden, weight, r, C, V); err != nil {
				t.Fatal(err)
			}
			if err := d.SoftmaxSample(sampled, out, Buffer{}, r, V, Sampling{}); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Sync(); err != nil {
			t.Fatal(err)
		}
		end, err := d.MemoryInfo()
		if err != nil {
			t.Fatal(err)
		}
		fell := int64(start.FreeNowBytes) - int64(end.FreeNowBytes)
		if end.BLASBytes != want || fell != want+3*leak {
			t.Errorf("device %d: BLASBytes %d B, free memory fell %d B; want cuBLAS's %d B, and the fall that and the 3 launches' %d B each",
				i, end.BLASBytes, fell, want, leak)
		}
		if c := counters(t, lib); c.Launches != 3*(i+1) {
			t.Errorf("device %d: %d launches, want %d", i, c.Launches, 3*(i+1))
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCUDATiming: the busy-time span opens at the first command after a
// wait and closes at the next wait, so a Sync with nothing queued adds no
// busy time; the span's events are the device's own and go at Close. The
// fake runs a stream's work inside cuStreamSynchronize, so there the
// span lies within the host's wait: busy <= host wait holds on the fake
// (on a GPU the work overlaps the host's enqueueing instead).
func TestCUDATiming(t *testing.T) {
	d, lib := openFakeCUDA(t, nil)
	const rows, C, V = 32, 256, 788
	out, _ := d.Alloc("out", rows*V)
	hidden, _ := d.Alloc("hidden", rows*C)
	weight, _ := d.Alloc("weight", V*C)
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	s0 := d.Stats()
	if err := d.Logits(out, hidden, weight, rows, C, V); err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	s1 := d.Stats()
	busy, wait := s1.DeviceBusyNs-s0.DeviceBusyNs, s1.HostWaitNs-s0.HostWaitNs
	if !s1.DeviceTimed || busy <= 0 || busy > wait {
		t.Errorf("a %d×%d×%d product: timed %v, busy %d ns, host wait %d ns; want timed, 0 < busy <= wait", rows, V, C, s1.DeviceTimed, busy, wait)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	if s2 := d.Stats(); s2.DeviceBusyNs != s1.DeviceBusyNs || s2.Syncs != s1.Syncs+1 {
		t.Errorf("an empty Sync: busy %d → %d ns, syncs %d → %d; want busy unchanged, one more sync", s1.DeviceBusyNs, s2.DeviceBusyNs, s1.Syncs, s2.Syncs)
	}
	if c := counters(t, lib); c.LiveEvents != 2 {
		t.Errorf("fake driver: %d live events, want the device's 2", c.LiveEvents)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if c := counters(t, lib); c.LiveEvents != 0 {
		t.Errorf("after Close: %d live events, want 0", c.LiveEvents)
	}
}

// TestCUDAWithoutEvents: a driver without the event calls runs the device
// untimed, not broken.
func TestCUDAWithoutEvents(t *testing.T) {
	fakecuda.Use(t, fakecuda.OmitEvents)
	dev, err := Open("cuda", nil, nil)
	if err != nil {
		t.Fatalf("a driver without events: %v", err)
	}
	b, _ := dev.Alloc("b", 4)
	if err := dev.CopyToDevice(b, 0, []float32{1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 4)
	if err := dev.CopyToHost(got, b, 0); err != nil {
		t.Fatal(err)
	}
	if err := dev.Sync(); err != nil {
		t.Fatal(err)
	}
	if s := dev.Stats(); s.DeviceTimed || s.DeviceBusyNs != 0 || s.Syncs != 1 || !slices.Equal(got, []float32{1, 2, 3, 4}) {
		t.Errorf("untimed device: %+v, values %v; want untimed, no busy time, 1 sync, the values back", s, got)
	}
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCUDAHostMemory: copies from and into blocks AllocHost returned go
// straight by DMA: no staging is made, nothing is left for the wait to
// move, the stream reads the source when it runs (a change after the call
// shows, as the contract warns) and writes the destination only at the
// Sync; the blocks count in PinnedHostBytes and HostBuffers, and the fake
// sees no copy from pageable memory.
func TestCUDAHostMemory(t *testing.T) {
	d, lib := openFakeCUDA(t, nil)
	defer d.Close()
	var dev Device = d
	hm, ok := dev.(HostMemory)
	if !ok {
		t.Fatal("the cuda device does not implement HostMemory")
	}
	fakecuda.ResetCounters(lib)
	base := d.Stats()
	if base.PinnedHostBytes != paramBytes {
		t.Fatalf("fresh device: pinned %d B, want the parameter block's %d B", base.PinnedHostBytes, paramBytes)
	}
	buf, err := d.Alloc("test.buf", 8)
	if err != nil {
		t.Fatal(err)
	}
	up, err := hm.AllocHost("test.up", 8)
	if err != nil {
		t.Fatal(err)
	}
	down, err := hm.AllocHost("test.down", 8)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(up, make([]float32, 8)) || !slices.Equal(down, make([]float32, 8)) {
		t.Fatalf("AllocHost: not zeroed: %v %v", up, down)
	}
	if got, want := hm.HostBuffers(), []BufferUse{{"test.down", 32}, {"test.up", 32}}; !slices.Equal(got, want) {
		t.Errorf("HostBuffers = %v, want %v", got, want)
	}
	if bu := d.Buffers(); len(bu) != 1 || bu[0].Name != "test.buf" {
		t.Errorf("device ledger %v: want the device buffer only (host blocks are not device memory)", bu)
	}
	for i := range up {
		up[i] = float32(i + 1)
	}
	if err := d.CopyToDevice(buf, 0, up); err != nil {
		t.Fatal(err)
	}
	up[0] = 99 // the stream reads up when it runs the copy: this shows
	if err := d.CopyToHost(down, buf, 0); err != nil {
		t.Fatal(err)
	}
	if len(d.pending) != 0 || d.h2d.base != 0 || d.d2h.base != 0 || d.h2d.high != 0 || d.d2h.high != 0 {
		t.Errorf("direct copies: %d pending, staging h2d %d B (high %d), d2h %d B (high %d); want no staging at all",
			len(d.pending), d.h2d.size, d.h2d.high, d.d2h.size, d.d2h.high)
	}
	if down[0] != 0 {
		t.Fatalf("dst written before Sync: %v", down)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	if want := []float32{99, 2, 3, 4, 5, 6, 7, 8}; !slices.Equal(down, want) {
		t.Errorf("after Sync: %v, want %v (the source as the stream read it)", down, want)
	}
	s := d.Stats()
	if s.Syncs-base.Syncs != 1 || s.ImplicitWaits != base.ImplicitWaits || s.H2DBytes-base.H2DBytes != 32 || s.D2HBytes-base.D2HBytes != 32 ||
		s.H2DCopies-base.H2DCopies != 1 || s.D2HCopies-base.D2HCopies != 1 || s.PinnedHostBytes != paramBytes+64 {
		t.Errorf("stats %+v (from %+v): want 1 wait, 32 B and 1 copy each way, pinned = parameter block + 64 B of blocks", s, base)
	}
	if c := counters(t, lib); c.PageableCopies != 0 || c.LivePinned != 3 {
		t.Errorf("fake driver: %+v; want no pageable copy, 3 pinned blocks (parameters and the two)", c)
	}

	checkFreeHost(t, d, hm, lib, buf, up, down)
}

// checkFreeHost: FreeHost of up with a copy from it into buf still queued
// waits first (counted), so the device gets the values, then frees; a
// block freed twice, a Go slice, a slice not at a block's start and nil
// are refused, and so is AllocHost of nothing. down stays allocated.
func checkFreeHost(t *testing.T, d *CUDA, hm HostMemory, lib string, buf Buffer, up, down []float32) {
	t.Helper()
	// FreeHost with a copy from the block still queued: it waits first
	// (counted), so the device gets the values, then frees.
	for i := range up {
		up[i] = 7
	}
	if err := d.CopyToDevice(buf, 0, up); err != nil {
		t.Fatal(err)
	}
	before := d.Stats()
	if err := hm.FreeHost(up); err != nil {
		t.Fatal(err)
	}
	if s := d.Stats(); s.Syncs-before.Syncs != 1 || s.ImplicitWaits-before.ImplicitWaits != 1 || s.PinnedHostBytes != paramBytes+32 {
		t.Errorf("FreeHost: %d waits (%d implicit), pinned %d B; want one implicit wait and the block's 32 B gone",
			s.Syncs-before.Syncs, s.ImplicitWaits-before.ImplicitWaits, s.PinnedHostBytes)
	}
	back := make([]float32, 8)
	if err := d.CopyToHost(back, buf, 0); err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back, []float32{7, 7, 7, 7, 7, 7, 7, 7}) {
		t.Errorf("copy queued before FreeHost: device holds %v, want 7s", back)
	}
	if got := hm.HostBuffers(); !slices.Equal(got, []BufferUse{{"test.down", 32}}) {
		t.Errorf("HostBuffers after FreeHost = %v", got)
	}
	for name, p := range map[string][]float32{"freed twice": up, "a Go slice": back, "not at the block's start": down[1:], "nil": nil} {
		if err := hm.FreeHost(p); err == nil || !strings.Contains(err.Error(), "not a block AllocHost returned") {
			t.Errorf("FreeHost of %s: %v, want refused", name, err)
		}
	}
	if _, err := hm.AllocHost("test.empty", 0); err == nil {
		t.Error("AllocHost of 0 floats: no error")
	}
	if c := counters(t, lib); c.PageableCopies != 0 || c.LivePinned != 3 { // parameters, down, d2h staging (back)
		t.Errorf("fake driver: %+v; want no pageable copy, 3 pinned blocks", c)
	}
}

// TestCUDAHostMemoryPartly: a slice that lies only partly inside a block
// goes the staged way, a slice wholly inside one (anywhere in it) the
// direct way, and both give the right values at the Sync. hostAddr's
// containment is checked on Go memory, whose blocks the test makes up.
func TestCUDAHostMemoryPartly(t *testing.T) {
	d, lib := openFakeCUDA(t, nil)
	defer d.Close()
	var arr [16]float32
	saved := d.hostBlocks
	d.hostBlocks = []hostBlock{{base: uintptr(unsafe.Pointer(&arr[4])), bytes: 8 * 4, name: "made up"}}
	for _, c := range []struct {
		lo, hi int
		in     bool
	}{{4, 12, true}, {5, 7, true}, {11, 12, true}, {0, 8, false}, {3, 5, false}, {6, 14, false}, {12, 16, false}, {0, 4, false}} {
		if got := d.hostAddr(arr[c.lo:c.hi]) != 0; got != c.in {
			t.Errorf("arr[%d:%d] against a block at arr[4:12]: inside %v, want %v", c.lo, c.hi, got, c.in)
		}
	}
	d.hostBlocks = saved

	blk, err := d.AllocHost("test.blk", 16)
	if err != nil {
		t.Fatal(err)
	}
	buf, _ := d.Alloc("test.buf", 16)
	src := make([]float32, 16)
	for i := range src {
		src[i] = float32(i + 1)
	}
	if err := d.CopyToDevice(buf, 0, src); err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	fakecuda.ResetCounters(lib)
	// The device knows the block as 8 floats from here on (the memory
	// stays 16), so that blk[4:12] reaches out of it.
	d.hostBlocks[0].bytes = 8 * 4
	defer func() { d.hostBlocks[0].bytes = 16 * 4 }()
	if err := d.CopyToHost(blk[0:8], buf, 0); err != nil {
		t.Fatal(err)
	}
	if len(d.pending) != 0 {
		t.Fatalf("a slice inside the block: %d copies pending, want the direct copy", len(d.pending))
	}
	if err := d.CopyToHost(blk[4:12], buf, 8); err != nil {
		t.Fatal(err)
	}
	if len(d.pending) != 1 || d.d2h.base == 0 {
		t.Fatalf("a slice partly inside the block: %d copies pending, d2h staging %d B; want it staged", len(d.pending), d.d2h.size)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	// The staged copy lands after the direct one (the wait moves it),
	// over blk[4:8].
	if want := []float32{1, 2, 3, 4, 9, 10, 11, 12, 13, 14, 15, 16}; !slices.Equal(blk[:12], want) {
		t.Errorf("block after Sync: %v, want %v", blk[:12], want)
	}
	if c := counters(t, lib); c.PageableCopies != 0 {
		t.Errorf("%d copies from pageable memory, want 0", c.PageableCopies)
	}
}

// TestCUDAHostMemoryClose: Close frees the blocks the caller still holds;
// the fake's pinned blocks go to 0, and so does PinnedHostBytes.
func TestCUDAHostMemoryClose(t *testing.T) {
	d, lib := openFakeCUDA(t, nil)
	b, _ := d.Alloc("test.buf", 4)
	h, err := d.AllocHost("test.kept", 4)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.AllocHost("test.kept2", 1000); err != nil {
		t.Fatal(err)
	}
	if err := d.CopyToHost(h, b, 0); err != nil { // queued at Close
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if c := counters(t, lib); c.LivePinned != 0 || c.LiveAllocs != 0 {
		t.Errorf("after Close: %+v, want no pinned block or allocation left", c)
	}
	if s := d.Stats(); s.PinnedHostBytes != 0 {
		t.Errorf("after Close: pinned %d B, want 0", s.PinnedHostBytes)
	}
	if err := d.FreeHost(h); err != ErrClosed {
		t.Errorf("FreeHost after Close = %v, want ErrClosed", err)
	}
	if _, err := d.AllocHost("late", 4); err != ErrClosed {
		t.Errorf("AllocHost after Close = %v, want ErrClosed", err)
	}
}
