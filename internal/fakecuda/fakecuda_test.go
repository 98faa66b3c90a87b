package fakecuda_test

import (
	"errors"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"memprobe/internal/dl"
	"memprobe/internal/fakecuda"
	"memprobe/trainer/device/cudadrv"
	"memprobe/trainer/device/kernels"
)

// gpu is the fake opened through the binding, with GPU 0's primary context
// current on the test's locked OS thread.
type gpu struct {
	t    *testing.T
	path string
	d    *cudadrv.Driver
	dev  cudadrv.Device
	s    cudadrv.Stream
}

// open locks the OS thread and makes the context current; close (deferred by
// the caller, on the same goroutine) undoes it and checks nothing leaked.
func open(t *testing.T, defines ...string) *gpu {
	t.Helper()
	path := fakecuda.Build(t, defines...)
	d, err := cudadrv.OpenDriver(path)
	if err != nil {
		t.Fatal(err)
	}
	g := &gpu{t: t, path: path, d: d}
	runtime.LockOSThread()
	if g.dev, err = d.Device(0); err != nil {
		t.Fatal(err)
	}
	ctx, err := d.PrimaryCtxRetain(g.dev)
	if err != nil {
		t.Fatal(err)
	}
	g.must(d.CtxSetCurrent(ctx))
	if g.s, err = d.StreamCreate(cudadrv.StreamNonBlocking); err != nil {
		t.Fatal(err)
	}
	g.must(fakecuda.ResetCounters(path))
	return g
}

func (g *gpu) close() {
	g.t.Helper()
	g.must(g.d.StreamDestroy(g.s))
	g.must(g.d.CtxSetCurrent(0))
	g.must(g.d.PrimaryCtxRelease(g.dev))
	runtime.UnlockOSThread()
	c := g.counters()
	if c.LiveAllocs != 0 || c.LivePinned != 0 || c.LiveStreams != 0 || c.LiveHandles != 0 || c.LiveModules != 0 || c.LiveEvents != 0 || c.CtxRefs != 0 {
		g.t.Errorf("leaked: %+v", c)
	}
}

func (g *gpu) must(err error) {
	g.t.Helper()
	if err != nil {
		g.t.Fatal(err)
	}
}

func (g *gpu) counters() fakecuda.Counters {
	g.t.Helper()
	c, err := fakecuda.ReadCounters(g.path)
	g.must(err)
	return c
}

func (g *gpu) alloc(n int) cudadrv.DevicePtr {
	g.t.Helper()
	p, err := g.d.MemAlloc(n * 4)
	g.must(err)
	return p
}

// pinned returns n floats of pinned host memory and its address.
func (g *gpu) pinned(n int) ([]float32, uintptr) {
	g.t.Helper()
	p, err := g.d.MemHostAlloc(n * 4)
	g.must(err)
	return floats(p, n), p
}

func floats(p uintptr, n int) []float32 {
	return unsafe.Slice((*float32)(unsafe.Add(unsafe.Pointer(nil), p)), n)
}

// wantCode checks that err is the driver's code.
func wantCode(t *testing.T, err error, code cudadrv.Result) {
	t.Helper()
	var e *cudadrv.Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("error %v, want code %d", err, code)
	}
}

func TestEnvNamesMatchBinding(t *testing.T) {
	if fakecuda.EnvLibCUDA != cudadrv.EnvLibCUDA || fakecuda.EnvLibCUBLAS != cudadrv.EnvLibCUBLAS {
		t.Fatal("fakecuda's variable names differ from cudadrv's")
	}
}

func TestBuildCachesByDefines(t *testing.T) {
	a, b := fakecuda.Build(t), fakecuda.Build(t)
	if a != b {
		t.Errorf("two builds without defines: %s, %s", a, b)
	}
	c := fakecuda.Build(t, fakecuda.OmitDtoH)
	if d := fakecuda.Build(t, "-D"+fakecuda.OmitDtoH); c != d || c == a {
		t.Errorf("builds with %s: %s, %s (plain %s)", fakecuda.OmitDtoH, c, d, a)
	}
	if p := fakecuda.Use(t); p != a {
		t.Errorf("Use = %s, Build = %s", p, a)
	}
}

// TestDeferredCopies: copies run at the sync, reading their source then.
func TestDeferredCopies(t *testing.T) {
	g := open(t)
	defer g.close()
	src, srcP := g.pinned(4)
	dst, dstP := g.pinned(4)
	buf := g.alloc(4)
	copy(src, []float32{1, 2, 3, 4})
	g.must(g.d.MemcpyHtoDAsync(buf, srcP, 16, g.s))
	g.must(g.d.MemcpyDtoHAsync(dstP, buf, 16, g.s))
	copy(src, []float32{5, 6, 7, 8}) // before the queued copy reads it
	if dst[0] != 0 {
		t.Fatalf("device-to-host copy landed before the sync: %v", dst)
	}
	g.must(g.d.StreamSynchronize(g.s))
	if want := []float32{5, 6, 7, 8}; !slices.Equal(dst, want) {
		t.Fatalf("after sync %v, want %v (the source as it was at the sync)", dst, want)
	}
	if c := g.counters(); c.PageableCopies != 0 {
		t.Errorf("pageable copies %d from pinned memory", c.PageableCopies)
	}
	g.must(g.d.MemFree(buf))
	g.must(g.d.MemFreeHost(srcP))
	g.must(g.d.MemFreeHost(dstP))
}

