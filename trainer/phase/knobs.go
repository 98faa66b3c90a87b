package phase

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The knobs below are the single switches `probe train` exposes beside
// --plan/--phase, for sweeps. These functions parse a flag's text; the
// ranges are checked once, by trainer.Options.Validate.

// ParseBytes reads a byte count: a whole number with an optional binary
// suffix, KiB, MiB or GiB (also K, M, G; case-insensitive).
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	lower := strings.ToLower(t)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}} {
		if strings.HasSuffix(lower, u.suffix) {
			t, mult = strings.TrimSpace(t[:len(t)-len(u.suffix)]), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a byte count (want a whole number, optionally with KiB, MiB or GiB)", s)
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return n * mult, nil
}

// WorkerStack reads --worker-stack: 0 (goroutine workers) or a stack size.
// Its range is trainer.Options.Validate's to check, with the others.
func WorkerStack(s string) (int64, error) {
	n, err := ParseBytes(s)
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
