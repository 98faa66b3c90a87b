// Package decode is the trainer's LM-head decode step on a device.Device:
// logits = hidden · lmHeadᵀ, softmax, a token per position and, given
// targets, the cross-entropy loss.
//
// It reproduces design note 003 (a decode loop that returns vectors by value
// and synchronises with the GPU once per token: ~10 tokens/s) and its three
// fixes as four modes of one Decoder, so that `probe decode` can measure each
// on the same device and the trainer can run its LM head through the fastest:
//
//  1. per-token-copy: for every position the hidden vector is returned by
//     value (a fresh []float32, copied), copied to the device, one logits
//     launch and one softmax launch for that row, fresh host slices for
//     the results, and a Sync per token. This is the note's code.
//  2. per-token-view: the note's solution 3: the hidden row is passed as a
//     view of the (T, C) matrix, no host copy; outputs are still fresh
//     slices and there is still a Sync per token.
//  3. per-token-prealloc: the note's solution 1: input and output host
//     buffers are allocated once and reused; still a Sync per token.
//  4. batch: the note's solution 2: all T positions in one copy, one logits
//     launch, one softmax launch, one copy back, one Sync.
//
// Shapes: T positions, C channels, V vocabulary; matrices row-major.
package decode

import (
	"fmt"
	"strings"

	"memprobe/ledger"
	"memprobe/trainer/device"
)

// Mode selects how Decode drives the device.
type Mode int

// The modes, slowest first.
const (
	PerTokenCopy Mode = iota
	PerTokenView
	PerTokenPrealloc
	Batch
)

var modeNames = [...]string{"per-token-copy", "per-token-view", "per-token-prealloc", "batch"}

// String returns the mode's name as ParseMode reads it.
func (m Mode) String() string {
	if m < 0 || int(m) >= len(modeNames) {
		return fmt.Sprintf("Mode(%d)", int(m))
	}
	return modeNames[m]
}

// Modes lists every mode, slowest first.
func Modes() []Mode { return []Mode{PerTokenCopy, PerTokenView, PerTokenPrealloc, Batch} }

// ParseMode reads a mode name.
func ParseMode(s string) (Mode, error) {
	for i, n := range modeNames {
		if s == n {
			return Mode(i), nil
		}
	}
	return 0, fmt.Errorf("parsing decode mode %q: not one of %s", s, strings.Join(modeNames[:], ", "))
}

// PerToken reports whether m synchronises once per token.
func (m Mode) PerToken() bool { return m != Batch }

// Decoder runs the decode step. Its device buffers and host staging buffers
// are allocated once in New; Decode allocates nothing in the prealloc and
// batch modes. A Decoder is used by one goroutine at a time.
type Decoder struct {
	dev           device.Device
	mode          Mode
	V, C, maxRows int
	samp          device.Sampling

	// host counts the host buffers below that are Go slices made once
	// (the HostAccount option; nil counts nothing).
	host *ledger.Account
	// hm is the device's page-locked host memory when the host buffers
	// below come from it (PinnedHost, in the prealloc and batch modes),
	// else nil: Close gives them back to it.
	hm device.HostMemory

	// Device memory. Per-token modes hold one row, batch maxRows.
	dW      device.Buffer // (V, C) LM head
	dIn     device.Buffer // (rows, C) hidden states
	dLogits device.Buffer // (rows, V) logits, then probabilities
	dTgt    device.Buffer // (rows) targets as float32
	dOut    device.Buffer // (rows, OutStride) token id, loss

	// Host staging, allocated once: Go slices, or page-locked blocks of
	// hm (prealloc and batch with PinnedHost).
	tgtHost  []float32 // (maxRows) targets as float32 (not per-token-copy)
	outHost  []float32 // (maxRows, OutStride) (prealloc, batch)
	inHost   []float32 // (C) one hidden row (prealloc)
	probHost []float32 // (V) one probability row (prealloc)
}

// Option is an optional setting of New.
type Option func(*options)

type options struct {
	pinnedHost bool
	host       *ledger.Account
}

// HostAccount(acct) counts the host buffers New makes as Go slices (the
// targets, output records, hidden and probability rows the mode keeps)
// in acct, and Close drops them from it. Page-locked buffers (PinnedHost)
// are not Go memory and are not counted; nor are the fresh slices the
// per-token-copy and per-token-view modes make per token, which are
// garbage once Decode returns. The default, nil, counts nothing.
func HostAccount(acct *ledger.Account) Option { return func(o *options) { o.host = acct } }