var pageable [8]float32 // Go memory that does not move

func TestPageableCopiesCounted(t *testing.T) {
	g := open(t)
	defer g.close()
	buf := g.alloc(8)
	pageable = [8]float32{1, 2, 3, 4, 5, 6, 7, 8}
	addr := uintptr(unsafe.Pointer(&pageable[0]))
	g.must(g.d.MemcpyHtoDAsync(buf, addr, 16, g.s))
	g.must(g.d.MemcpyDtoHAsync(addr+16, buf, 16, g.s))
	g.must(g.d.StreamSynchronize(g.s))
	if want := [8]float32{1, 2, 3, 4, 1, 2, 3, 4}; pageable != want {
		t.Errorf("after sync %v, want %v", pageable, want)
	}
	if c := g.counters(); c.PageableCopies != 2 {
		t.Errorf("pageable copies %d, want 2", c.PageableCopies)
	}
	g.must(g.d.MemFree(buf))
}

func TestDeviceMemory(t *testing.T) {
	g := open(t)
	defer g.close()
	h, hp := g.pinned(4)
	buf := g.alloc(4)
	g.must(g.d.MemcpyDtoHAsync(hp, buf, 16, g.s))
	g.must(g.d.StreamSynchronize(g.s))
	for _, v := range h {
		if !math.IsNaN(float64(v)) {
			t.Fatalf("fresh device memory %v, want NaNs", h)
		}
	}
	g.must(g.d.MemsetD32Async(buf, math.Float32bits(1.5), 4, g.s))
	g.must(g.d.MemcpyDtoHAsync(hp, buf, 16, g.s))
	g.must(g.d.StreamSynchronize(g.s))
	if !slices.Equal(h, []float32{1.5, 1.5, 1.5, 1.5}) {
		t.Fatalf("after memset %v", h)
	}
	// Outside the allocation, across its end, misaligned memset.
	wantCode(t, g.d.MemcpyHtoDAsync(buf+4, hp, 16, g.s), 1)
	wantCode(t, g.d.MemcpyDtoHAsync(hp, buf+16, 4, g.s), 1)
	wantCode(t, g.d.MemsetD32Async(buf+2, 0, 1, g.s), 1)
	// A queued copy lands when another buffer is freed: cuMemFree waits.
	other := g.alloc(1)
	g.must(g.d.MemsetD32Async(buf, math.Float32bits(2), 4, g.s))
	g.must(g.d.MemcpyDtoHAsync(hp, buf, 16, g.s))
	g.must(g.d.MemFree(other))
	if h[0] != 2 {
		t.Errorf("cuMemFree did not run the queued copy: %v", h)
	}
	g.must(g.d.MemFree(buf))
	// Freed and stale pointers are refused; addresses are not reused.
	wantCode(t, g.d.MemFree(buf), 1)
	wantCode(t, g.d.MemcpyHtoDAsync(buf, hp, 4, g.s), 1)
	again := g.alloc(4)
	if again == buf {
		t.Errorf("a freed device address was handed out again")
	}
	g.must(g.d.MemFree(again))
	wantCode(t, g.d.MemFreeHost(hp+4), 1)
	g.must(g.d.MemFreeHost(hp))
}

