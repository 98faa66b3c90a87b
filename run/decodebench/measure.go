package decodebench

import (
	"fmt"
	"time"

	"memprobe/instrument/allocsite"
	"memprobe/schema"
	"memprobe/trainer/decode"
	"memprobe/trainer/device"
)

// Measurement is one mode's figures for `probe decode`. A pass decodes B
// sequences of T positions, one Decode call each; per-token figures divide
// by the tokens of the timed passes (Passes × B × T).
type Measurement struct {
	Mode      string `json:"mode"`
	Device    string `json:"device"`
	T         int    `json:"t"`
	C         int    `json:"c"`
	V         int    `json:"v"`
	Sequences int    `json:"sequences"` // B: Decode calls per pass
	Passes    int    `json:"passes"`    // timed passes after one warm-up pass
	Tokens    int    `json:"tokens"`    // Passes × B × T
	// Model is the whole shape decoded (layers and heads too) and GEMM the
	// backend that ran, set by Run for the record's configuration.
	Model schema.Model `json:"model"`
	GEMM  string       `json:"gemm"`
	// PinnedHost says the decode copied through page-locked host memory
	// of the device (decode.PinnedHost took effect: the prealloc and batch
	// modes on a device.HostMemory device, cuda, with Options.PinnedHost),
	// the decoder's buffers and the probabilities' alike; never in the
	// per-token-copy and per-token-view modes, which keep Go slices by
	// design (schema.DecodeConfig.PinnedHost).
	PinnedHost bool `json:"pinned_host"`

	Seconds         float64 `json:"seconds"`
	TokensPerSecond float64 `json:"tokens_per_second"`
	// PassTokensPerSecond, PassHostWaitNsPerToken and PassDeviceBusyPct
	// are each timed pass's figures, in order: the samples probe diff
	// compares (PassDeviceBusyPct nil where the device is untimed).
	PassTokensPerSecond    []float64 `json:"pass_tokens_per_second"`
	PassHostWaitNsPerToken []float64 `json:"pass_host_wait_ns_per_token"`
	PassDeviceBusyPct      []float64 `json:"pass_device_busy_pct"`
	SyncsPerToken          float64   `json:"syncs_per_token"`
	LaunchesPerToken       float64   `json:"launches_per_token"`
	// Where a token's wall time (Seconds / Tokens) goes: HostWaitNsPerToken
	// is the host blocked in the device's waits (device.Stats.HostWaitNs),
	// DeviceBusyNsPerToken the device at work (device.Stats.DeviceBusyNs)
	// and DeviceBusyPct that as a share of the wall time: note 003's "GPU
	// at 10 %". The busy figures are nil where the device could not time
	// its work (cuda without event support).
	HostWaitNsPerToken   float64  `json:"host_wait_ns_per_token"`
	DeviceBusyNsPerToken *float64 `json:"device_busy_ns_per_token,omitempty"`
	DeviceBusyPct        *float64 `json:"device_busy_pct,omitempty"`
	// Heap objects and bytes the decode path allocated per token, in every
	// goroutine (the device's stream thread included), counted by site
	// with every allocation recorded (instrument/allocsite, the instrument
	// behind the trainer's allocs per step). RuntimeAllocsPerToken are the
	// Go runtime's own objects in the same window (a sudog when a goroutine
	// blocks on the stream and the cache is dry), not the decoder's.
	HostAllocsPerToken    float64 `json:"host_allocs_per_token"`
	HostBytesPerToken     float64 `json:"host_bytes_per_token"`
	RuntimeAllocsPerToken float64 `json:"runtime_allocs_per_token"`
	H2DBytesPerToken      float64 `json:"h2d_bytes_per_token"`
	D2HBytesPerToken      float64 `json:"d2h_bytes_per_token"`
	// H2DBytesPerPass and D2HBytesPerPass are the bytes copied each way to
	// decode the B sequences once (timed bytes / Passes).
	H2DBytesPerPass int64 `json:"h2d_bytes_per_pass"`
	D2HBytesPerPass int64 `json:"d2h_bytes_per_pass"`
	// DeviceBytesPeak is the device ledger's peak since it was opened:
	// the bytes allocated through the device's allocator.
	DeviceBytesPeak int64 `json:"device_bytes_peak"`
	// Buffers is the device ledger once the decoder is made: bytes by
	// buffer name.
	Buffers []device.BufferUse `json:"buffers"`
	// DeviceMemory reconciles the process's device memory (cuda only;
	// nil on cpu).
	DeviceMemory *schema.DeviceMemory `json:"device_memory,omitempty"`
	// Check compares the mode's output with the cpu device's (Options.Check).
	Check *schema.DecodeCheck `json:"check,omitempty"`
	// Loss is the mean loss of the last pass (0 without targets).
	Loss float32 `json:"loss"`
}

