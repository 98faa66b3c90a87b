package device

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"memprobe/ledger"
)

// book is the host-side bookkeeping every device shares: which buffers are
// live, the counters Stats reports, and the sticky stream error. Only the
// goroutine driving the device touches closed and live; the counters are
// atomic so Stats may be read from anywhere.
type book struct {
	name   string
	acct   *ledger.Account
	closed bool
	live   map[uint64]Buffer // by Buffer.id
	names  map[uint64]string // the name each live buffer was allocated under
	lastID uint64            // the last Buffer.id handed out (newID)

	errMu sync.Mutex
	err   error // first error met on the stream (sticky)

	launches, syncs, h2dCopies, d2hCopies, h2dBytes, d2hBytes atomic.Int64
	inUse, peak                                               atomic.Int64
	implicitWaits, pinned                                     atomic.Int64
	hostWaitNs, busyNs                                        atomic.Int64
	untimed                                                   atomic.Bool // the device cannot time its work (Stats.DeviceTimed)
}

func newBook(name string, acct *ledger.Account) book {
	return book{name: name, acct: acct, live: map[uint64]Buffer{}, names: map[uint64]string{}}
}

// newID returns the id of a new allocation: ids count up from 1 and are
// never reused, unlike device addresses, so that check refuses a Buffer
// kept past its Free even when the allocator gave its address to a new
// buffer of the same size.
func (k *book) newID() uint64 {
	k.lastID++
	return k.lastID
}

// holds reports whether b is one of this device's live buffers. Ids are
// per device, so a Buffer of another device may carry an id that is live
// here: its length and its memory (the device address on cuda, the slice
// on cpu) must match too.
func (k *book) holds(b Buffer) bool {
	lb, ok := k.live[b.id]
	return ok && lb.n == b.n && lb.ptr == b.ptr && unsafe.SliceData(lb.mem) == unsafe.SliceData(b.mem)
}

// check returns an error unless b is live here and holds n values from off.
func (k *book) check(what string, b Buffer, off, n int) error {
	if k.closed {
		return ErrClosed
	}
	if !k.holds(b) {
		return fmt.Errorf("%s %s: buffer is not allocated on this device", k.name, what)
	}
	if off < 0 || n < 0 || off+n > b.n {
		return fmt.Errorf("%s %s: range [%d, %d) outside buffer of %d floats", k.name, what, off, off+n, b.n)
	}
	return nil
}

// checkAlloc validates an Alloc call.
func (k *book) checkAlloc(name string, n int) error {
	if k.closed {
		return ErrClosed
	}
	if n <= 0 {
		return fmt.Errorf("%s alloc %s: %d floats is not a positive size", k.name, name, n)
	}
	return nil
}

// added records a new allocation under name. The ledger account is
// charged by the caller where it makes the memory (cpu: acct.Float32s) or
// by the cuda device.
func (k *book) added(name string, b Buffer) {
	k.live[b.id] = b
	k.names[b.id] = name
	cur := k.inUse.Add(int64(b.n) * 4)
	if cur > k.peak.Load() {
		k.peak.Store(cur) // only the driving goroutine writes peak
	}
}

// removed forgets b and returns an error if it was not live.
func (k *book) removed(b Buffer) error {
	if !k.holds(b) {
		return fmt.Errorf("%s free: buffer is not allocated on this device (double free?)", k.name)
	}
	delete(k.live, b.id)
	delete(k.names, b.id)
	k.inUse.Add(-int64(b.n) * 4)
	return nil
}

func (k *book) failed() bool {
	k.errMu.Lock()
	defer k.errMu.Unlock()
	return k.err != nil
}

func (k *book) setErr(err error) {
	k.errMu.Lock()
	if k.err == nil {
		k.err = err
	}
	k.errMu.Unlock()
}

func (k *book) stickyErr() error {
	k.errMu.Lock()
	defer k.errMu.Unlock()
	return k.err
}