func TestContextIsPerThread(t *testing.T) {
	g := open(t)
	defer g.close()
	errc := make(chan error, 3)
	go func() {
		runtime.LockOSThread() // another thread than the test's, which stays locked
		defer runtime.UnlockOSThread()
		_, err := g.d.MemAlloc(4)
		errc <- err
		errc <- g.d.StreamSynchronize(g.s)
		_, err = g.d.EventCreate(cudadrv.EventDefault)
		errc <- err
	}()
	for i := 0; i < 3; i++ {
		err := <-errc
		wantCode(t, err, 201)
		if want := "CUDA_ERROR_INVALID_CONTEXT (201): invalid device context"; !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// ptx is enough of a PTX module for the fake: it looks for the entry.
const ptx = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry softmax_sample(\n)\n{\n\tret;\n}\n\x00"

// The images live in package variables: memory that does not move, as
// the driver reads it through a uintptr.
var (
	ptxImage = []byte(ptx)
	badImage = []byte(".version 8.0\n.visible .entry other()\n{\n}\n\x00")
)

// kernel loads the module and returns the function and a pinned parameter
// block: 8 value slots, then 8 pointers to them (kernelParams).
func (g *gpu) kernel() (cudadrv.Module, cudadrv.Function, *[8]uint64, uintptr) {
	g.t.Helper()
	m, err := g.d.ModuleLoadData(uintptr(unsafe.Pointer(&ptxImage[0])))
	g.must(err)
	f, err := g.d.ModuleGetFunction(m, "softmax_sample")
	g.must(err)
	p, err := g.d.MemHostAlloc(128)
	g.must(err)
	ptrs := unsafe.Slice((*uintptr)(unsafe.Add(unsafe.Pointer(nil), p+64)), 8)
	for i := range ptrs {
		ptrs[i] = p + uintptr(8*i)
	}
	return m, f, (*[8]uint64)(unsafe.Add(unsafe.Pointer(nil), p)), p
}

func setParams(slots *[8]uint64, out, logits, targets cudadrv.DevicePtr, rows, V int, temp float32, seed, pos uint64) {
	*slots = [8]uint64{uint64(out), uint64(logits), uint64(targets), uint64(uint32(int32(rows))), uint64(uint32(int32(V))),
		uint64(math.Float32bits(temp)), seed, pos}
}

// uniform is trainer/device.Uniform.
func uniform(seed, pos uint64) float64 {
	z := seed + (pos+1)*0x9E3779B97F4A7C15
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	z ^= z >> 31
	return float64(z>>11) / (1 << 53)
}

// reference is trainer/device's softmaxSampleRows, with the kernel's NaN
// loss for a target that is not a token id.
func reference(out, logits, targets []float32, rows, V int, temp float32, seed, pos uint64) {
	exp := func(x float32) float32 { return float32(math.Exp(float64(x))) }
	for r := 0; r < rows; r++ {
		row := logits[r*V : (r+1)*V]
		maxv, arg := row[0], 0
		for i, v := range row {
			if v > maxv {
				maxv, arg = v, i
			}
		}
		tok := arg
		if temp > 0 {
			invT := 1 / temp
			var sum float32
			for _, v := range row {
				sum += exp((v - maxv) * invT)
			}
			u := float32(uniform(seed, pos+uint64(r))) * sum
			var cum float32
			tok = V - 1
			for i, v := range row {
				cum += exp((v - maxv) * invT)
				if u < cum {
					tok = i
					break
				}
			}
		}
		tgood, tlogit := false, float32(0)
		if targets != nil {
			if t := targets[r]; t >= 0 && t < float32(V) && t == float32(int(t)) {
				tgood, tlogit = true, row[int(t)]
			}
		}
		var sum float32
		for i, v := range row {
			row[i] = exp(v - maxv)
			sum += row[i]
		}
		for i := range row {
			row[i] *= 1 / sum
		}
		loss := float32(0)
		if targets != nil {
			loss = float32(math.NaN())
			if tgood {
				loss = float32(math.Log(float64(sum))) + (maxv - tlogit)
			}
		}
		out[2*r], out[2*r+1] = float32(tok), loss
	}
}

func TestSoftmaxSampleLaunch(t *testing.T) {
	g := open(t)
	defer g.close()
	const rows, V = 4, 7
	logits := []float32{
		0.5, -1, 2, 2, 0.25, -3, 1, // tie: first max
		-4, -4, -4, -4, -4, -4, -4, // all equal
		10, 9.5, 9, -20, 3, 2, 9.99,
		-1, 0, 1, 2, 3, 4, 5,
	}
	targets := []float32{2, 0, 7, 2.5} // in range, in range, = V (NaN), not integral (NaN)
	host, hp := g.pinned(rows*V + rows + 2*rows)
	dLogits, dTargets, dOut := g.alloc(rows*V), g.alloc(rows), g.alloc(2*rows)
	m, f, slots, params := g.kernel()
	for _, temp := range []float32{0, 0.8, 1.5} {
		for _, withTargets := range []bool{true, false} {
			copy(host, logits)
			copy(host[rows*V:], targets)
			g.must(g.d.MemcpyHtoDAsync(dLogits, hp, rows*V*4, g.s))
			g.must(g.d.MemcpyHtoDAsync(dTargets, hp+uintptr(rows*V*4), rows*4, g.s))
			var tg cudadrv.DevicePtr
			var refTargets []float32
			if withTargets {
				tg, refTargets = dTargets, targets
			}
			setParams(slots, dOut, dLogits, tg, rows, V, temp, 42, 1000)
			g.must(g.d.LaunchKernel(f, [3]uint32{rows, 1, 1}, [3]uint32{kernels.SoftmaxSampleBlock, 1, 1}, 0, g.s, params+64))
			// The driver took the parameters at the launch: changing them
			// now must not change what runs.
			setParams(slots, dOut, dLogits, 0, 1, 1, 0, 0, 0)
			outOff := rows*V + rows
			g.must(g.d.MemcpyDtoHAsync(hp+uintptr(outOff*4), dOut, 2*rows*4, g.s))
			g.must(g.d.MemcpyDtoHAsync(hp, dLogits, rows*V*4, g.s))
			g.must(g.d.StreamSynchronize(g.s))

			wantProbs := append([]float32(nil), logits...)
			wantOut := make([]float32, 2*rows)
			reference(wantOut, wantProbs, refTargets, rows, V, temp, 42, 1000)
			gotOut := host[outOff : outOff+2*rows]
			for r := 0; r < rows; r++ {
				if gotOut[2*r] != wantOut[2*r] {
					t.Errorf("T=%v targets=%v row %d: token %v, want %v", temp, withTargets, r, gotOut[2*r], wantOut[2*r])
				}
				if !close32(gotOut[2*r+1], wantOut[2*r+1]) {
					t.Errorf("T=%v targets=%v row %d: loss %v, want %v", temp, withTargets, r, gotOut[2*r+1], wantOut[2*r+1])
				}
			}
			for i := range wantProbs {
				if !close32(host[i], wantProbs[i]) {
					t.Fatalf("T=%v: probability %d = %v, want %v", temp, i, host[i], wantProbs[i])
				}
			}
		}
	}
	if got := host[rows*V+rows : rows*V+rows+2]; got[0] != 2 {
		t.Errorf("row 0 token %v: want 2, the first of two maxima", got[0])
	}

	// Refused launches.
	setParams(slots, dOut, dLogits, dTargets, rows, V, 0, 0, 0)
	launch := func(f cudadrv.Function, grid, block uint32) error {
		return g.d.LaunchKernel(f, [3]uint32{grid, 1, 1}, [3]uint32{block, 1, 1}, 0, g.s, params+64)
	}
	wantCode(t, launch(f+1, rows, kernels.SoftmaxSampleBlock), 400)
	wantCode(t, launch(f, rows+1, kernels.SoftmaxSampleBlock), 1)
	wantCode(t, launch(f, rows, 128), 1)
	setParams(slots, dOut, dLogits, dTargets, rows+1, V, 0, 0, 0) // logits too short
	wantCode(t, launch(f, rows+1, kernels.SoftmaxSampleBlock), 1)
	setParams(slots, dOut+4, dLogits, dTargets, rows, V, 0, 0, 0) // out runs past its end
	wantCode(t, launch(f, rows, kernels.SoftmaxSampleBlock), 1)

	_, err := g.d.ModuleGetFunction(m, "softmax")
	wantCode(t, err, 500)
	_, err = g.d.ModuleLoadData(uintptr(unsafe.Pointer(&badImage[0])))
	wantCode(t, err, 218)
	if want := "cuModuleLoadData: CUDA_ERROR_INVALID_PTX (218): a PTX JIT compilation failed"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}

	g.must(g.d.ModuleUnload(m))
	wantCode(t, g.d.ModuleUnload(m), 400)
	wantCode(t, launch(f, rows, kernels.SoftmaxSampleBlock), 400) // its module is gone
	g.must(g.d.MemFreeHost(params))
	g.must(g.d.MemFreeHost(hp))
	for _, p := range []cudadrv.DevicePtr{dLogits, dTargets, dOut} {
		g.must(g.d.MemFree(p))
	}
}

func TestFailLaunchIsSticky(t *testing.T) {
	g := open(t)
	defer g.close()
	m, f, slots, params := g.kernel()
	out, logits := g.alloc(2), g.alloc(3)
	setParams(slots, out, logits, 0, 1, 3, 0, 0, 0)
	launch := func() error {
		return g.d.LaunchKernel(f, [3]uint32{1, 1, 1}, [3]uint32{kernels.SoftmaxSampleBlock, 1, 1}, 0, g.s, params+64)
	}
	t.Setenv(fakecuda.EnvFailLaunch, strconv.Itoa(g.counters().Launches+2))
	g.must(launch())
	g.must(g.d.StreamSynchronize(g.s))
	g.must(launch()) // accepted: it fails when it runs
	other, err := g.d.StreamCreate(0)
	g.must(err)
	for i := 0; i < 2; i++ {
		err := g.d.StreamSynchronize(g.s)
		if want := "cuStreamSynchronize: CUDA_ERROR_LAUNCH_FAILED (719): unspecified launch failure"; err == nil || err.Error() != want {
			t.Fatalf("sync %d after the failing launch: %v, want %q", i, err, want)
		}
	}
	wantCode(t, g.d.MemsetD32Async(out, 0, 1, g.s), 719)
	g.must(g.d.StreamSynchronize(other)) // another stream is unaffected
	g.must(g.d.MemsetD32Async(out, 0, 1, other))
	g.must(g.d.StreamDestroy(other))
	g.must(g.d.StreamDestroy(g.s))
	g.s, err = g.d.StreamCreate(0) // for close
	g.must(err)
	g.must(g.d.MemFree(out))
	g.must(g.d.MemFree(logits))
	g.must(g.d.ModuleUnload(m))
	g.must(g.d.MemFreeHost(params))
}

// TestMemoryAccounting follows cuMemGetInfo through the context, a module,
// allocations and a cuBLAS workspace.
func TestMemoryAccounting(t *testing.T) {
	fakecuda.Use(t)
	t.Setenv(fakecuda.EnvTotalBytes, strconv.Itoa(1<<30))
	g := open(t)
	defer g.close()
	free := func() uint64 {
		f, total, err := g.d.MemGetInfo()
		g.must(err)
		if total != 1<<30 {
			t.Fatalf("total %d", total)
		}
		return f
	}
	base := free()
	if base != 1<<30-fakecuda.ContextBytes {
		t.Fatalf("free with the context alone %d, want total - %d", base, fakecuda.ContextBytes)
	}
	m, _, _, params := g.kernel()
	if got := base - free(); got != fakecuda.ModuleBytes {
		t.Errorf("a module uses %d", got)
	}
	p := g.alloc(1)
	if got := base - free(); got != fakecuda.ModuleBytes+fakecuda.Granularity {
		t.Errorf("module + 4-byte alloc use %d", got)
	}
	_, err := g.d.MemAlloc(600 << 20)
	if want := "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory"; err == nil || err.Error() != want {
		t.Errorf("alloc beyond free memory: %v, want %q", err, want)
	}

	blas, err := cudadrv.OpenBLAS()
	g.must(err)
	h, err := blas.Create()
	g.must(err)
	g.must(blas.SetStream(h, g.s))
	one, onep := g.pinned(2)
	one[0], one[1] = 1, 0
	g.must(blas.Sgemm(h, cudadrv.OpN, cudadrv.OpN, 1, 1, 1, onep, p, 1, p, 1, onep+4, p, 1))
	g.must(blas.Sgemm(h, cudadrv.OpN, cudadrv.OpN, 1, 1, 1, onep, p, 1, p, 1, onep+4, p, 1))
	if got := base - free(); got != fakecuda.ModuleBytes+fakecuda.Granularity+fakecuda.WorkspaceBytes+fakecuda.BLASKernelBytes {
		t.Errorf("after two Sgemm on one handle: %d used", got)
	}
	g.must(g.d.StreamSynchronize(g.s))
	g.must(blas.Destroy(h))
	g.must(g.d.MemFree(p))
	g.must(g.d.ModuleUnload(m))
	if got := base - free(); got != fakecuda.BLASKernelBytes {
		t.Errorf("after freeing everything: %d used, want cuBLAS's kernels' %d (the context lives)", got, fakecuda.BLASKernelBytes)
	}
	g.must(g.d.MemFreeHost(onep))
	g.must(g.d.MemFreeHost(params))
}

// TestAllocPacking: allocations are charged packed into 2 MiB pages, their
// live total rounded up, not each rounded up; EnvHiddenBytes charges the
// planted bytes beside each allocation, in CUDA's free and the process's
// figure alike, until it is freed.
func TestAllocPacking(t *testing.T) {
	fakecuda.Use(t)
	g := open(t)
	defer g.close()
	held := func() uint64 {
		n, err := fakecuda.ProcessBytes(g.path, 0)
		g.must(err)
		return n
	}
	free := func() uint64 {
		f, _, err := g.d.MemGetInfo()
		g.must(err)
		return f
	}
	const G = fakecuda.Granularity
	sizes := []int{3 * G / 2, G / 2, 4} // bytes: 3 MiB + 1 MiB + 4 B, three pages packed (four rounded each)
	const hidden = 12345
	for _, h := range []int{0, hidden} {
		t.Setenv(fakecuda.EnvHiddenBytes, strconv.Itoa(h))
		base, baseFree := held(), free()
		var ps []cudadrv.DevicePtr
		total := 0
		for _, n := range sizes {
			p, err := g.d.MemAlloc(n)
			g.must(err)
			ps = append(ps, p)
			total += n
		}
		want := uint64((total+G-1)/G*G + len(sizes)*h)
		if got, gotFree := held()-base, baseFree-free(); got != want || gotFree != want {
			t.Errorf("hidden %d B: %v B allocated: process charged %d B more, CUDA's free fell %d B; want %d B (their %d B in whole pages, %d B hidden each)",
				h, sizes, got, gotFree, want, total, h)
		}
		for _, p := range ps {
			g.must(g.d.MemFree(p))
		}
		if got := held(); got != base {
			t.Errorf("hidden %d B: all freed, the process holds %d B, want %d", h, got, base)
		}
	}
}

// TestLeakPerLaunch: EnvLeakPerLaunchBytes charges the planted bytes at
// each accepted launch, in CUDA's free and the process's figure alike, a
// refused launch takes nothing, and the leak goes only with the context.
func TestLeakPerLaunch(t *testing.T) {
	const leak = 3 << 20
	g := open(t, "LEAK_PER_LAUNCH") // its own instance: the leak is per context
	held := func() uint64 {
		n, err := fakecuda.ProcessBytes(g.path, 0)
		g.must(err)
		return n
	}
	free := func() uint64 {
		f, _, err := g.d.MemGetInfo()
		g.must(err)
		return f
	}
	m, f, slots, params := g.kernel()
	out, logits := g.alloc(2), g.alloc(3)
	setParams(slots, out, logits, 0, 1, 3, 0, 0, 0)
	launch := func(grid uint32) error {
		return g.d.LaunchKernel(f, [3]uint32{grid, 1, 1}, [3]uint32{kernels.SoftmaxSampleBlock, 1, 1}, 0, g.s, params+64)
	}
	g.must(launch(1)) // nothing planted yet
	t.Setenv(fakecuda.EnvLeakPerLaunchBytes, strconv.Itoa(leak))
	base, baseFree := held(), free()
	g.must(launch(1))
	g.must(launch(1))
	wantCode(t, launch(2), 1) // refused: takes nothing
	g.must(g.d.StreamSynchronize(g.s))
	leaked, err := fakecuda.LeakedBytes(g.path, 0)
	g.must(err)
	if got, gotFree := held()-base, baseFree-free(); got != 2*leak || gotFree != 2*leak || leaked != 2*leak {
		t.Errorf("two launches leaking %d B each: process charged %d B more, CUDA's free fell %d B, LeakedBytes %d B; want %d B",
			leak, got, gotFree, leaked, 2*leak)
	}
	g.must(g.d.MemFree(out))
	g.must(g.d.MemFree(logits))
	g.must(g.d.ModuleUnload(m))
	g.must(g.d.MemFreeHost(params))
	if got := held(); got != fakecuda.ContextBytes+2*leak {
		t.Errorf("all freed: the process holds %d B, want the context and the leak, %d B", got, fakecuda.ContextBytes+2*leak)
	}
	g.close()
	if got, err := fakecuda.LeakedBytes(g.path, 0); err != nil || got != 0 || held() != 0 {
		t.Errorf("context destroyed: leaked %d B (%v), the process holds %d B; want 0", got, err, held())
	}
}

// TestBLASKernelsStayInContext: the first Sgemm in a context loads
// cuBLAS's kernels, once whatever the handles; they outlive every handle
// and go with the context.
func TestBLASKernelsStayInContext(t *testing.T) {
	fakecuda.Use(t)
	g := open(t)
	blas, err := cudadrv.OpenBLAS()
	g.must(err)
	held := func() uint64 {
		n, err := fakecuda.ProcessBytes(g.path, 0)
		g.must(err)
		return n
	}
	base := held()
	if base != fakecuda.ContextBytes {
		t.Fatalf("the context alone: %d B, want %d", base, fakecuda.ContextBytes)
	}
	p := g.alloc(1)
	one, onep := g.pinned(2)
	one[0], one[1] = 1, 0
	for i := 0; i < 2; i++ { // two handles, one after the other
		h, err := blas.Create()
		g.must(err)
		g.must(blas.SetStream(h, g.s))
		g.must(blas.Sgemm(h, cudadrv.OpN, cudadrv.OpN, 1, 1, 1, onep, p, 1, p, 1, onep+4, p, 1))
		if got, want := held()-base, uint64(fakecuda.Granularity+fakecuda.WorkspaceBytes+fakecuda.BLASKernelBytes); got != want {
			t.Errorf("handle %d after its Sgemm: %d B beside the context, want %d (allocation, workspace, kernels once)", i, got, want)
		}
		g.must(g.d.StreamSynchronize(g.s))
		g.must(blas.Destroy(h))
		if got, want := held()-base, uint64(fakecuda.Granularity+fakecuda.BLASKernelBytes); got != want {
			t.Errorf("handle %d destroyed: %d B beside the context, want %d (the kernels stay)", i, got, want)
		}
	}
	g.must(g.d.MemFree(p))
	g.must(g.d.MemFreeHost(onep))
	g.close()
	if got := held(); got != 0 {
		t.Errorf("context destroyed: the process holds %d B, want 0", got)
	}

	// A new context loads them again.
	g = open(t)
	defer g.close()
	p = g.alloc(1)
	one, onep = g.pinned(2)
	one[0], one[1] = 1, 0
	h, err := blas.Create()
	g.must(err)
	g.must(blas.SetStream(h, g.s))
	g.must(blas.Sgemm(h, cudadrv.OpN, cudadrv.OpN, 1, 1, 1, onep, p, 1, p, 1, onep+4, p, 1))
	g.must(g.d.StreamSynchronize(g.s))
	g.must(blas.Destroy(h))
	if got, want := held()-base, uint64(fakecuda.Granularity+fakecuda.BLASKernelBytes); got != want {
		t.Errorf("second context: %d B beside it, want %d", got, want)
	}
	g.must(g.d.MemFree(p))
	g.must(g.d.MemFreeHost(onep))
}

// TestReservationOutsideCUDATotal: the driver's reservation is missing
// from CUDA's total and counted in neither CUDA's free nor the process's
// memory, so CUDA's free is NVML's (physical total − reservation −
// process) while the totals differ by the reservation.
func TestReservationOutsideCUDATotal(t *testing.T) {
	fakecuda.Use(t)
	const total, reserved = 1 << 30, 256 << 20
	t.Setenv(fakecuda.EnvTotalBytes, strconv.Itoa(total))
	t.Setenv(fakecuda.EnvReservedBytes, strconv.Itoa(reserved))
	g := open(t)
	defer g.close()
	if n, err := g.d.DeviceTotalMem(g.dev); err != nil || n != total-reserved {
		t.Errorf("DeviceTotalMem %d (%v), want the physical %d less the reservation %d", n, err, total, reserved)
	}
	free, cudaTotal, err := g.d.MemGetInfo()
	g.must(err)
	proc, err := fakecuda.ProcessBytes(g.path, 0)
	g.must(err)
	if cudaTotal != total-reserved || proc != fakecuda.ContextBytes || free != total-reserved-proc {
		t.Errorf("MemGetInfo free %d, total %d; process %d: want total %d, free %d", free, cudaTotal, proc, total-reserved, total-reserved-fakecuda.ContextBytes)
	}
	// What fits is the free memory: the reservation is not counted twice.
	_, err = g.d.MemAlloc(int(free) + 1)
	wantCode(t, err, 2)
	p, err := g.d.MemAlloc(int(free))
	g.must(err)
	if f, _, err := g.d.MemGetInfo(); err != nil || f != 0 {
		t.Errorf("after allocating all the free memory: free %d (%v)", f, err)
	}
	g.must(g.d.MemFree(p))
}

// TestReuseAddresses: under EnvReuseAddresses an allocation takes the most
// recently freed address of its charged size, as the driver's allocator
// does; without it no address comes back.
func TestReuseAddresses(t *testing.T) {
	fakecuda.Use(t)
	g := open(t)
	defer g.close()
	t.Setenv(fakecuda.EnvReuseAddresses, "1")
	a, b, big := g.alloc(1), g.alloc(1), g.alloc(1<<20) // 2, 2 and 4 MiB charged
	g.must(g.d.MemFree(a))
	g.must(g.d.MemFree(big))
	g.must(g.d.MemFree(b))
	if p := g.alloc(1 << 19); p != b { // 2 MiB charged: b was freed last
		t.Errorf("got %#x, want the last freed 2 MiB block %#x", p, b)
	} else {
		g.must(g.d.MemFree(p))
	}
	if p := g.alloc(2); p != b {
		t.Errorf("got %#x, want %#x again", p, b)
	} else if q := g.alloc(2); q != a {
		t.Errorf("got %#x, want the other freed 2 MiB block %#x", q, a)
	} else {
		g.must(g.d.MemFree(q))
		g.must(g.d.MemFree(p))
	}
	if p := g.alloc(3 << 18); p != big { // 3 MiB: charged 4 MiB
		t.Errorf("got %#x, want the freed 4 MiB block %#x", p, big)
	} else {
		g.must(g.d.MemFree(p))
	}
	t.Setenv(fakecuda.EnvReuseAddresses, "")
	p := g.alloc(1)
	if p == a || p == b || p == big {
		t.Errorf("without %s: a freed address %#x came back", fakecuda.EnvReuseAddresses, p)
	}
	g.must(g.d.MemFree(p))
}

// TestNotInitialized uses an instance of its own, on which cuInit never
// succeeds.
func TestNotInitialized(t *testing.T) {
	path := fakecuda.Build(t, "FAKECUDA_INSTANCE_NOT_INITIALIZED")
	t.Setenv(fakecuda.EnvInitError, "3")
	_, err := cudadrv.OpenDriver(path)
	if want := "cuInit: CUDA_ERROR_NOT_INITIALIZED (3): initialization error"; err == nil || err.Error() != want {
		t.Fatalf("OpenDriver: %v, want %q", err, want)
	}
	lib, err := dl.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Close()
	sym := func(name string) uintptr {
		p, err := lib.Sym(name)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	var n, v int32
	if r := dl.CallOut(sym("cuDeviceGetCount"), uintptr(unsafe.Pointer(&n))); int32(r) != 3 {
		t.Errorf("cuDeviceGetCount before cuInit: %d, want 3", int32(r))
	}
	if r := dl.CallOut(sym("cuDriverGetVersion"), uintptr(unsafe.Pointer(&v))); int32(r) != 0 || v != fakecuda.DriverVersion {
		t.Errorf("cuDriverGetVersion before cuInit: %d, %d", r, v)
	}
	var s uintptr
	if r := dl.CallOut(sym("cuGetErrorName"), 9999, uintptr(unsafe.Pointer(&s))); int32(r) != 1 || s != 0 {
		t.Errorf("cuGetErrorName(9999): %d, %#x; want 1 and NULL", r, s)
	}
}

func TestNoDevices(t *testing.T) {
	path := fakecuda.Build(t)
	t.Setenv(fakecuda.EnvDevices, "0")
	_, err := cudadrv.OpenDriver(path)
	wantCode(t, err, cudadrv.ErrNoDevice)
	t.Setenv(fakecuda.EnvDevices, "2")
	d, err := cudadrv.OpenDriver(path)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := d.DeviceCount(); n != 2 || err != nil {
		t.Errorf("DeviceCount %d, %v", n, err)
	}
	if _, err := d.Device(2); err == nil {
		t.Error("Device(2) of 2")
	} else {
		wantCode(t, err, cudadrv.ErrInvalidDevice)
	}
}

func close32(a, b float32) bool {
	if math.IsNaN(float64(a)) || math.IsNaN(float64(b)) {
		return math.IsNaN(float64(a)) && math.IsNaN(float64(b))
	}
	return math.Abs(float64(a-b)) <= 1e-5*math.Max(1, math.Abs(float64(b)))
}

// event makes a timed event; the caller destroys it.
func (g *gpu) event() cudadrv.Event {
	g.t.Helper()
	e, err := g.d.EventCreate(cudadrv.EventDefault)
	g.must(err)
	return e
}

// TestEventsAreStreamWork: an event's record is queued on its stream like
// any other work, and completes when that stream runs it: syncing another
// stream does not; the latest record of an event is the one that counts,
// even if an earlier one, on another stream, runs after it.
func TestEventsAreStreamWork(t *testing.T) {
	g := open(t)
	defer g.close()
	other, err := g.d.StreamCreate(cudadrv.StreamNonBlocking)
	g.must(err)
	const words = 1 << 22 // 16 MiB: a memset the host takes measurable time over
	buf := g.alloc(words)
	a, b, e, ref := g.event(), g.event(), g.event(), g.event()

	g.must(g.d.EventRecord(a, g.s))
	g.must(g.d.EventRecord(b, other))
	g.must(g.d.StreamSynchronize(other))
	if ms, err := g.d.EventElapsedTime(b, b); err != nil || ms != 0 {
		t.Errorf("an event to itself: %v ms, %v; want 0", ms, err)
	}
	_, err = g.d.EventElapsedTime(a, b)
	wantCode(t, err, cudadrv.ErrNotReady) // a's stream has not run
	g.must(g.d.StreamSynchronize(g.s))
	if _, err := g.d.EventElapsedTime(a, b); err != nil {
		t.Errorf("after syncing a's stream: %v", err)
	}

	// e is recorded on g.s behind a long memset, then again on other, and
	// ref after it there. Other runs first: e is complete, at the second
	// record. The first one then runs, later than ref, and must not move
	// e, or e to ref would turn negative.
	g.must(g.d.MemsetD32Async(buf, 1, words, g.s))
	g.must(g.d.EventRecord(e, g.s))
	g.must(g.d.EventRecord(e, other))
	g.must(g.d.EventRecord(ref, other))
	g.must(g.d.StreamSynchronize(other))
	before, err := g.d.EventElapsedTime(e, ref)
	g.must(err)
	if !(before >= 0) {
		t.Errorf("e to ref, both on one stream: %v ms, want >= 0", before)
	}
	g.must(g.d.StreamSynchronize(g.s))
	if after, err := g.d.EventElapsedTime(e, ref); err != nil || after != before {
		t.Errorf("after the superseded record of e ran: %v ms, %v; want %v, unchanged", after, err, before)
	}

	// A record queued behind work, its event destroyed before it runs:
	// gone from the live list at once, and the record does nothing when
	// it runs, even though the event's handle is a new event's by then
	// (EnvReuseAddresses: the driver may reuse it).
	t.Setenv(fakecuda.EnvReuseAddresses, "1")
	g.must(g.d.EventDestroy(a))
	gone := g.event() // a's handle back: recorded once, as next will be
	g.must(g.d.MemsetD32Async(buf, 2, words, g.s))
	g.must(g.d.EventRecord(gone, g.s))
	g.must(g.d.EventDestroy(gone))
	if c := g.counters(); c.LiveEvents != 3 {
		t.Errorf("live events %d after destroying one of 4, want 3", c.LiveEvents)
	}
	next := g.event()
	if next != gone || gone != a {
		t.Errorf("under %s: events %#x, %#x after destroying %#x, want its handle each time", fakecuda.EnvReuseAddresses, gone, next, a)
	}
	g.must(g.d.EventRecord(next, other))
	g.must(g.d.StreamSynchronize(g.s)) // runs the destroyed event's record
	_, err = g.d.EventElapsedTime(next, next)
	wantCode(t, err, cudadrv.ErrNotReady) // next's own record, on other, has not run
	g.must(g.d.StreamDestroy(other))
	if ms, err := g.d.EventElapsedTime(next, next); err != nil || ms != 0 {
		t.Errorf("next to itself once other ran: %v ms, %v", ms, err)
	}

	// Without it a destroyed handle stays dead.
	t.Setenv(fakecuda.EnvReuseAddresses, "")
	g.must(g.d.EventDestroy(next))
	if again := g.event(); again == next {
		t.Errorf("without %s: the destroyed event %#x came back", fakecuda.EnvReuseAddresses, next)
	} else {
		g.must(g.d.EventDestroy(again))
	}
	wantCode(t, g.d.EventRecord(next, g.s), 400)
	g.must(g.d.MemFree(buf))
	for _, ev := range []cudadrv.Event{b, e, ref} {
		g.must(g.d.EventDestroy(ev))
	}
}

// TestEventArguments calls the entry points directly, for the arguments
// the binding never passes.
func TestEventArguments(t *testing.T) {
	g := open(t)
	defer g.close()
	lib, err := dl.Open(g.path)
	g.must(err)
	defer lib.Close()
	sym := func(name string) uintptr {
		p, err := lib.Sym(name)
		g.must(err)
		return p
	}
	e := g.event()
	g.must(g.d.EventRecord(e, g.s))
	g.must(g.d.StreamSynchronize(g.s))
	if r := int32(dl.Call(sym("cuEventCreate"), 0, 0)); r != 1 {
		t.Errorf("cuEventCreate(NULL, 0) = %d, want CUDA_ERROR_INVALID_VALUE", r)
	}
	if r := int32(dl.Call(sym("cuEventElapsedTime"), 0, uintptr(e), uintptr(e))); r != 1 {
		t.Errorf("cuEventElapsedTime(NULL, e, e) = %d, want CUDA_ERROR_INVALID_VALUE", r)
	}
	if r := int32(dl.Call(sym("cuEventRecord"), 0, uintptr(g.s))); r != 400 {
		t.Errorf("cuEventRecord(NULL, s) = %d, want CUDA_ERROR_INVALID_HANDLE", r)
	}
	// The flags cuda.h defines, and an interprocess event only untimed.
	for _, c := range []struct {
		flags uint32
		code  cudadrv.Result
	}{{0x1, 0}, {0x2, 0}, {0x3, 0}, {0x6, 0}, {0x7, 0}, {0x4, 1}, {0x5, 1}, {0x8, 1}, {0x80000000, 1}} {
		ev, err := g.d.EventCreate(c.flags)
		if c.code == 0 {
			if err != nil {
				t.Errorf("EventCreate(%#x): %v", c.flags, err)
				continue
			}
			g.must(g.d.EventDestroy(ev))
		} else {
			wantCode(t, err, c.code)
		}
	}
	g.must(g.d.EventDestroy(e))
	if c := g.counters(); c.LiveEvents != 0 {
		t.Errorf("live events %d, want 0", c.LiveEvents)
	}
}

// TestOmitEvents: the OmitEvents instance lacks the four event entry
// points and nothing else.
func TestOmitEvents(t *testing.T) {
	path := fakecuda.Build(t, fakecuda.OmitEvents)
	if path == fakecuda.Build(t) {
		t.Fatal("the OmitEvents build is the plain one")
	}
	lib, err := dl.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Close()
	for _, name := range []string{"cuEventCreate", "cuEventRecord", "cuEventElapsedTime", "cuEventDestroy_v2"} {
		if _, err := lib.Sym(name); err == nil {
			t.Errorf("%s is in the %s build", name, fakecuda.OmitEvents)
		}
	}
	for _, name := range []string{"cuStreamCreate", "cuMemcpyDtoHAsync_v2", "cublasSgemm_v2", "fakecuda_live_events"} {
		if _, err := lib.Sym(name); err != nil {
			t.Errorf("%s missing from the %s build: %v", name, fakecuda.OmitEvents, err)
		}
	}
}
