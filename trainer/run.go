package trainer

import (
	"context"
	"runtime/metrics"
	"time"
)

// StepStats is what one optimizer step cost.
type StepStats struct {
	Step            int           `json:"step"`
	Loss            float32       `json:"loss"`
	Duration        time.Duration `json:"duration_ns"`
	HeapAllocObjs   uint64        `json:"heap_allocs_objects"`
	HeapAllocBytes  uint64        `json:"heap_allocs_bytes"`
	TokensPerSecond float64       `json:"tokens_per_sec"`
}

// allocCounter reads the process-wide allocation counters. It sees every
// goroutine (testing.AllocsPerRun sees only its own), which is what a worker
// pool needs. Its sample slice is reused, so reading allocates nothing.
type allocCounter struct{ s []metrics.Sample }

func newAllocCounter() *allocCounter {
	return &allocCounter{s: []metrics.Sample{
		{Name: "/gc/heap/allocs:objects"},
		{Name: "/gc/heap/allocs:bytes"},
	}}
}

func (a *allocCounter) read() (objs, bytes uint64) {
	metrics.Read(a.s)
	return a.s[0].Value.Uint64(), a.s[1].Value.Uint64()
}

// Train runs steps optimizer steps, calling onStep after each (it may be
// nil). It stops early, returning ctx.Err(), when ctx is cancelled.
func (t *Trainer) Train(ctx context.Context, steps int, onStep func(StepStats)) ([]StepStats, error) {
	out := make([]StepStats, 0, steps)
	ac := newAllocCounter()
	tokens := float64(t.cfg.Batch * t.cfg.Context)
	for i := 0; i < steps; i++ {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		o0, b0 := ac.read()
		start := time.Now()
		loss := t.Step()
		d := time.Since(start)
		o1, b1 := ac.read()
		s := StepStats{Step: t.step, Loss: loss, Duration: d, HeapAllocObjs: o1 - o0, HeapAllocBytes: b1 - b0,
			TokensPerSecond: tokens / d.Seconds()}
		out = append(out, s)
		if onStep != nil {
			onStep(s)
		}
	}
	return out, nil
}
