package trainer

import (
	"context"
	"runtime/pprof"
	"strconv"
)

// stage is what a worker is doing, as a pprof label ("stage"), so that a
// CPU or goroutine profile splits the workers' time by stage.
type stage int

const (
	stageIdle      stage = iota // waiting for work: no stage label
	stageData                   // filling and reading batches
	stageForward                // forward pass (model lock held, if any)
	stageBackward               // backward pass
	stageReduce                 // gradient-norm chunk sums
	stageOptimizer              // AdamW update
	stageSide                   // cache clears and refreshes, sample and checkpoint side work
	numStages
)

var stageNames = [numStages]string{"", "data", "forward", "backward", "reduce", "optimizer", "side"}

// workerLabels are one worker's label contexts, built once when the worker
// starts. A stage switch is then pprof.SetGoroutineLabels(ctx), which
// allocates nothing; pprof.Do would build a new context (and label set) on
// every call, which breaks the fixed trainer's zero allocations per step.
// The labels are "worker" (the worker's id) and "stage".
type workerLabels [numStages]context.Context

func newWorkerLabels(worker int) *workerLabels {
	var l workerLabels
	base := pprof.WithLabels(context.Background(), pprof.Labels("worker", strconv.Itoa(worker)))
	for s := range numStages {
		if s == stageIdle {
			l[s] = base
			continue
		}
		l[s] = pprof.WithLabels(base, pprof.Labels("stage", stageNames[s]))
	}
	return &l
}

// set labels the calling goroutine with stage s.
func (l *workerLabels) set(s stage) { pprof.SetGoroutineLabels(l[s]) }