// PinnedHost(true) asks New to take the decoder's own host buffers in the
// per-token-prealloc and batch modes (the hidden row, targets, output
// record and probability row of prealloc; the targets and output records
// of batch) from the device's page-locked host memory, where the device
// offers it (device.HostMemory: cuda), so that their copies go straight by
// DMA instead of through the device's staging. The per-token-copy and
// per-token-view modes keep their fresh Go slices whatever it says: those
// are the pathology they reproduce. On a device without HostMemory (cpu)
// it changes nothing; Decoder.PinnedHost says whether it took effect.
// The default is false: Go slices, copied through the device's staging.
func PinnedHost(on bool) Option { return func(o *options) { o.pinnedHost = on } }

// New makes a decoder for up to maxRows positions per Decode call and
// uploads lmHead (V, C) once; New waits for the upload, so lmHead may change
// after it returns. V must fit token ids in uint16. opts are optional
// settings (PinnedHost).
func New(dev device.Device, mode Mode, V, C, maxRows int, lmHead []float32, opts ...Option) (*Decoder, error) {
	if mode < 0 || int(mode) >= len(modeNames) {
		return nil, fmt.Errorf("decode: unknown mode %d", int(mode))
	}
	if V <= 0 || V > 1<<16 || C <= 0 || maxRows <= 0 {
		return nil, fmt.Errorf("decode: bad sizes V=%d C=%d maxRows=%d (want 0 < V <= 65536, C > 0, maxRows > 0)", V, C, maxRows)
	}
	if len(lmHead) != V*C {
		return nil, fmt.Errorf("decode: lm head has %d values, want V*C = %d", len(lmHead), V*C)
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	d := &Decoder{dev: dev, mode: mode, V: V, C: C, maxRows: maxRows, host: o.host}
	rows := 1
	if mode == Batch {
		rows = maxRows
	}
	for _, a := range []struct {
		b    *device.Buffer
		name string
		n    int
	}{
		{&d.dW, "decode.lm_head", V * C}, {&d.dIn, "decode.hidden", rows * C}, {&d.dLogits, "decode.logits", rows * V},
		{&d.dTgt, "decode.targets", rows}, {&d.dOut, "decode.out", rows * device.OutStride},
	} {
		b, err := dev.Alloc(a.name, a.n)
		if err != nil {
			d.Close()
			return nil, fmt.Errorf("decode: allocating device buffers: %w", err)
		}
		*a.b = b
	}
	if o.pinnedHost && (mode == PerTokenPrealloc || mode == Batch) {
		d.hm, _ = dev.(device.HostMemory)
	}
	for _, h := range []struct {
		p    *[]float32
		name string
		n    int
		in   bool
	}{
		{&d.tgtHost, "decode.host.targets", maxRows, mode != PerTokenCopy},
		{&d.outHost, "decode.host.out", maxRows * device.OutStride, mode == PerTokenPrealloc || mode == Batch},
		{&d.inHost, "decode.host.hidden", C, mode == PerTokenPrealloc},
		{&d.probHost, "decode.host.probs", V, mode == PerTokenPrealloc},
	} {
		if !h.in {
			continue
		}
		if d.hm == nil {
			*h.p = ledger.Make[float32](d.host, h.n)
			continue
		}
		p, err := d.hm.AllocHost(h.name, h.n)
		if err != nil {
			d.Close()
			return nil, fmt.Errorf("decode: allocating page-locked host buffers: %w", err)
		}
		*h.p = p
	}
	if err := d.SetWeights(lmHead); err != nil {
		d.Close()
		return nil, err
	}
	if err := dev.Sync(); err != nil {
		d.Close()
		return nil, fmt.Errorf("decode: uploading lm head: %w", err)
	}
	return d, nil
}

// Mode is the decoder's mode.
func (d *Decoder) Mode() Mode { return d.mode }

// PinnedHost reports whether the decoder's host buffers are page-locked
// memory of its device (the PinnedHost option, in the prealloc and batch
// modes, on a device.HostMemory device).
func (d *Decoder) PinnedHost() bool { return d.hm != nil }

// SetWeights enqueues an upload of a new LM head (V, C), for the trainer
// after an optimizer step. It does not wait: lmHead must not change until
// the next Decode returns.
func (d *Decoder) SetWeights(lmHead []float32) error {
	if len(lmHead) != d.V*d.C {
		return fmt.Errorf("decode: lm head has %d values, want V*C = %d", len(lmHead), d.V*d.C)
	}
	return d.dev.CopyToDevice(d.dW, 0, lmHead)
}

// SetSampling switches between greedy decoding (temperature 0, the default)
// and sampling from softmax(logits/temperature) with a generator seeded by
// seed. Positions are numbered from 0 again, across Decode calls, so the
// tokens do not depend on the mode.
func (d *Decoder) SetSampling(temperature float32, seed uint64) {
	d.samp = device.Sampling{Temperature: temperature, Seed: seed}
}

// Decode runs positions 0..T-1 of hidden (T, C) through the LM head. It
// writes the chosen token of each position to tokens[:T] and, if probs is
// not nil, the softmax probabilities to probs[:T*V] (T, V), which the
// trainer's backward pass uses (dlogits = probs - onehot(targets)). With
// targets (T) it writes each position's cross-entropy loss to losses[:T]
// when losses is not nil, and returns the mean loss, summed in float64 in
// position order as model.MeanLoss does; without targets it returns 0. The
// buffers are the caller's; Decode keeps none of them once it returns.
//
// The probabilities and losses are nn.SoftmaxCrossEntropyForward's
// arithmetic on the device's logits: with the cpu device and the batch mode
// the logits are the same Sgemm call as nn.MatmulForward's, so the results
// equal the host LM head's bit for bit; the per-token modes compute each
// row with a one-row product, which a blocked GEMM may sum in another order.
func (d *Decoder) Decode(hidden []float32, T int, targets []uint16, tokens []uint16, probs, losses []float32) (float32, error) {
	if err := d.check(hidden, T, targets, tokens, probs, losses); err != nil {
		return 0, err
	}
	var loss float64
	var err error
	if d.mode == Batch {
		loss, err = d.batch(hidden, T, targets, tokens, probs, losses)
	} else {
		loss, err = d.perToken(hidden, T, targets, tokens, probs, losses)
	}
	d.samp.Pos += uint64(T)
	if err != nil {
		d.dev.Sync() // drain: no queued copy may touch the caller's buffers after we return
		return 0, fmt.Errorf("decode %s: %w", d.mode, err)
	}
	if targets == nil {
		return 0, nil
	}
	return float32(loss / float64(T)), nil
}

func (d *Decoder) check(hidden []float32, T int, targets []uint16, tokens []uint16, probs, losses []float32) error {
	switch {
	case T <= 0 || T > d.maxRows:
		return fmt.Errorf("decode: T=%d outside 1..%d", T, d.maxRows)
	case len(hidden) < T*d.C:
		return fmt.Errorf("decode: hidden has %d values, want T*C = %d", len(hidden), T*d.C)
	case len(tokens) < T:
		return fmt.Errorf("decode: tokens has room for %d, want T = %d", len(tokens), T)
	case probs != nil && len(probs) < T*d.V:
		return fmt.Errorf("decode: probs has %d values, want T*V = %d", len(probs), T*d.V)
	case targets != nil && len(targets) < T:
		return fmt.Errorf("decode: targets has %d ids, want T = %d", len(targets), T)
	case losses != nil && targets == nil:
		return fmt.Errorf("decode: losses asked for without targets")
	case losses != nil && len(losses) < T:
		return fmt.Errorf("decode: losses has room for %d, want T = %d", len(losses), T)
	}
	for t := 0; t < T && targets != nil; t++ {
		if int(targets[t]) >= d.V {
			return fmt.Errorf("decode: target %d at position %d is not below V=%d", targets[t], t, d.V)
		}
	}
	return nil
}

// batch is solution 2: one copy each way per buffer, two launches, one Sync.
func (d *Decoder) batch(hidden []float32, T int, targets []uint16, tokens []uint16, probs, losses []float32) (float64, error) {
	dev, V, C := d.dev, d.V, d.C
	if err := dev.CopyToDevice(d.dIn, 0, hidden[:T*C]); err != nil {
		return 0, err
	}
	var dTgt device.Buffer
	if targets != nil {
		for t := 0; t < T; t++ {
			d.tgtHost[t] = float32(targets[t])
		}
		if err := dev.CopyToDevice(d.dTgt, 0, d.tgtHost[:T]); err != nil {
			return 0, err
		}
		dTgt = d.dTgt
	}
	if err := dev.Logits(d.dLogits, d.dIn, d.dW, T, C, V); err != nil {
		return 0, err
	}
	if err := dev.SoftmaxSample(d.dOut, d.dLogits, dTgt, T, V, d.samp); err != nil {
		return 0, err
	}
	out := d.outHost[:T*device.OutStride]
	if err := dev.CopyToHost(out, d.dOut, 0); err != nil {
		return 0, err
	}
	if probs != nil {
		if err := dev.CopyToHost(probs[:T*V], d.dLogits, 0); err != nil {
			return 0, err
		}
	}
	if err := dev.Sync(); err != nil {
		return 0, err
	}
	var loss float64
	for t := 0; t < T; t++ {
		tokens[t] = uint16(out[t*device.OutStride])
		l := out[t*device.OutStride+1]
		loss += float64(l)
		if losses != nil {
			losses[t] = l
		}
	}
	return loss, nil
}

// perToken is the note's loop, one position per launch and per Sync, with
// the host buffers each mode prescribes.
func (d *Decoder) perToken(hidden []float32, T int, targets []uint16, tokens []uint16, probs, losses []float32) (float64, error) {
	dev, V, C, mode := d.dev, d.V, d.C, d.mode
	var loss float64
	for t := 0; t < T; t++ {
		row := hidden[t*C : (t+1)*C] // a view (per-token-view)
		switch mode {
		case PerTokenCopy:
			row = make([]float32, C) // returned by value: a fresh copy per token
			copy(row, hidden[t*C:(t+1)*C])
		case PerTokenPrealloc:
			copy(d.inHost, row) // "encodeByIdInto": a reused buffer
			row = d.inHost
		}
		if err := dev.CopyToDevice(d.dIn, 0, row); err != nil {
			return 0, err
		}
		var dTgt device.Buffer
		if targets != nil {
			var tg []float32
			if mode == PerTokenCopy {
				tg = []float32{float32(targets[t])}
			} else {
				d.tgtHost[t] = float32(targets[t])
				tg = d.tgtHost[t : t+1]
			}
			if err := dev.CopyToDevice(d.dTgt, 0, tg); err != nil {
				return 0, err
			}
			dTgt = d.dTgt
		}
		if err := dev.Logits(d.dLogits, d.dIn, d.dW, 1, C, V); err != nil {
			return 0, err
		}
		s := d.samp
		s.Pos += uint64(t)
		if err := dev.SoftmaxSample(d.dOut, d.dLogits, dTgt, 1, V, s); err != nil {
			return 0, err
		}
		var out, prow []float32
		if mode == PerTokenPrealloc {
			out = d.outHost[:device.OutStride]
			prow = d.probHost
		} else {
			out = make([]float32, device.OutStride) // "getBrocaOutput" by value
			if probs != nil {
				prow = make([]float32, V)
			}
		}
		if err := dev.CopyToHost(out, d.dOut, 0); err != nil {
			return 0, err
		}
		if probs != nil {
			if err := dev.CopyToHost(prow, d.dLogits, 0); err != nil {
				return 0, err
			}
		}
		if err := dev.Sync(); err != nil { // the per-token sync of note 003
			return 0, err
		}
		tokens[t] = uint16(out[0])
		loss += float64(out[1])
		if losses != nil {
			losses[t] = out[1]
		}
		if probs != nil {
			copy(probs[t*V:(t+1)*V], prow)
		}
	}
	return loss, nil
}

// Close frees the decoder's device buffers and its page-locked host
// buffers (PinnedHost). The device stays open.
func (d *Decoder) Close() error {
	var first error
	for _, b := range []*device.Buffer{&d.dW, &d.dIn, &d.dLogits, &d.dTgt, &d.dOut} {
		if b.Valid() {
			if err := d.dev.Free(*b); err != nil && first == nil {
				first = err
			}
			*b = device.Buffer{}
		}
	}
	for _, p := range []*[]float32{&d.tgtHost, &d.outHost, &d.inHost, &d.probHost} {
		if *p == nil {
			continue
		}
		if d.hm == nil {
			ledger.Drop(d.host, *p)
		} else if err := d.hm.FreeHost(*p); err != nil && first == nil {
			first = err
		}
		*p = nil // freed memory: no later call may touch it; counted once
	}
	return first
}
