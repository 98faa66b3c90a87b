package device

import (
	"fmt"
	"runtime"
	"time"

	"memprobe/ledger"
	"memprobe/trainer/gemm"
)

func init() {
	register("cpu", func(g gemm.Backend, acct *ledger.Account) (Device, error) { return NewCPU(g, acct), nil })
}

// QueueDepth is how many commands a stream holds before an enqueue blocks,
// as a full CUDA launch queue does.
const QueueDepth = 1024

type opcode uint8

const (
	opH2D opcode = iota + 1
	opD2H
	opLogits
	opSoftmax
	opFence
	opStop
	opAlloc // cuda only: allocation runs on the context's thread
	opFree
)

// command is one unit of stream work. It is a value with fields, not a
// closure, so that enqueueing allocates nothing.
type command struct {
	op         opcode
	a, b, c    Buffer    // operands, output first
	host       []float32 // host side of a copy
	off        int       // device offset of a copy
	rows, n, k int
	s          Sampling
}

// CPU is the "cpu" device: device memory is a []float32 per buffer, and a
// goroutine locked to its own OS thread serves the command queue in order,
// doing the copies and computing the kernels (the logits product through the
// gemm.Backend given to NewCPU). Its costs are real work, never sleeps.
type CPU struct {
	book
	g     gemm.Backend
	queue chan command
	fence chan struct{}
	done  chan struct{} // closed when the stream goroutine has exited

	scratch     []float32       // (V) SoftmaxSample's row workspace; only the stream touches it
	scratchAcct *ledger.Account // counts scratch (ReserveScratch; nil: nothing)
}

// ReserveScratch makes the softmax's row workspace for rows of n floats
// (V) now, rather than at the first SoftmaxSample, and counts it, and any
// larger one a later SoftmaxSample makes, in acct: host memory apart from
// the device buffers (on a cpu device both are Go heap, but the device
// account stays the device ledger's buffers). Call it before any command
// is enqueued: the stream owns the scratch afterwards. Close drops it from
// acct.
func (d *CPU) ReserveScratch(acct *ledger.Account, n int) {
	d.scratchAcct = acct
	d.scratch = ledger.Make[float32](acct, n)
}

// NewCPU starts a cpu device whose logits product uses g (nil: gemm.Default())
// and whose buffers are counted in acct (nil counts nothing).
func NewCPU(g gemm.Backend, acct *ledger.Account) *CPU {
	if g == nil {
		g = gemm.Default()
	}
	d := &CPU{
		book:  newBook("cpu", acct),
		g:     g,
		queue: make(chan command, QueueDepth),
		fence: make(chan struct{}, 1),
		done:  make(chan struct{}),
	}
	go d.stream()
	return d
}

// Name implements Device.
func (d *CPU) Name() string { return "cpu" }

// Backend is the GEMM backend the stream computes logits with.
func (d *CPU) Backend() gemm.Backend { return d.g }

// stream is the device: it owns an OS thread, as a driver thread owns a
// CUDA context, and runs commands in the order they were queued.
func (d *CPU) stream() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer close(d.done)
	for {
		cmd := <-d.queue
		switch cmd.op {
		case opFence:
			d.fence <- struct{}{}
		case opStop:
			return
		default:
			if d.failed() {
				continue // a failed stream skips work, as CUDA does after a sticky error
			}
			start := time.Now()
			if err := d.exec(&cmd); err != nil {
				d.setErr(err)
			}
			d.busyNs.Add(int64(time.Since(start)))
		}
	}
}