func (k *book) stats() Stats {
	return Stats{
		Launches:         k.launches.Load(),
		Syncs:            k.syncs.Load(),
		H2DCopies:        k.h2dCopies.Load(),
		D2HCopies:        k.d2hCopies.Load(),
		H2DBytes:         k.h2dBytes.Load(),
		D2HBytes:         k.d2hBytes.Load(),
		DeviceBytesInUse: k.inUse.Load(),
		DeviceBytesPeak:  k.peak.Load(),
		ImplicitWaits:    k.implicitWaits.Load(),
		PinnedHostBytes:  k.pinned.Load(),
		HostWaitNs:       k.hostWaitNs.Load(),
		DeviceBusyNs:     k.busyNs.Load(),
		DeviceTimed:      !k.untimed.Load(),
	}
}

// waited counts one host wait that began at start (Stats.Syncs and
// Stats.HostWaitNs; implicit ones in Stats.ImplicitWaits too).
func (k *book) waited(start time.Time, implicit bool) {
	k.syncs.Add(1)
	if implicit {
		k.implicitWaits.Add(1)
	}
	k.hostWaitNs.Add(int64(time.Since(start)))
}

// buffers lists the live buffers, by name, largest first: the device
// ledger.
func (k *book) buffers() []BufferUse {
	byName := map[string]int64{}
	for id, b := range k.live {
		byName[k.names[id]] += int64(b.n) * 4
	}
	out := make([]BufferUse, 0, len(byName))
	for n, v := range byName {
		out = append(out, BufferUse{Name: n, Bytes: v})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Bytes != out[j].Bytes {
			return out[i].Bytes > out[j].Bytes
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// checkLogits validates a Logits call and counts the launch.
func (k *book) checkLogits(out, hidden, weight Buffer, rows, C, V int) error {
	if rows <= 0 || C <= 0 || V <= 0 {
		return fmt.Errorf("%s logits: bad shape rows=%d C=%d V=%d", k.name, rows, C, V)
	}
	if err := k.check("logits out", out, 0, rows*V); err != nil {
		return err
	}
	if err := k.check("logits hidden", hidden, 0, rows*C); err != nil {
		return err
	}
	if err := k.check("logits weight", weight, 0, V*C); err != nil {
		return err
	}
	k.launches.Add(1)
	return nil
}

// checkSoftmax validates a SoftmaxSample call and counts the launch.
func (k *book) checkSoftmax(out, logits, targets Buffer, rows, V int, s Sampling) error {
	if rows <= 0 || V <= 0 {
		return fmt.Errorf("%s softmax: bad shape rows=%d V=%d", k.name, rows, V)
	}
	if !(s.Temperature >= 0) {
		return fmt.Errorf("%s softmax: temperature %v is not >= 0", k.name, s.Temperature)
	}
	if err := k.check("softmax out", out, 0, rows*OutStride); err != nil {
		return err
	}
	if err := k.check("softmax logits", logits, 0, rows*V); err != nil {
		return err
	}
	if targets.Valid() {
		if err := k.check("softmax targets", targets, 0, rows); err != nil {
			return err
		}
	}
	k.launches.Add(1)
	return nil
}

// checkH2D validates a CopyToDevice call and counts it.
func (k *book) checkH2D(dst Buffer, dstOff int, src []float32) error {
	if err := k.check("copy to device", dst, dstOff, len(src)); err != nil {
		return err
	}
	k.h2dCopies.Add(1)
	k.h2dBytes.Add(int64(len(src)) * 4)
	return nil
}

// checkD2H validates a CopyToHost call and counts it.
func (k *book) checkD2H(dst []float32, src Buffer, srcOff int) error {
	if err := k.check("copy to host", src, srcOff, len(dst)); err != nil {
		return err
	}
	k.d2hCopies.Add(1)
	k.d2hBytes.Add(int64(len(dst)) * 4)
	return nil
}
