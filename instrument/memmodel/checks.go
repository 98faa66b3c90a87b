package memmodel

import (
	"fmt"

	"memprobe/ledger"
)

// The checks below close the model's two blind spots: a figure the model
// took from the trainer (the executor count) agrees with itself however
// wrong it is, and memory the trainer makes without the ledger is in no
// row at all.

// Executors is the number of workspaces the configuration asks for, and
// the formula that gave it: one per worker with
// Pathology.ContextWorkspaces; else Config.Executors, at most B; else
// min(threads, GOMAXPROCS, B), at least 1. gomaxprocs is the run's, as the
// result records it (below 1 counts as 1).
//
// It is deliberately the model's own computation, written from the
// trainer's documented contract (trainer.Options.Executors, package
// trainer's doc) and not a call into the trainer: the job compares it with
// the count the trainer made (CheckExecutors), so a trainer that makes one
// workspace too many is a finding instead of a prediction that follows it.
func Executors(in Input) (int, string) {
	c := in.Config
	B := c.Model.Batch
	switch {
	case c.Pathology.ContextWorkspaces:
		return c.Threads, fmt.Sprintf("one per worker context: threads %d", c.Threads)
	case c.Executors > 0:
		return min(c.Executors, B), fmt.Sprintf("min(executors %d, B %d)", c.Executors, B)
	}
	procs := max(1, in.GOMAXPROCS)
	return max(1, min(c.Threads, procs, B)), fmt.Sprintf("min(threads %d, GOMAXPROCS %d, B %d)", c.Threads, procs, B)
}

// ExecutorsComponent names the executor-count row of CheckExecutors.
const ExecutorsComponent = "executors"

// CheckExecutors compares made, the number of workspaces the trainer
// built, with Executors(in). On a mismatch it returns a finding row (no
// bytes: the workspaces' rows carry them) whose note gives both counts;
// otherwise ok is false and the row is zero.
func CheckExecutors(in Input, made int) (r Row, ok bool) {
	want, formula := Executors(in)
	if made == want {
		return Row{}, false
	}
	return Row{Component: ExecutorsComponent, Formula: fmt.Sprintf("%d = %s", want, formula), Finding: true,
		Note: fmt.Sprintf("the trainer made %d executors, the configuration gives %d = %s", made, want, formula)}, true
}

// GoHeapBytes sums what the ledger's accounts hold on the Go heap: every
// account but the worker stacks (pthread stacks, mapped by the C library)
// and, on a device other than the cpu, the device's buffers (device
// memory). device is Config.Device ("" is the cpu).
func GoHeapBytes(entries []ledger.Entry, device string) int64 {
	var t int64
	for _, e := range entries {
		if e.Component == ledger.WorkerStacks || (e.Component == ledger.DeviceBuffers && device != "" && device != "cpu") {
			continue
		}
		t += e.CurrentBytes
	}
	return t
}

// UnaccountedComponent names the row of UnaccountedHeap.
const UnaccountedComponent = "go.heap.unaccounted"

// UnaccountedMinBytes and UnaccountedRSSFraction make the threshold of
// UnaccountedHeap: max(8 MiB, 5 % of RSS). Below it sit the process's
// small Go objects no account holds (the trainer's structs, the
// instruments' samples and result, the runtime's own): 1 to 3 MiB at the
// tiny and seed presets.
const (
	UnaccountedMinBytes    = 8 << 20
	UnaccountedRSSFraction = 0.05
)

// UnaccountedThreshold is max(UnaccountedMinBytes, UnaccountedRSSFraction
// × rssBytes).
func UnaccountedThreshold(rssBytes int64) int64 {
	return max(UnaccountedMinBytes, int64(UnaccountedRSSFraction*float64(rssBytes)))
}

// UnaccountedHeap compares the Go heap's live objects (heapBytes: runtime
// metric /memory/classes/heap/objects:bytes read right after a GC, so that
// it holds no garbage) with what the ledger's Go-heap accounts hold
// (ledgerBytes, GoHeapBytes). Go heap no account holds, above
// UnaccountedThreshold(rssBytes), is a buffer the trainer made without the
// ledger: the row is a finding naming the bytes, and ok is true.
// Otherwise ok is false and the row is zero.
func UnaccountedHeap(heapBytes, ledgerBytes, rssBytes int64) (r Row, ok bool) {
	extra, limit := heapBytes-ledgerBytes, UnaccountedThreshold(rssBytes)
	if extra <= limit {
		return Row{}, false
	}
	return Row{Component: UnaccountedComponent, MeasuredBytes: extra, PeakBytes: extra, Finding: true,
		Formula: "live Go heap objects after a GC − the ledger's Go-heap accounts",
		Note: fmt.Sprintf("%d B of live Go heap (of %d B) are in no ledger account, above max(%d MiB, %g%% of RSS %d B): a buffer made without the ledger",
			extra, heapBytes, UnaccountedMinBytes>>20, 100*UnaccountedRSSFraction, rssBytes)}, true
}