func (d *CPU) exec(cmd *command) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cpu stream: %v", r)
		}
	}()
	switch cmd.op {
	case opH2D:
		copy(cmd.a.mem[cmd.off:cmd.off+len(cmd.host)], cmd.host)
	case opD2H:
		copy(cmd.host, cmd.b.mem[cmd.off:cmd.off+len(cmd.host)])
	case opLogits:
		// out (rows,V) = hidden (rows,C) · weight (V,C)ᵀ; k = C, n = V.
		d.g.Sgemm(false, true, cmd.rows, cmd.n, cmd.k, 1, cmd.b.mem, cmd.k, cmd.c.mem, cmd.k, 0, cmd.a.mem, cmd.n)
	case opSoftmax:
		var targets []float32
		if cmd.c.Valid() {
			targets = cmd.c.mem[:cmd.rows]
		}
		if len(d.scratch) < cmd.n {
			if d.scratch != nil {
				ledger.Drop(d.scratchAcct, d.scratch)
			}
			d.scratch = ledger.Make[float32](d.scratchAcct, cmd.n) // once per device and V: the kernel's one-row workspace
		}
		return softmaxSampleRows(cmd.a.mem[:cmd.rows*OutStride], cmd.b.mem[:cmd.rows*cmd.n], targets, cmd.rows, cmd.n, cmd.s, d.scratch)
	}
	return nil
}

// Alloc implements Device.
func (d *CPU) Alloc(name string, n int) (Buffer, error) {
	if err := d.checkAlloc(name, n); err != nil {
		return Buffer{}, err
	}
	b := Buffer{id: d.newID(), n: n, mem: d.acct.Float32s(n)}
	d.added(name, b)
	return b, nil
}

// Free implements Device. The memory goes back to the Go heap once the
// queued commands that hold it have run.
func (d *CPU) Free(b Buffer) error {
	if d.closed {
		return ErrClosed
	}
	if err := d.removed(b); err != nil {
		return err
	}
	d.acct.FreeFloat32s(b.mem)
	return nil
}

// CopyToDevice implements Device.
func (d *CPU) CopyToDevice(dst Buffer, dstOff int, src []float32) error {
	if err := d.checkH2D(dst, dstOff, src); err != nil {
		return err
	}
	d.queue <- command{op: opH2D, a: dst, host: src, off: dstOff}
	return nil
}

// CopyToHost implements Device.
func (d *CPU) CopyToHost(dst []float32, src Buffer, srcOff int) error {
	if err := d.checkD2H(dst, src, srcOff); err != nil {
		return err
	}
	d.queue <- command{op: opD2H, b: src, host: dst, off: srcOff}
	return nil
}

// Logits implements Device.
func (d *CPU) Logits(out, hidden, weight Buffer, rows, C, V int) error {
	if err := d.checkLogits(out, hidden, weight, rows, C, V); err != nil {
		return err
	}
	d.queue <- command{op: opLogits, a: out, b: hidden, c: weight, rows: rows, k: C, n: V}
	return nil
}

// SoftmaxSample implements Device.
func (d *CPU) SoftmaxSample(out, logits, targets Buffer, rows, V int, s Sampling) error {
	if err := d.checkSoftmax(out, logits, targets, rows, V, s); err != nil {
		return err
	}
	d.queue <- command{op: opSoftmax, a: out, b: logits, c: targets, rows: rows, n: V, s: s}
	return nil
}

// Sync implements Device.
func (d *CPU) Sync() error {
	if d.closed {
		return ErrClosed
	}
	start := time.Now()
	d.queue <- command{op: opFence}
	<-d.fence
	d.waited(start, false)
	return d.stickyErr()
}

// Stats implements Device.
func (d *CPU) Stats() Stats { return d.stats() }

// Buffers implements Device.
func (d *CPU) Buffers() []BufferUse { return d.buffers() }

// Close implements Device.
func (d *CPU) Close() error {
	if d.closed {
		return nil
	}
	d.queue <- command{op: opStop}
	<-d.done
	for _, b := range d.live {
		d.removed(b)
		d.acct.FreeFloat32s(b.mem)
	}
	if d.scratch != nil { // the stream has exited: nothing touches it
		ledger.Drop(d.scratchAcct, d.scratch)
		d.scratch = nil
	}
	d.closed = true
	return d.stickyErr()
}
