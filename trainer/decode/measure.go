package decode

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"time"
)

// Measurement is one mode's figures for `probe decode`. Per-token figures
// divide by the tokens decoded in the timed calls (Calls × T).
type Measurement struct {
	Mode   string `json:"mode"`
	Device string `json:"device"`
	T      int    `json:"t"`
	C      int    `json:"c"`
	V      int    `json:"v"`
	Calls  int    `json:"calls"`
	Tokens int    `json:"tokens"`

	Seconds          float64 `json:"seconds"`
	TokensPerSecond  float64 `json:"tokens_per_second"`
	SyncsPerToken    float64 `json:"syncs_per_token"`
	LaunchesPerToken float64 `json:"launches_per_token"`
	// Heap objects and bytes allocated per token by the whole process (all
	// goroutines, the device's stream thread included), from runtime/metrics:
	// objects are /gc/heap/allocs:objects plus /gc/heap/tiny/allocs:objects,
	// because the former counts a 16-byte block of tiny objects once. Each
	// read follows a runtime.GC, which flushes the per-P allocation caches
	// whose counts runtime/metrics otherwise sees late.
	HostAllocsPerToken float64 `json:"host_allocs_per_token"`
	HostBytesPerToken  float64 `json:"host_bytes_per_token"`
	H2DBytesPerToken   float64 `json:"h2d_bytes_per_token"`
	D2HBytesPerToken   float64 `json:"d2h_bytes_per_token"`
	// DeviceBytesPeak is the device's peak since it was opened.
	DeviceBytesPeak int64 `json:"device_bytes_peak"`
	// Loss is the mean loss of the last call (0 without targets).
	Loss float32 `json:"loss"`
}

// Measure runs one warm-up Decode and then calls timed ones over the same
// inputs, and reports the deltas. withProbs copies the (T, V)
// probabilities back, as training needs; without it only tokens and loss
// come back. The output buffers are allocated before the warm-up.
func Measure(d *Decoder, hidden []float32, T int, targets []uint16, withProbs bool, calls int) (Measurement, error) {
	if calls <= 0 {
		return Measurement{}, fmt.Errorf("measuring decode: %d calls is not positive", calls)
	}
	tokens := make([]uint16, T)
	var probs []float32
	if withProbs {
		probs = make([]float32, T*d.V)
	}
	if _, err := d.Decode(hidden, T, targets, tokens, probs); err != nil {
		return Measurement{}, fmt.Errorf("measuring decode: warm-up: %w", err)
	}
	samples := []metrics.Sample{{Name: "/gc/heap/allocs:objects"}, {Name: "/gc/heap/tiny/allocs:objects"}, {Name: "/gc/heap/allocs:bytes"}}
	before := d.dev.Stats()
	runtime.GC()
	metrics.Read(samples)
	objs0, bytes0 := samples[0].Value.Uint64()+samples[1].Value.Uint64(), samples[2].Value.Uint64()
	start := time.Now()
	var loss float32
	for i := 0; i < calls; i++ {
		l, err := d.Decode(hidden, T, targets, tokens, probs)
		if err != nil {
			return Measurement{}, fmt.Errorf("measuring decode: call %d: %w", i, err)
		}
		loss = l
	}
	secs := time.Since(start).Seconds()
	runtime.GC()
	metrics.Read(samples)
	after := d.dev.Stats()
	n := float64(calls * T)
	return Measurement{
		Mode: d.mode.String(), Device: d.dev.Name(), T: T, C: d.C, V: d.V,
		Calls: calls, Tokens: calls * T,
		Seconds:            secs,
		TokensPerSecond:    n / secs,
		SyncsPerToken:      float64(after.Syncs-before.Syncs) / n,
		LaunchesPerToken:   float64(after.Launches-before.Launches) / n,
		HostAllocsPerToken: float64(samples[0].Value.Uint64()+samples[1].Value.Uint64()-objs0) / n,
		HostBytesPerToken:  float64(samples[2].Value.Uint64()-bytes0) / n,
		H2DBytesPerToken:   float64(after.H2DBytes-before.H2DBytes) / n,
		D2HBytesPerToken:   float64(after.D2HBytes-before.D2HBytes) / n,
		DeviceBytesPeak:    after.DeviceBytesPeak,
		Loss:               loss,
	}, nil
}
