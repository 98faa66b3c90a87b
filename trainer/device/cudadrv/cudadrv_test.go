package cudadrv

// These tests run the binding against the fake driver of internal/fakecuda
// (a C library built with gcc; they skip where gcc is missing). They call
// OpenDriver and OpenBLAS, not Load and LoadBLAS, which keep their first
// result for the process.

import (
	"errors"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"memprobe/internal/fakecuda"
)

func openFake(t *testing.T) (*Driver, string) {
	t.Helper()
	path := fakecuda.Use(t)
	d, err := OpenDriver(path)
	if err != nil {
		t.Fatal(err)
	}
	return d, path
}

// withContext retains GPU 0's primary context and makes it current on the
// calling goroutine's OS thread, locked until the returned func runs (on the
// same goroutine).
func withContext(t *testing.T, d *Driver) func() {
	t.Helper()
	runtime.LockOSThread()
	dev, err := d.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := d.PrimaryCtxRetain(dev)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.CtxSetCurrent(ctx); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := d.CtxSetCurrent(0); err != nil {
			t.Error(err)
		}
		if err := d.PrimaryCtxRelease(dev); err != nil {
			t.Error(err)
		}
		runtime.UnlockOSThread()
	}
}

func checkNoLeaks(t *testing.T, path string) {
	t.Helper()
	c, err := fakecuda.ReadCounters(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.LiveAllocs != 0 || c.LivePinned != 0 || c.LiveStreams != 0 || c.LiveHandles != 0 || c.LiveEvents != 0 || c.CtxRefs != 0 {
		t.Errorf("the fake still holds %+v", c)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func hostFloats(p uintptr, n int) []float32 {
	return unsafe.Slice((*float32)(unsafe.Add(unsafe.Pointer(nil), p)), n)
}

func TestOpenDriverMissingLibrary(t *testing.T) {
	path := filepath.Join(t.TempDir(), "libcuda.so.1")
	_, err := OpenDriver(path)
	if err == nil {
		t.Fatal("OpenDriver of a missing file succeeded")
	}
	if err == ErrNoCgo { // CGO_ENABLED=0: no library is opened, missing or not
		t.Skip(err)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "no CUDA driver: ") || !strings.Contains(msg, path) || !strings.Contains(msg, "not found") {
		t.Errorf("error %q: want \"no CUDA driver: <path> not found (...)\"", msg)
	}
	if !errors.Is(err, ErrNoDriver) {
		t.Errorf("errors.Is(%v, ErrNoDriver) = false", err)
	}
}

func TestOpenDriverMissingSymbol(t *testing.T) {
	path := fakecuda.Build(t, fakecuda.OmitDtoH)
	_, err := OpenDriver(path)
	var le *LibraryError
	if !errors.As(err, &le) || le.Symbol != "cuMemcpyDtoHAsync_v2" || le.Library != path {
		t.Fatalf("error %v: want a LibraryError for cuMemcpyDtoHAsync_v2 in %s", err, path)
	}
	if errors.Is(err, ErrNoDriver) {
		t.Errorf("a driver lacking a symbol matches ErrNoDriver: %v", err)
	}
	if !strings.Contains(err.Error(), "lacks cuMemcpyDtoHAsync_v2") {
		t.Errorf("error %q does not name the symbol", err)
	}
}

func TestInitError(t *testing.T) {
	path := fakecuda.Build(t)
	t.Setenv("FAKECUDA_INIT_ERROR", "100")
	_, err := OpenDriver(path)
	if want := "cuInit: CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected"; err == nil || err.Error() != want {
		t.Fatalf("OpenDriver: %v, want %q", err, want)
	}
	var e *Error
	if !errors.As(err, &e) || e.Code != ErrNoDevice || e.Call != "cuInit" {
		t.Errorf("error %#v", err)
	}
	if errors.Is(err, ErrNoDriver) {
		t.Errorf("a driver whose cuInit fails matches ErrNoDriver")
	}
}

func TestUnknownErrorCode(t *testing.T) {
	path := fakecuda.Build(t)
	t.Setenv("FAKECUDA_INIT_ERROR", "9999")
	_, err := OpenDriver(path)
	if want := "cuInit: error 9999"; err == nil || err.Error() != want {
		t.Fatalf("OpenDriver: %v, want %q", err, want)
	}
}

func TestNoContext(t *testing.T) {
	d, path := openFake(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	must(t, d.CtxSetCurrent(0)) // whatever an earlier user of this thread left
	_, err := d.MemAlloc(64)
	if want := "cuMemAlloc_v2: CUDA_ERROR_INVALID_CONTEXT (201): invalid device context"; err == nil || err.Error() != want {
		t.Fatalf("MemAlloc without a current context: %v, want %q", err, want)
	}
	var e *Error
	if !errors.As(err, &e) || e.Code != 201 {
		t.Errorf("error %#v", err)
	}
	if _, _, err := d.MemGetInfo(); err == nil {
		t.Error("MemGetInfo without a current context succeeded")
	}
	if _, err := d.EventCreate(EventDefault); err == nil || !errors.As(err, &e) || e.Code != 201 {
		t.Errorf("EventCreate without a current context: %v, want CUDA_ERROR_INVALID_CONTEXT", err)
	}
	b, err := OpenBLAS()
	must(t, err)
	_, err = b.Create()
	if want := "cublasCreate_v2: CUBLAS_STATUS_NOT_INITIALIZED (1): library not initialized"; err == nil || err.Error() != want {
		t.Errorf("cuBLAS Create without a current context: %v, want %q", err, want)
	}
	checkNoLeaks(t, path)
}

func TestDeviceQueries(t *testing.T) {
	d, path := openFake(t)
	if v, err := d.Version(); err != nil || v != fakecuda.DriverVersion {
		t.Errorf("Version %d, %v", v, err)
	}
	if n, err := d.DeviceCount(); err != nil || n != 1 {
		t.Errorf("DeviceCount %d, %v", n, err)
	}
	dev, err := d.Device(0)
	must(t, err)
	if n, err := d.DeviceTotalMem(dev); err != nil || n != fakecuda.TotalBytes {
		t.Errorf("DeviceTotalMem %d, %v", n, err)
	}
	_, err = d.Device(1)
	if want := "cuDeviceGet: CUDA_ERROR_INVALID_DEVICE (101): invalid device ordinal"; err == nil || err.Error() != want {
		t.Errorf("Device(1): %v, want %q", err, want)
	}

	release := withContext(t, d)
	defer func() {
		release()
		checkNoLeaks(t, path)
	}()
	free0, total, err := d.MemGetInfo()
	must(t, err)
	if total != fakecuda.TotalBytes || free0 > total-fakecuda.ContextBytes {
		t.Errorf("MemGetInfo free %d total %d: want total %d and the context's %d used", free0, total, uint64(fakecuda.TotalBytes), fakecuda.ContextBytes)
	}
	for _, c := range []struct{ bytes, charged int }{{4, 2 << 20}, {3<<20 + 4, 4 << 20}, {2 << 20, 2 << 20}} {
		p, err := d.MemAlloc(c.bytes)
		must(t, err)
		free1, _, err := d.MemGetInfo()
		must(t, err)
		if free0-free1 != uint64(c.charged) {
			t.Errorf("MemAlloc(%d): free fell by %d, want %d", c.bytes, free0-free1, c.charged)
		}
		must(t, d.MemFree(p))
		if free2, _, err := d.MemGetInfo(); err != nil || free2 != free0 {
			t.Errorf("after MemFree: free %d (%v), want %d", free2, err, free0)
		}
	}
}

// TestDeviceName is its own test: DeviceName reads the name out of a Go
// buffer, and under -race (checkptr) any pointer arithmetic from a uintptr
// into Go memory is fatal for the whole test binary.
func TestDeviceName(t *testing.T) {
	d, _ := openFake(t)
	dev, err := d.Device(0)
	must(t, err)
	if name, err := d.DeviceName(dev); err != nil || name != fakecuda.DeviceName {
		t.Errorf("DeviceName %q, %v", name, err)
	}
}

// gemmCase is one Sgemm call on column-major matrices with leading
// dimensions at least as large as their rows.
type gemmCase struct {
	ta, tb        Op
	m, n, k       int
	lda, ldb, ldc int
	alpha, beta   float32
}

// naive is C = alpha·op(A)·op(B) + beta·C, column-major.
func (c gemmCase) naive(A, B, C []float32) {
	for j := 0; j < c.n; j++ {
		for i := 0; i < c.m; i++ {
			var acc float32
			for l := 0; l < c.k; l++ {
				a := A[i+l*c.lda]
				if c.ta == OpT {
					a = A[l+i*c.lda]
				}
				b := B[l+j*c.ldb]
				if c.tb == OpT {
					b = B[j+l*c.ldb]
				}
				acc += a * b
			}
			C[i+j*c.ldc] = c.alpha*acc + c.beta*C[i+j*c.ldc]
		}
	}
}

func TestSgemm(t *testing.T) {
	d, path := openFake(t)
	release := withContext(t, d)
	defer func() {
		release()
		checkNoLeaks(t, path)
	}()
	b, err := OpenBLAS()
	must(t, err)
	if b.Library != path || b.statusName == 0 || b.statusString == 0 {
		t.Fatalf("OpenBLAS: library %q (want %q), status name/string resolved: %v %v", b.Library, path, b.statusName != 0, b.statusString != 0)
	}
	h, err := b.Create()
	must(t, err)
	defer func() { must(t, b.Destroy(h)) }()
	if v, err := b.Version(h); err != nil || v != fakecuda.BLASVersion {
		t.Errorf("Version %d, %v", v, err)
	}
	s, err := d.StreamCreate(StreamNonBlocking)
	must(t, err)
	defer func() { must(t, d.StreamDestroy(s)) }()
	must(t, b.SetStream(h, s))

	scal, err := d.MemHostAlloc(8) // alpha, beta: pinned, as the cuda device keeps them
	must(t, err)
	defer func() { must(t, d.MemFreeHost(scal)) }()
	const maxElems = 64
	host, err := d.MemHostAlloc(3 * maxElems * 4)
	must(t, err)
	defer func() { must(t, d.MemFreeHost(host)) }()
	hA, hB, hC := hostFloats(host, maxElems), hostFloats(host+maxElems*4, maxElems), hostFloats(host+2*maxElems*4, maxElems)
	dA, err := d.MemAlloc(maxElems * 4)
	must(t, err)
	dB, err := d.MemAlloc(maxElems * 4)
	must(t, err)
	dC, err := d.MemAlloc(maxElems * 4)
	must(t, err)
	defer func() {
		for _, p := range []DevicePtr{dA, dB, dC} {
			must(t, d.MemFree(p))
		}
	}()

	cases := []gemmCase{
		{ta: OpN, tb: OpN, m: 3, n: 5, k: 4, lda: 3, ldb: 4, ldc: 3, alpha: 1, beta: 0},
		{ta: OpN, tb: OpN, m: 3, n: 5, k: 4, lda: 4, ldb: 6, ldc: 5, alpha: 2, beta: 0.5},
		{ta: OpT, tb: OpN, m: 3, n: 5, k: 4, lda: 4, ldb: 4, ldc: 3, alpha: 1, beta: 0},
		{ta: OpT, tb: OpN, m: 3, n: 5, k: 4, lda: 5, ldb: 4, ldc: 4, alpha: 2, beta: 0.5},
		{ta: OpN, tb: OpT, m: 3, n: 5, k: 4, lda: 3, ldb: 5, ldc: 3, alpha: 2, beta: 0.5},
		{ta: OpT, tb: OpT, m: 3, n: 5, k: 4, lda: 4, ldb: 5, ldc: 3, alpha: -1, beta: 1},
		// The cuda device's Logits: out (V, rows) = weight (C, V)ᵀ · hidden (C, rows).
		{ta: OpT, tb: OpN, m: 7, n: 2, k: 3, lda: 3, ldb: 3, ldc: 7, alpha: 1, beta: 0},
	}
	for _, c := range cases {
		for i := 0; i < maxElems; i++ {
			hA[i] = float32((i*7)%11) - 5
			hB[i] = float32((i*5)%13)/4 - 1
			hC[i] = float32(i%9) - 4
		}
		want := make([]float32, maxElems)
		for i := range want { // not copy or append: go1.26.8's compiler crashes on those (disjointTypes)
			want[i] = hC[i]
		}
		c.naive(hA, hB, want)
		alpha, beta := hostFloats(scal, 2)[0:1], hostFloats(scal, 2)[1:2]
		alpha[0], beta[0] = c.alpha, c.beta
		must(t, d.MemcpyHtoDAsync(dA, host, maxElems*4, s))
		must(t, d.MemcpyHtoDAsync(dB, host+maxElems*4, maxElems*4, s))
		must(t, d.MemcpyHtoDAsync(dC, host+2*maxElems*4, maxElems*4, s))
		must(t, b.Sgemm(h, c.ta, c.tb, c.m, c.n, c.k, scal, dA, c.lda, dB, c.ldb, scal+4, dC, c.ldc))
		// cuBLAS read alpha and beta at the call (host pointer mode): the
		// block may be reused before the stream runs the product.
		alpha[0], beta[0] = 1000, 1000
		must(t, d.MemcpyDtoHAsync(host+2*maxElems*4, dC, maxElems*4, s))
		must(t, d.StreamSynchronize(s))
		for i := range want {
			if diff := hC[i] - want[i]; diff > 1e-5 || diff < -1e-5 {
				t.Errorf("%+v: C[%d] = %v, want %v", c, i, hC[i], want[i])
				break
			}
		}
	}

	// Invalid arguments are refused at the call, with cuBLAS's own words.
	err = b.Sgemm(h, OpN, OpN, 3, 5, 4, scal, dA, 2, dB, 4, scal+4, dC, 3)
	if want := "cublasSgemm_v2: CUBLAS_STATUS_INVALID_VALUE (7): "; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Sgemm with lda < m: %v, want %q...", err, want)
	}
	if err := b.Sgemm(h, OpT, OpN, 3, 5, 4, scal, dA, 3, dB, 4, scal+4, dC, 3); err == nil {
		t.Error("Sgemm T with lda < k succeeded")
	}
	if err := b.Sgemm(h, OpN, OpN, 9, 9, 9, scal, dA, 9, dB, 9, scal+4, dC, 9); err == nil {
		t.Error("Sgemm past the end of its allocations succeeded")
	}
}

// TestErrorText checks check's formatting for a code with and without a
// name, the way every call reports failures.
func TestErrorText(t *testing.T) {
	d, _ := openFake(t)
	for code, want := range map[Result]string{
		2:    "cuX: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory",
		700:  "cuX: CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access was encountered",
		9999: "cuX: error 9999",
	} {
		if err := d.check("cuX", code); err == nil || err.Error() != want {
			t.Errorf("check(%d) = %v, want %q", code, err, want)
		}
	}
	if err := d.check("cuX", Success); err != nil {
		t.Errorf("check(Success) = %v", err)
	}
}

// TestOutPointersSurviveStackGrowth: the binding passes the addresses of
// its out-parameters (locals) to the driver as uintptrs. If the goroutine's
// stack grows between the conversion and the C call, the locals move and
// the driver writes to the old stack, unless every function the uintptr
// travels through is //go:uintptrescapes (callOut is), which
// makes such locals heap-allocated. Calls from fresh goroutines at many
// stack depths make the growth land inside the binding's call path.
func TestOutPointersSurviveStackGrowth(t *testing.T) {
	d, _ := openFake(t)
	for depth := 0; depth < 400; depth++ {
		done := make(chan [2]int, 1)
		go func() { done <- queryAtDepth(d, depth) }()
		if got := <-done; got != [2]int{1, fakecuda.DriverVersion} {
			t.Fatalf("at stack depth %d: DeviceCount, Version = %v, want [1 %d]", depth, got, fakecuda.DriverVersion)
		}
	}
}

//go:noinline
func queryAtDepth(d *Driver, depth int) [2]int {
	var pad [40]byte // about 100 bytes of stack a level
	if depth > 0 {
		r := queryAtDepth(d, depth-1)
		r[0] += int(pad[depth%len(pad)])
		return r
	}
	n, _ := d.DeviceCount()
	v, _ := d.Version()
	return [2]int{n, v}
}

// wantError checks that err is an *Error of call with code, reading as the
// driver words it.
func wantError(t *testing.T, what string, err error, call string, code Result, text string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Call != call || e.Code != code {
		t.Errorf("%s: %v, want %s failing with %d", what, err, call, int(code))
		return
	}
	if want := call + ": " + text; err.Error() != want {
		t.Errorf("%s: %q, want %q", what, err, want)
	}
}

const (
	notReady      = "CUDA_ERROR_NOT_READY (600): device not ready"
	invalidHandle = "CUDA_ERROR_INVALID_HANDLE (400): invalid resource handle"
)

// TestEvents times a stream's work the way the cuda device does: an event
// before the work, one after, the elapsed time read after the sync. On
// the fake the work runs at the sync, so the time is the host's for the
// memsets between the events: positive, whatever the machine.
func TestEvents(t *testing.T) {
	d, path := openFake(t)
	release := withContext(t, d)
	defer func() {
		release()
		checkNoLeaks(t, path)
	}()
	if !d.HasEvents() {
		t.Fatalf("HasEvents false on the fake, which has them: %v", d.noEvents)
	}
	s, err := d.StreamCreate(StreamNonBlocking)
	must(t, err)
	defer func() { must(t, d.StreamDestroy(s)) }()
	const words = 1 << 22 // 16 MiB: real work for the fake's memset loop
	buf, err := d.MemAlloc(words * 4)
	must(t, err)
	defer func() { must(t, d.MemFree(buf)) }()
	start, err := d.EventCreate(EventDefault)
	must(t, err)
	end, err := d.EventCreate(EventDefault)
	must(t, err)
	defer func() {
		must(t, d.EventDestroy(start))
		must(t, d.EventDestroy(end))
	}()

	must(t, d.EventRecord(start, s))
	must(t, d.MemsetD32Async(buf, 1, words, s))
	must(t, d.MemsetD32Async(buf, 2, words, s))
	must(t, d.EventRecord(end, s))
	_, err = d.EventElapsedTime(start, end)
	wantError(t, "EventElapsedTime before the sync", err, "cuEventElapsedTime", ErrNotReady, notReady)
	must(t, d.StreamSynchronize(s))
	ms, err := d.EventElapsedTime(start, end)
	must(t, err)
	if !(ms > 0) {
		t.Errorf("EventElapsedTime over two 16 MiB memsets: %v ms, want > 0", ms)
	}
	if back, err := d.EventElapsedTime(end, start); err != nil || back != -ms {
		t.Errorf("EventElapsedTime(end, start) = %v, %v; want %v", back, err, -ms)
	}

	// Recording start again: pending until the stream reaches it, then it
	// stands for the new point, after end (with the old record it would
	// read -ms).
	must(t, d.EventRecord(start, s))
	_, err = d.EventElapsedTime(end, start)
	wantError(t, "EventElapsedTime after a re-record, before the sync", err, "cuEventElapsedTime", ErrNotReady, notReady)
	must(t, d.StreamSynchronize(s))
	if ms, err := d.EventElapsedTime(end, start); err != nil || !(ms >= 0) {
		t.Errorf("end to the re-recorded start: %v ms, %v; want >= 0", ms, err)
	}

	// The default stream (0) records too.
	must(t, d.EventRecord(end, 0))
	must(t, d.StreamSynchronize(0))
	if ms, err := d.EventElapsedTime(start, end); err != nil || !(ms >= 0) {
		t.Errorf("start to end on the default stream: %v ms, %v; want >= 0", ms, err)
	}

	checkEventAllocs(t, d, s, start, end)
	checkEventErrors(t, d, s, end, buf, words, path)
	must(t, d.StreamSynchronize(s))
}

// checkEventAllocs: recording an event (on the cuda device's per-wait
// path) and reading the time into pinned memory allocate nothing; reading
// it through a Go out-parameter (callOut) costs the float and callOut's
// arguments.
func checkEventAllocs(t *testing.T, d *Driver, s Stream, start, end Event) {
	t.Helper()
	// Recording is on the cuda device's per-wait path: no allocation.
	if n := testing.AllocsPerRun(100, func() { _ = d.EventRecord(end, s) }); n != 0 {
		t.Errorf("EventRecord allocates %v objects per call, want 0", n)
	}
	must(t, d.StreamSynchronize(s))
	// Reading the time into pinned memory allocates nothing; through a Go
	// out-parameter (callOut) it costs the float and callOut's arguments.
	slot, err := d.MemHostAlloc(4)
	must(t, err)
	defer func() { must(t, d.MemFreeHost(slot)) }()
	must(t, d.EventElapsedTimeInto(slot, start, end))
	if want, err := d.EventElapsedTime(start, end); err != nil || hostFloats(slot, 1)[0] != want {
		t.Errorf("EventElapsedTimeInto wrote %v, EventElapsedTime says %v (%v)", hostFloats(slot, 1)[0], want, err)
	}
	if n := testing.AllocsPerRun(100, func() { _ = d.EventElapsedTimeInto(slot, start, end) }); n != 0 {
		t.Errorf("EventElapsedTimeInto allocates %v objects per call, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = d.EventElapsedTime(start, end) }); n > 2 {
		t.Errorf("EventElapsedTime allocates %v objects per call, want at most 2", n)
	}

}

// checkEventErrors: an event never recorded, one untimed and unknown
// flags are errors; a destroyed event is a stale handle; destroying one
// whose record is still queued (on s, before a memset of buf's words) is
// not an error: the record runs at the sync without it.
func checkEventErrors(t *testing.T, d *Driver, s Stream, end Event, buf DevicePtr, words int, path string) {
	t.Helper()
	// Never recorded, untimed, unknown flags.
	never, err := d.EventCreate(EventDefault)
	must(t, err)
	_, err = d.EventElapsedTime(never, end)
	wantError(t, "EventElapsedTime from a never-recorded event", err, "cuEventElapsedTime", 400, invalidHandle)
	_, err = d.EventElapsedTime(end, never)
	wantError(t, "EventElapsedTime to a never-recorded event", err, "cuEventElapsedTime", 400, invalidHandle)
	untimed, err := d.EventCreate(EventDisableTiming)
	must(t, err)
	must(t, d.EventRecord(untimed, s))
	must(t, d.StreamSynchronize(s))
	_, err = d.EventElapsedTime(untimed, end)
	wantError(t, "EventElapsedTime from an EventDisableTiming event", err, "cuEventElapsedTime", 400, invalidHandle)
	must(t, d.EventDestroy(untimed))
	_, err = d.EventCreate(0x8)
	wantError(t, "EventCreate(0x8)", err, "cuEventCreate", 1, "CUDA_ERROR_INVALID_VALUE (1): invalid argument")

	// A destroyed event is a stale handle.
	must(t, d.EventDestroy(never))
	wantError(t, "EventRecord of a destroyed event", d.EventRecord(never, s), "cuEventRecord", 400, invalidHandle)
	_, err = d.EventElapsedTime(never, end)
	wantError(t, "EventElapsedTime of a destroyed event", err, "cuEventElapsedTime", 400, invalidHandle)
	wantError(t, "EventDestroy twice", d.EventDestroy(never), "cuEventDestroy_v2", 400, invalidHandle)

	// Destroying an event whose record is still queued: the record runs
	// at the sync without it.
	queued, err := d.EventCreate(EventDefault)
	must(t, err)
	must(t, d.EventRecord(queued, s))
	must(t, d.MemsetD32Async(buf, 3, words, s))
	must(t, d.EventRecord(queued, s))
	must(t, d.EventDestroy(queued))
	if c, err := fakecuda.ReadCounters(path); err != nil || c.LiveEvents != 2 {
		t.Errorf("events live after destroying a queued one: %d (%v), want 2", c.LiveEvents, err)
	}
	must(t, d.StreamSynchronize(s))
}

// TestEventsOptional: a driver without the event entry points opens and
// works, untimed; each Event method names what is missing instead of
// calling it.
func TestEventsOptional(t *testing.T) {
	path := fakecuda.Build(t, fakecuda.OmitEvents)
	d, err := OpenDriver(path)
	if err != nil {
		t.Fatalf("OpenDriver of a driver without events: %v", err)
	}
	if d.HasEvents() {
		t.Fatal("HasEvents true on a driver without cuEvent*")
	}
	if n, err := d.DeviceCount(); err != nil || n != 1 {
		t.Errorf("DeviceCount %d, %v", n, err)
	}
	wantMissing := func(what string, err error, sym string) {
		t.Helper()
		var le *LibraryError
		if !errors.As(err, &le) || le.Symbol != sym || le.Library != path {
			t.Errorf("%s: %v, want a LibraryError for %s in %s", what, err, sym, path)
			return
		}
		if !strings.Contains(err.Error(), "lacks "+sym) || errors.Is(err, ErrNoDriver) {
			t.Errorf("%s: %q, want it to name %s (and not to be ErrNoDriver)", what, err, sym)
		}
	}
	_, err = d.EventCreate(EventDefault)
	wantMissing("EventCreate", err, "cuEventCreate")
	wantMissing("EventRecord", d.EventRecord(1, 0), "cuEventRecord")
	_, err = d.EventElapsedTime(1, 2)
	wantMissing("EventElapsedTime", err, "cuEventElapsedTime")
	wantMissing("EventElapsedTimeInto", d.EventElapsedTimeInto(0, 1, 2), "cuEventElapsedTime")
	wantMissing("EventDestroy", d.EventDestroy(1), "cuEventDestroy_v2")

	// One missing is all missing: the others are refused too, naming it,
	// rather than used half.
	partial := &Driver{Library: "libcuda.so.1", noEvents: map[string]error{
		"cuEventElapsedTime": &LibraryError{Library: "libcuda.so.1", Symbol: "cuEventElapsedTime", Reason: "undefined symbol"},
	}}
	if partial.HasEvents() {
		t.Error("HasEvents true with cuEventElapsedTime missing")
	}
	for _, err := range []error{partial.EventRecord(1, 0), partial.EventDestroy(1)} {
		var le *LibraryError
		if !errors.As(err, &le) || le.Symbol != "cuEventElapsedTime" {
			t.Errorf("with cuEventElapsedTime missing: %v, want its LibraryError", err)
		}
	}
}
