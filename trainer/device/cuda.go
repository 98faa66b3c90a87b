//go:build cuda

package device

// The cuda device: gorgonia.org/cu v0.9.6 (driver API), its cuBLAS binding
// for the logits product, and a softmax/sample kernel written in CUDA C,
// compiled at Open by NVRTC and loaded with cu.LoadData. The kernel runs one
// thread per row with a serial loop over V: simple, not fast for large V.
//
// Everything runs on one goroutine locked to the OS thread that holds the
// context current (the driver API needs that); the host-facing methods send
// it commands, as the cpu device does. All work goes to the legacy default
// stream, because the cuBLAS binding in v0.9.6 has no cublasSetStream: that
// keeps copies, GEMMs and kernels in order. Copies use pageable Go memory,
// so the driver stages them: the stream thread blocks in a DtoH copy until
// it is done, never the caller, and no Go pointer is kept by C after a call.
//
// This file is untested: it was written against the v0.9.6 sources on a
// machine without CUDA.

import (
	"fmt"
	"math"
	"runtime"
	"unsafe"

	"gonum.org/v1/gonum/blas"
	"gorgonia.org/cu"
	cublas "gorgonia.org/cu/blas"
	"gorgonia.org/cu/nvrtc"

	"memprobe/probe/ledger"
	"memprobe/trainer/gemm"
)

func init() {
	register("cuda", func(_ gemm.Backend, acct *ledger.Account) (Device, error) { return NewCUDA(0, acct) })
}

// softmaxSource is the SoftmaxSample kernel; it follows softmaxSampleRows
// (CUDA's expf/logf and a serial sum instead of nn's vector exp and 8-lane
// sums: a few float32 ulps apart).
const softmaxSource = `
extern "C" __global__ void softmax_sample(float* out, float* logits, const float* targets,
		int rows, int V, float temperature, unsigned long long seed, unsigned long long pos) {
	int r = blockIdx.x * blockDim.x + threadIdx.x;
	if (r >= rows) return;
	float* row = logits + (size_t)r * V;
	float maxv = row[0];
	int tok = 0;
	for (int i = 1; i < V; i++) { if (row[i] > maxv) { maxv = row[i]; tok = i; } }
	if (temperature > 0.0f) {
		float invT = 1.0f / temperature, sum = 0.0f;
		for (int i = 0; i < V; i++) sum += expf((row[i] - maxv) * invT);
		unsigned long long z = seed + (pos + (unsigned long long)r + 1ULL) * 0x9E3779B97F4A7C15ULL;
		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
		z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
		z ^= z >> 31;
		float u = (float)((double)(z >> 11) / 9007199254740992.0) * sum;
		float cum = 0.0f;
		tok = V - 1;
		for (int i = 0; i < V; i++) {
			cum += expf((row[i] - maxv) * invT);
			if (u < cum) { tok = i; break; }
		}
	}
	int t = targets != 0 ? (int)targets[r] : -1;
	float lt = (t >= 0 && t < V) ? row[t] : 0.0f;
	float sum = 0.0f;
	for (int i = 0; i < V; i++) { float e = expf(row[i] - maxv); row[i] = e; sum += e; }
	float inv = 1.0f / sum;
	for (int i = 0; i < V; i++) row[i] *= inv;
	float loss = 0.0f;
	if (targets != 0) {
		loss = (t >= 0 && t < V) ? logf(sum) + (maxv - lt) : __int_as_float(0x7fc00000);
	}
	out[2 * r] = (float)tok;
	out[2 * r + 1] = loss;
}
`

const softmaxBlock = 128

type allocReply struct {
	b   Buffer
	err error
}

// CUDA is the "cuda" device.
type CUDA struct {
	book
	ordinal int
	queue   chan command
	fence   chan struct{}
	reply   chan allocReply
	done    chan struct{}

	// Owned by the stream thread.
	ctx     cu.CUContext
	mod     cu.Module
	softmax cu.Function
	blas    *cublas.Standard
	args    [8]uint64         // kernel arguments, each widened to 8 bytes
	argp    [8]unsafe.Pointer // pointers to args, as cuLaunchKernel wants
}

// NewCUDA opens GPU ordinal, creates a context, compiles the softmax kernel
// and a cuBLAS handle, all on the device's own locked OS thread.
func NewCUDA(ordinal int, acct *ledger.Account) (*CUDA, error) {
	d := &CUDA{
		book:    newBook("cuda", acct),
		ordinal: ordinal,
		queue:   make(chan command, QueueDepth),
		fence:   make(chan struct{}, 1),
		reply:   make(chan allocReply, 1),
		done:    make(chan struct{}),
	}
	for i := range d.argp {
		d.argp[i] = unsafe.Pointer(&d.args[i])
	}
	started := make(chan error, 1)
	go d.stream(started)
	if err := <-started; err != nil {
		return nil, err
	}
	return d, nil
}

