package trainer

// The LM head on a device (design note 003). With Options.Decode
// set, each executor runs its sequence's LM head — logits = lnf · wteᵀ,
// softmax, cross-entropy — through a decodeHead: a device.Device of its own
// (its own stream) driven by a decode.Decoder in one of the four modes,
// instead of model.ForwardHead on the host. Backward is unchanged: it reads
// a.Probs, which the head copies back from the device.

import (
	"encoding/binary"
	"fmt"
	"math"

	"memprobe/ledger"
	"memprobe/trainer/decode"
	"memprobe/trainer/device"
	"memprobe/trainer/gemm"
	"memprobe/trainer/model"
)

// decodeHead is one executor's LM head on a device. It owns the device (one
// stream) and the decoder's buffers: on the device the LM head (V, C) and
// the decoder's per-mode staging (one row in the per-token modes, T rows in
// batch), counted in the ledger account given to newDecodeHead
// (ledger.DeviceBuffers); on the host the decoder's staging, the tokens and
// the cpu device's scratch, counted in the host account
// (ledger.DecodeHost). A
// head is driven by one goroutine at a time, like the executor it belongs
// to; stats may be read from anywhere.
type decodeHead struct {
	cfg    model.Config
	dev    device.Device
	dec    *decode.Decoder
	tokens []uint16 // (T) the greedy token of each position; training reads none
	host   *ledger.Account
}

// newDecodeHead opens the named device ("cpu", or "cuda" in a build with the
// cuda tag) with gemm backend g for devices that compute on the host, makes
// a decoder in the named mode (decode.ParseMode) for T = cfg.Context
// positions, and uploads wte (V, C), the tied LM head, waiting for the
// upload. Device memory is counted in acct, the head's Go buffers on the
// host in host.
func newDecodeHead(deviceName, mode string, g gemm.Backend, cfg model.Config, wte []float32, acct, host *ledger.Account) (*decodeHead, error) {
	m, err := decode.ParseMode(mode)
	if err != nil {
		return nil, err
	}
	dev, err := device.Open(deviceName, g, acct)
	if err != nil {
		return nil, fmt.Errorf("opening decode head: %w", err)
	}
	if c, ok := dev.(*device.CPU); ok {
		c.ReserveScratch(host, cfg.Vocab)
	}
	dec, err := decode.New(dev, m, cfg.Vocab, cfg.Dim, cfg.Context, wte, decode.HostAccount(host))
	if err != nil {
		dev.Close()
		return nil, fmt.Errorf("opening decode head on %s: %w", deviceName, err)
	}
	return &decodeHead{cfg: cfg, dev: dev, dec: dec, tokens: ledger.Make[uint16](host, cfg.Context), host: host}, nil
}

// forward runs the LM head on a.LNF (T, C) with targets (T) through the
// decoder in its mode, filling a.Probs (T, V) and a.Losses (T) as
// model.ForwardHead does, and returns model.MeanLoss(a.Losses). a.Logits is
// not written: the logits live on the device, where the softmax replaces
// them; backward needs only a.Probs.
//
// With the cpu device the probabilities and losses are ForwardHead's bit for
// bit in the batch mode (the logits are the same Sgemm call, the softmax the
// same float32 operations); in the per-token modes too with the naive
// backend, and within a few float32 ulps with a blocked backend, which may
// sum a one-row product in another order (decodehead_test.go states the
// tolerance).
func (h *decodeHead) forward(a *model.Acts, targets []uint16) (float32, error) {
	T := h.cfg.Context
	if len(targets) != T {
		return 0, fmt.Errorf("decode head: %d targets, want T = %d", len(targets), T)
	}
	if _, err := h.dec.Decode(a.LNF, T, targets, h.tokens, a.Probs, a.Losses); err != nil {
		return 0, err
	}
	return model.MeanLoss(a.Losses[:T]), nil
}

// refresh uploads wte (V, C) after an optimizer update, so that the device's
// LM head follows the parameters, and waits for the copy: wte may change
// again as soon as refresh returns, whether or not this head's executor runs
// a sequence before the next update. One copy of V×C floats and one sync
// per call.
func (h *decodeHead) refresh(wte []float32) error {
	if err := h.dec.SetWeights(wte); err != nil {
		return fmt.Errorf("refreshing decode head: %w", err)
	}
	if err := h.dev.Sync(); err != nil {
		return fmt.Errorf("refreshing decode head: %w", err)
	}
	return nil
}

// close frees the decoder's buffers and closes the device. The head must
// not be used afterwards.
func (h *decodeHead) close() error {
	err := h.dec.Close()
	if cerr := h.dev.Close(); err == nil {
		err = cerr
	}
	ledger.Drop(h.host, h.tokens)
	h.tokens = nil
	if err != nil {
		return fmt.Errorf("closing decode head: %w", err)
	}
	return nil
}

// stats are the head's device counters so far: launches, syncs, bytes each
// way, device memory in use and at peak.
func (h *decodeHead) stats() device.Stats { return h.dev.Stats() }

// ReadCheckpointParams reads what a checkpoint says of itself and its
// parameters (not the Adam moments), after verifying the whole file, into
// memory counted in acct (nil counts nothing). It is for commands that run
// the model without training it, such as `probe decode`.
func ReadCheckpointParams(path string, acct *ledger.Account) (CheckpointInfo, *model.Params, error) {
	ck, err := readCheckpoint(path)
	if err != nil {
		return CheckpointInfo{}, nil, err
	}
	p := model.NewParams(ck.cfg, acct.Float32s(ck.cfg.NumParams()))
	for i := range p.Memory {
		p.Memory[i] = math.Float32frombits(binary.LittleEndian.Uint32(ck.payload[4*i:]))
	}
	return ck.info(), p, nil
}

func (t *Trainer) deviceName() string {
	if t.opts.Device == "" {
		return "cpu"
	}
	return t.opts.Device
}

// refreshHeads uploads wte to every decode head after an update.
func (t *Trainer) refreshHeads() {
	for _, e := range t.execs {
		if e.head != nil {
			if err := e.head.refresh(t.Param.WTE); err != nil {
				t.fail(err)
			}
		}
	}
}

// DecodeStats sums the device counters of every decode head (zero without
// Options.Decode).
func (t *Trainer) DecodeStats() device.Stats {
	var s device.Stats
	first := true
	for _, e := range t.execs {
		if e.head == nil {
			continue
		}
		if h := e.head.stats(); first {
			s, first = h, false
		} else {
			s.Add(h)
		}
	}
	return s
}
