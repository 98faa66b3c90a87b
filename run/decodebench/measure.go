package decodebench

import (
	"fmt"
	"time"

	"memprobe/instrument/allocsite"
	"memprobe/schema"
	"memprobe/trainer/decode"
	"memprobe/trainer/device"
)

// MeasureBatch decodes B sequences with d, made on dev (whose counters give
// the syncs, launches and bytes copied), hidden (B, T, C) with targets
// (B, T) or nil, one Decode call per sequence: one warm-up pass over the B
// sequences, then passes timed ones, and reports the deltas as the mode's
// decode record: its figures, the shape decoded (Config.Model's V, C, T
// and B), the device, the passes and whether the host buffers were
// page-locked; the caller adds the rest of the configuration (Records).
// Per-token figures divide by the tokens of the timed passes (passes × B
// × T); the device's peak is the ledger's (measureMode puts NVML's in its
// place where it has one). withProbs copies each sequence's (T, V)
// probabilities back, as training needs; without it only tokens and
// losses come back. The output buffers, one sequence's worth, are
// allocated before the warm-up and reused; where the decoder's host
// buffers are page-locked (decode.PinnedHost: the prealloc and batch
// modes on cuda), the probabilities' buffer is a page-locked block of dev
// too (device.HostMemory), so the batch mode's (T, V) copy goes straight
// into it by DMA, and it is freed on return.
func MeasureBatch(dev device.Device, d *decode.Decoder, hidden []float32, B, T int, targets []uint16, withProbs bool, passes int) (rec schema.DecodeRecord, err error) {
	if err := checkBatch(d, hidden, B, T, targets, passes); err != nil {
		return schema.DecodeRecord{}, fmt.Errorf("measuring decode: %w", err)
	}
	probs, freeProbs, err := probsBuffer(dev, d, T, withProbs)
	if err != nil {
		return schema.DecodeRecord{}, fmt.Errorf("measuring decode: %w", err)
	}
	defer func() {
		if ferr := freeProbs(); err == nil && ferr != nil {
			rec, err = schema.DecodeRecord{}, fmt.Errorf("measuring decode: %w", ferr)
		}
	}()
	b := batch{d: d, hidden: hidden, targets: targets, B: B, T: T,
		tokens: make([]uint16, T), losses: make([]float32, T), probs: probs}
	if err := b.pass(); err != nil {
		return schema.DecodeRecord{}, fmt.Errorf("measuring decode: warm-up: %w", err)
	}
	// Per-pass samples, made before the allocation window opens.
	t := timedPasses{tokensPerSec: make([]float64, passes), hostWaitNs: make([]float64, passes), busyPct: make([]float64, passes)}
	t.before = dev.Stats()
	sites := allocsite.Begin(allocsite.Options{})
	start := time.Now()
	prev := t.before
	for i := 0; i < passes; i++ {
		passStart := time.Now()
		if err := b.pass(); err != nil {
			return schema.DecodeRecord{}, fmt.Errorf("measuring decode: pass %d: %w", i, err)
		}
		dur := time.Since(passStart)
		s := dev.Stats()
		t.tokensPerSec[i] = float64(B*T) / dur.Seconds()
		t.hostWaitNs[i] = float64(s.HostWaitNs-prev.HostWaitNs) / float64(B*T)
		t.busyPct[i] = 100 * float64(s.DeviceBusyNs-prev.DeviceBusyNs) / float64(dur)
		prev = s
	}
	t.secs = time.Since(start).Seconds()
	t.allocs = sites.End(passes)
	t.after = dev.Stats()
	return t.record(dev, d, B, T, passes), nil
}

// checkBatch says what makes the inputs of MeasureBatch unfit, or nil.
func checkBatch(d *decode.Decoder, hidden []float32, B, T int, targets []uint16, passes int) error {
	switch {
	case passes <= 0:
		return fmt.Errorf("%d passes is not positive", passes)
	case B <= 0 || T <= 0:
		return fmt.Errorf("bad shape B=%d T=%d", B, T)
	case len(hidden) < B*T*d.C:
		return fmt.Errorf("hidden has %d values, want B*T*C = %d", len(hidden), B*T*d.C)
	case targets != nil && len(targets) < B*T:
		return fmt.Errorf("targets has %d ids, want B*T = %d", len(targets), B*T)
	}
	return nil
}