// Name implements Device.
func (d *CUDA) Name() string { return "cuda" }

func (d *CUDA) setup() error {
	n, err := cu.NumDevices()
	if err != nil {
		return fmt.Errorf("device cuda: counting devices: %w", err)
	}
	if d.ordinal >= n {
		return fmt.Errorf("device cuda: no GPU %d (have %d)", d.ordinal, n)
	}
	dev, err := cu.GetDevice(d.ordinal)
	if err != nil {
		return fmt.Errorf("device cuda: getting GPU %d: %w", d.ordinal, err)
	}
	if d.ctx, err = dev.MakeContext(cu.SchedAuto); err != nil { // current on this thread
		return fmt.Errorf("device cuda: creating context: %w", err)
	}
	prog, err := nvrtc.CreateProgram(softmaxSource, "softmax_sample.cu")
	if err != nil {
		return fmt.Errorf("device cuda: nvrtc: %w", err)
	}
	defer prog.Destroy()
	if err := prog.Compile(); err != nil {
		log, _ := prog.GetLog()
		return fmt.Errorf("device cuda: compiling softmax kernel: %w\n%s", err, log)
	}
	ptx, err := prog.GetPTX()
	if err != nil {
		return fmt.Errorf("device cuda: nvrtc ptx: %w", err)
	}
	if d.mod, err = cu.LoadData(ptx); err != nil {
		return fmt.Errorf("device cuda: loading softmax module: %w", err)
	}
	if d.softmax, err = d.mod.Function("softmax_sample"); err != nil {
		return fmt.Errorf("device cuda: softmax_sample: %w", err)
	}
	d.blas = cublas.New() // panics if cublasCreate fails; recovered in stream
	return nil
}

func (d *CUDA) teardown() {
	if d.blas != nil {
		d.blas.Close()
	}
	var zero cu.Module
	if d.mod != zero {
		d.mod.Unload()
	}
	var none cu.CUContext
	if d.ctx != none {
		d.ctx.Destroy()
	}
}

func (d *CUDA) stream(started chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer close(d.done)
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("device cuda: setup: %v", r)
			}
		}()
		return d.setup()
	}()
	if err != nil {
		d.teardown()
		started <- err
		return
	}
	started <- nil
	defer d.teardown()
	for {
		cmd := <-d.queue
		switch cmd.op {
		case opFence:
			if err := cu.Synchronize(); err != nil {
				d.setErr(fmt.Errorf("cuda sync: %w", err))
			}
			d.fence <- struct{}{}
		case opStop:
			return
		case opAlloc:
			p, err := cu.MemAlloc(int64(cmd.n) * 4)
			if err == nil {
				err = cu.MemsetD32(p, 0, int64(cmd.n))
			}
			d.reply <- allocReply{Buffer{id: uint64(p), n: cmd.n}, err}
		case opFree:
			d.reply <- allocReply{err: cu.MemFree(cu.DevicePtr(cmd.a.id))}
		default:
			if d.failed() {
				continue
			}
			if err := d.exec(&cmd); err != nil {
				d.setErr(err)
			}
		}
	}
}

// devSlice presents device memory as a slice for the cuBLAS binding, which
// only takes &s[0]; it is never read or written from Go.
func devSlice(b Buffer) []float32 {
	p := uintptr(b.id)
	return unsafe.Slice(*(**float32)(unsafe.Pointer(&p)), b.n)
}

