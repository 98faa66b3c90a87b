package trainer

import (
	"context"
	"time"
)

// StepStats is what one optimizer step cost. The trainer only times its
// steps; what a step allocates is the probe's to measure (run/job).
type StepStats struct {
	Step            int           `json:"step"`
	Loss            float32       `json:"loss"`
	Duration        time.Duration `json:"duration_ns"`
	TokensPerSecond float64       `json:"tokens_per_sec"`
}

// Train runs steps optimizer steps, calling onStep after each (it may be
// nil). It stops early, returning ctx.Err(), when ctx is cancelled.
func (t *Trainer) Train(ctx context.Context, steps int, onStep func(StepStats)) ([]StepStats, error) {
	out := make([]StepStats, 0, steps)
	tokens := float64(t.cfg.Batch * t.cfg.Context)
	for i := 0; i < steps; i++ {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		start := time.Now()
		loss := t.Step()
		d := time.Since(start)
		s := StepStats{Step: t.step, Loss: loss, Duration: d, TokensPerSecond: tokens / d.Seconds()}
		out = append(out, s)
		if onStep != nil {
			onStep(s)
		}
	}
	return out, nil
}