// MeasureBatch decodes B sequences with d, made on dev (whose counters give
// the syncs, launches and bytes copied), hidden (B, T, C) with targets
// (B, T) or nil, one Decode call per sequence: one warm-up pass over the B
// sequences, then passes timed ones, and reports the deltas. withProbs
// copies each sequence's (T, V) probabilities back, as training needs;
// without it only tokens and losses come back. The output buffers, one
// sequence's worth, are allocated before the warm-up and reused; where
// the decoder's host buffers are page-locked (decode.PinnedHost: the
// prealloc and batch modes on cuda), the probabilities' buffer is a
// page-locked block of dev too (device.HostMemory), so the batch mode's
// (T, V) copy goes straight into it by DMA, and it is freed on return.
func MeasureBatch(dev device.Device, d *decode.Decoder, hidden []float32, B, T int, targets []uint16, withProbs bool, passes int) (meas Measurement, err error) {
	switch {
	case passes <= 0:
		return Measurement{}, fmt.Errorf("measuring decode: %d passes is not positive", passes)
	case B <= 0 || T <= 0:
		return Measurement{}, fmt.Errorf("measuring decode: bad shape B=%d T=%d", B, T)
	case len(hidden) < B*T*d.C:
		return Measurement{}, fmt.Errorf("measuring decode: hidden has %d values, want B*T*C = %d", len(hidden), B*T*d.C)
	case targets != nil && len(targets) < B*T:
		return Measurement{}, fmt.Errorf("measuring decode: targets has %d ids, want B*T = %d", len(targets), B*T)
	}
	tokens := make([]uint16, T)
	losses := make([]float32, T)
	var probs []float32
	if hm, ok := dev.(device.HostMemory); withProbs && ok && d.PinnedHost() {
		if probs, err = hm.AllocHost("decodebench.probs", T*d.V); err != nil {
			return Measurement{}, fmt.Errorf("measuring decode: %w", err)
		}
		defer func() {
			if ferr := hm.FreeHost(probs); err == nil && ferr != nil {
				meas, err = Measurement{}, fmt.Errorf("measuring decode: %w", ferr)
			}
		}()
	} else if withProbs {
		probs = make([]float32, T*d.V)
	}
	pass := func() (float32, error) {
		var sum float64
		for b := 0; b < B; b++ {
			var tg []uint16
			var ls []float32
			if targets != nil {
				tg, ls = targets[b*T:(b+1)*T], losses
			}
			l, err := d.Decode(hidden[b*T*d.C:(b+1)*T*d.C], T, tg, tokens, probs, ls)
			if err != nil {
				return 0, fmt.Errorf("sequence %d: %w", b, err)
			}
			sum += float64(l)
		}
		return float32(sum / float64(B)), nil
	}
	if _, err := pass(); err != nil {
		return Measurement{}, fmt.Errorf("measuring decode: warm-up: %w", err)
	}
	// Per-pass samples, made before the allocation window opens.
	perPass, waitPass, busyPass := make([]float64, passes), make([]float64, passes), make([]float64, passes)
	before := dev.Stats()
	sites := allocsite.Begin(allocsite.Options{})
	start := time.Now()
	var loss float32
	prev := before
	for i := 0; i < passes; i++ {
		passStart := time.Now()
		l, err := pass()
		if err != nil {
			return Measurement{}, fmt.Errorf("measuring decode: pass %d: %w", i, err)
		}
		dur := time.Since(passStart)
		s := dev.Stats()
		perPass[i] = float64(B*T) / dur.Seconds()
		waitPass[i] = float64(s.HostWaitNs-prev.HostWaitNs) / float64(B*T)
		busyPass[i] = 100 * float64(s.DeviceBusyNs-prev.DeviceBusyNs) / float64(dur)
		prev = s
		loss = l
	}
	secs := time.Since(start).Seconds()
	allocs := sites.End(passes)
	after := dev.Stats()
	n := float64(passes * B * T)
	h2d, d2h := after.H2DBytes-before.H2DBytes, after.D2HBytes-before.D2HBytes
	var busyPerToken, busyPct *float64
	if !(before.DeviceTimed && after.DeviceTimed) {
		busyPass = nil
	} else {
		busy := float64(after.DeviceBusyNs - before.DeviceBusyNs)
		perToken, pct := busy/n, 100*busy/(secs*1e9)
		busyPerToken, busyPct = &perToken, &pct
	}
	return Measurement{
		Mode: d.Mode().String(), Device: dev.Name(), T: T, C: d.C, V: d.V, PinnedHost: d.PinnedHost(),
		Sequences: B, Passes: passes, Tokens: passes * B * T,
		Seconds:                secs,
		TokensPerSecond:        n / secs,
		PassTokensPerSecond:    perPass,
		PassHostWaitNsPerToken: waitPass,
		PassDeviceBusyPct:      busyPass,
		SyncsPerToken:          float64(after.Syncs-before.Syncs) / n,
		LaunchesPerToken:       float64(after.Launches-before.Launches) / n,
		HostWaitNsPerToken:     float64(after.HostWaitNs-before.HostWaitNs) / n,
		DeviceBusyNsPerToken:   busyPerToken,
		DeviceBusyPct:          busyPct,
		HostAllocsPerToken:     float64(allocs.ProgramObjects) / n,
		HostBytesPerToken:      float64(allocs.ProgramBytes) / n,
		RuntimeAllocsPerToken:  float64(allocs.RuntimeObjects) / n,
		H2DBytesPerToken:       float64(h2d) / n,
		D2HBytesPerToken:       float64(d2h) / n,
		H2DBytesPerPass:        h2d / int64(passes),
		D2HBytesPerPass:        d2h / int64(passes),
		DeviceBytesPeak:        after.DeviceBytesPeak,
		Buffers:                dev.Buffers(),
		Loss:                   loss,
	}, nil
}