func (d *CUDA) exec(cmd *command) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cuda stream: %v", r)
		}
	}()
	var def cu.Stream // the legacy default stream
	switch cmd.op {
	case opH2D:
		return cu.MemcpyHtoDAsync(cu.DevicePtr(cmd.a.id+uint64(cmd.off)*4), unsafe.Pointer(&cmd.host[0]), int64(len(cmd.host))*4, def)
	case opD2H:
		return cu.MemcpyDtoHAsync(unsafe.Pointer(&cmd.host[0]), cu.DevicePtr(cmd.b.id+uint64(cmd.off)*4), int64(len(cmd.host))*4, def)
	case opLogits:
		// cuBLAS is column-major: the row-major out (rows,V) is the
		// column-major outᵀ (V,rows) = weight (V,C) · hiddenᵀ (C,rows), and
		// the row-major weight (V,C) read column-major is weightᵀ, so
		// transpose it back: Sgemm(T, N, m=V, n=rows, k=C).
		rows, V, C := cmd.rows, cmd.n, cmd.k
		d.blas.Sgemm(blas.Trans, blas.NoTrans, V, rows, C, 1, devSlice(cmd.c), C, devSlice(cmd.b), C, 0, devSlice(cmd.a), V)
		return d.blas.Err()
	case opSoftmax:
		var targets uint64 // NULL: no loss
		if cmd.c.Valid() {
			targets = cmd.c.id
		}
		d.args = [8]uint64{cmd.a.id, cmd.b.id, targets, uint64(uint32(int32(cmd.rows))), uint64(uint32(int32(cmd.n))),
			uint64(math.Float32bits(cmd.s.Temperature)), cmd.s.Seed, cmd.s.Pos}
		grid := (cmd.rows + softmaxBlock - 1) / softmaxBlock
		return d.softmax.Launch(grid, 1, 1, softmaxBlock, 1, 1, 0, def, d.argp[:])
	}
	return nil
}

// Alloc implements Device. It waits for the stream thread (cuMemAlloc is
// synchronous), but not for queued work.
func (d *CUDA) Alloc(n int) (Buffer, error) {
	if d.closed {
		return Buffer{}, ErrClosed
	}
	if n <= 0 {
		return Buffer{}, fmt.Errorf("cuda alloc: %d floats is not a positive size", n)
	}
	d.queue <- command{op: opAlloc, n: n}
	r := <-d.reply
	if r.err != nil {
		return Buffer{}, fmt.Errorf("cuda alloc: %d floats: %w", n, r.err)
	}
	d.added(r.b)
	d.acct.Alloc(int64(n) * 4)
	return r.b, nil
}

// Free implements Device. cuMemFree waits for work using the memory.
func (d *CUDA) Free(b Buffer) error {
	if d.closed {
		return ErrClosed
	}
	if err := d.removed(b); err != nil {
		return err
	}
	d.acct.Free(int64(b.n) * 4)
	d.queue <- command{op: opFree, a: b}
	if r := <-d.reply; r.err != nil {
		return fmt.Errorf("cuda free: %w", r.err)
	}
	return nil
}

// CopyToDevice implements Device.
func (d *CUDA) CopyToDevice(dst Buffer, dstOff int, src []float32) error {
	if err := d.checkH2D(dst, dstOff, src); err != nil || len(src) == 0 {
		return err
	}
	d.queue <- command{op: opH2D, a: dst, host: src, off: dstOff}
	return nil
}

// CopyToHost implements Device.
func (d *CUDA) CopyToHost(dst []float32, src Buffer, srcOff int) error {
	if err := d.checkD2H(dst, src, srcOff); err != nil || len(dst) == 0 {
		return err
	}
	d.queue <- command{op: opD2H, b: src, host: dst, off: srcOff}
	return nil
}

// Logits implements Device (cuBLAS Sgemm).
func (d *CUDA) Logits(out, hidden, weight Buffer, rows, C, V int) error {
	if err := d.checkLogits(out, hidden, weight, rows, C, V); err != nil {
		return err
	}
	d.queue <- command{op: opLogits, a: out, b: hidden, c: weight, rows: rows, k: C, n: V}
	return nil
}

// SoftmaxSample implements Device (the NVRTC kernel). A target outside
// [0, V) gives a NaN loss rather than an error.
func (d *CUDA) SoftmaxSample(out, logits, targets Buffer, rows, V int, s Sampling) error {
	if err := d.checkSoftmax(out, logits, targets, rows, V, s); err != nil {
		return err
	}
	d.queue <- command{op: opSoftmax, a: out, b: logits, c: targets, rows: rows, n: V, s: s}
	return nil
}

// Sync implements Device (cuCtxSynchronize on the stream thread).
func (d *CUDA) Sync() error {
	if d.closed {
		return ErrClosed
	}
	d.syncs.Add(1)
	d.queue <- command{op: opFence}
	<-d.fence
	return d.stickyErr()
}

// Stats implements Device.
func (d *CUDA) Stats() Stats { return d.stats() }

// Close implements Device: it frees what is left and destroys the context.
func (d *CUDA) Close() error {
	if d.closed {
		return nil
	}
	for _, b := range d.live {
		d.Free(b)
	}
	d.queue <- command{op: opStop}
	<-d.done
	d.closed = true
	return d.stickyErr()
}
