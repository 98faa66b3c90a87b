package rtstats

import (
	"fmt"

	"memprobe/schema"
)

// SteadyState is the per-step cost of a loop once warm-up is over
// (schema.SteadyState).
type SteadyState = schema.SteadyState

// Steady derives per-step costs from snapshots taken around a loop:
// snaps[0] before step 1 and snaps[k] after step k. The first warmup steps
// are left out; at least one step must remain.
func Steady(snaps []Snapshot, warmup int) (SteadyState, error) {
	if warmup < 0 {
		return SteadyState{}, fmt.Errorf("steady state: negative warm-up %d", warmup)
	}
	steps := len(snaps) - 1 - warmup
	if steps < 1 {
		return SteadyState{}, fmt.Errorf("steady state: %d snapshots leave no step after %d warm-up steps", len(snaps), warmup)
	}
	first, last := snaps[warmup], snaps[len(snaps)-1]
	d := Delta(first, last)
	st := SteadyState{
		Steps:                steps,
		WarmupSteps:          warmup,
		AllocsPerStepObjects: float64(d.HeapAllocsObjects) / float64(steps),
		AllocsPerStepBytes:   float64(d.HeapAllocsBytes) / float64(steps),
		GCCycles:             d.GCCycles,
		GCPauseTotalNs:       d.GCPauseTotalNs,
	}
	for i := warmup + 1; i < len(snaps); i++ {
		n := snaps[i].HeapAllocsObjects - snaps[i-1].HeapAllocsObjects
		if i == warmup+1 || n < st.MinStepAllocsObjects {
			st.MinStepAllocsObjects = n
		}
		if i == warmup+1 || n > st.MaxStepAllocsObjects {
			st.MaxStepAllocsObjects = n
		}
	}
	return st, nil
}
