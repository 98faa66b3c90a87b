package phase

import (
	"fmt"

	"memprobe/trainer/data"
)

// The knobs below are the single switches `probe train` exposes beside
// --plan/--phase, for sweeps. These functions parse a flag's text; the
// ranges are checked once, by trainer.Options.Validate.

// WorkerStack reads --worker-stack: 0 (goroutine workers) or a stack size
// in data.ParseSize's units, the same as every other size flag (96KiB,
// 8MiB, 1MB). Its range is trainer.Options.Validate's to check, with the
// others.
func WorkerStack(s string) (int64, error) {
	n, err := data.ParseSize(s)
	if err != nil {
		return 0, fmt.Errorf("--worker-stack: %w", err)
	}
	return n, nil
}

// BatchAlloc reads --batch-alloc: eager (every batch of an epoch up front)
// or lazy (one batch, refilled each step). It returns EagerBatches.
func BatchAlloc(s string) (eager bool, err error) {
	switch s {
	case "eager":
		return true, nil
	case "lazy":
		return false, nil
	}
	return false, fmt.Errorf("--batch-alloc %q: want eager or lazy", s)
}