// probsBuffer is the (T, V) buffer the probabilities come back into (nil
// without withProbs): a page-locked block of dev where d's host buffers
// are page-locked, else a Go slice. free releases the block (a no-op for
// a slice).
func probsBuffer(dev device.Device, d *decode.Decoder, T int, withProbs bool) (probs []float32, free func() error, err error) {
	none := func() error { return nil }
	if !withProbs {
		return nil, none, nil
	}
	if hm, ok := dev.(device.HostMemory); ok && d.PinnedHost() {
		if probs, err = hm.AllocHost("decodebench.probs", T*d.V); err != nil {
			return nil, nil, err
		}
		return probs, func() error { return hm.FreeHost(probs) }, nil
	}
	return make([]float32, T*d.V), none, nil
}

// batch is one pass's work: B sequences of T positions decoded by d into
// the reused output buffers.
type batch struct {
	d       *decode.Decoder
	hidden  []float32 // (B, T, C)
	targets []uint16  // (B, T) or nil
	B, T    int
	tokens  []uint16  // (T)
	losses  []float32 // (T)
	probs   []float32 // (T, V) or nil
}

// pass decodes the B sequences once, one Decode call each.
func (b *batch) pass() error {
	C, T := b.d.C, b.T
	for s := 0; s < b.B; s++ {
		var tg []uint16
		var ls []float32
		if b.targets != nil {
			tg, ls = b.targets[s*T:(s+1)*T], b.losses
		}
		if _, err := b.d.Decode(b.hidden[s*T*C:(s+1)*T*C], T, tg, b.tokens, b.probs, ls); err != nil {
			return fmt.Errorf("sequence %d: %w", s, err)
		}
	}
	return nil
}

// timedPasses is what MeasureBatch saw over the timed passes: each pass's
// figures, the device's counters before and after, the wall time and the
// heap allocations by site.
type timedPasses struct {
	tokensPerSec, hostWaitNs, busyPct []float64
	before, after                     device.Stats
	secs                              float64
	allocs                            allocsite.Report
}

// record is the decode record of passes timed passes over B sequences of
// T positions with d on dev.
func (t *timedPasses) record(dev device.Device, d *decode.Decoder, B, T, passes int) schema.DecodeRecord {
	before, after := t.before, t.after
	n := float64(passes * B * T)
	h2d, d2h := after.H2DBytes-before.H2DBytes, after.D2HBytes-before.D2HBytes
	var busyPerToken, busyPct *float64
	busyPass := t.busyPct
	if !(before.DeviceTimed && after.DeviceTimed) {
		busyPass = nil
	} else {
		busy := float64(after.DeviceBusyNs - before.DeviceBusyNs)
		perToken, pct := busy/n, 100*busy/(t.secs*1e9)
		busyPerToken, busyPct = &perToken, &pct
	}
	r := schema.DecodeRecord{
		Schema:                   schema.DecodeVersion,
		TokensPerSec:             n / t.secs,
		TokensPerSecPasses:       t.tokensPerSec,
		HostWaitNsPerTokenPasses: t.hostWaitNs,
		DeviceBusyPctPasses:      busyPass,
		SyncsPerToken:            float64(after.Syncs-before.Syncs) / n,
		LaunchesPerToken:         float64(after.Launches-before.Launches) / n,
		HostAllocsPerToken:       float64(t.allocs.ProgramObjects) / n,
		HostWaitNsPerToken:       float64(after.HostWaitNs-before.HostWaitNs) / n,
		DeviceBusyNsPerToken:     busyPerToken,
		DeviceBusyPct:            busyPct,
		H2DBytes:                 h2d / int64(passes),
		D2HBytes:                 d2h / int64(passes),
		DevicePeakBytes:          after.DeviceBytesPeak,
		DevicePeakSource:         "ledger",
		LedgerPeakBytes:          after.DeviceBytesPeak,
		Decode:                   d.Mode().String(),
		Device:                   dev.Name(),
		Config: schema.DecodeConfig{
			Model:  schema.Model{Vocab: d.V, Dim: d.C, Context: T, Batch: B},
			Device: dev.Name(), Passes: passes, PinnedHost: d.PinnedHost(),
		},
	}
	for _, b := range dev.Buffers() {
		r.Buffers = append(r.Buffers, schema.DeviceBuffer{Name: b.Name, Bytes: b.Bytes})
	}
	return r
}
