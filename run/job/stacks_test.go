package job

import (
	"bytes"
	"runtime"
	"testing"

	"memprobe/instrument/reconcile"
	"memprobe/instrument/rtstats"
	"memprobe/ledger"
	"memprobe/report"
	"memprobe/trainer/osthread"
)

// TestReconcileWorkerStacks starts N pthreads with a known stack size
// through trainer/osthread, the way --worker-stack does, and checks that
// the reconciliation finds all N from their pthread_getattr_np ranges:
// N stacks holding exactly the sizes the C library gave (address space)
// and resident far less than that (memory: the pages the threads touched).
func TestReconcileWorkerStacks(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	if !osthread.Available() {
		t.Skip("built without cgo: no pthreads to start (osthread.ErrNoCgo)")
	}
	const n, size = 8, 1 << 20
	block := make(chan struct{})
	var threads []*osthread.Thread
	defer func() {
		close(block)
		for _, th := range threads {
			th.Join()
		}
	}()
	var reserved, guards int64
	for range n {
		th, err := osthread.Start(size, func() { <-block })
		if err != nil {
			t.Fatal(err)
		}
		threads = append(threads, th)
		reserved += th.StackBytes() // size, or a cached stack up to 4 × size
		guards += th.GuardBytes()
	}
	in := &instruments{}
	g, err := reconcile.GatherSelf(rtstats.New(), ledger.New(), true)
	if err != nil {
		t.Fatal(err)
	}
	r := reconcile.Compute(in.prepare(g))
	var table bytes.Buffer
	report.WriteReconciliation(&table, r)
	t.Logf("%d threads of %d bytes:\n%s", n, size, table.String())

	// Each thread's range, as pthread_getattr_np gave it, is a stack of
	// its own in the reconciliation.
	byLo := map[uint64]reconcile.ThreadStack{}
	for _, s := range r.ThreadStacks {
		if s.Source == "pthread_getattr_np" {
			byLo[s.Lo] = s
		}
	}
	var resident int64
	for _, th := range threads {
		lo, hi := th.StackRange()
		s, ok := byLo[uint64(lo)]
		if !ok || s.Hi != uint64(hi) || s.ReservedBytes != int64(hi-lo) || s.GuardBytes != th.GuardBytes() {
			t.Errorf("thread stack %#x-%#x (guard %d): found %+v", lo, hi, th.GuardBytes(), s)
		}
		resident += s.ResidentBytes
	}
	var part reconcile.Part
	for _, p := range r.Parts {
		if p.Name == "stacks.workers" {
			part = p
		}
	}
	// Only this test's threads run from osthread in this process.
	if part.Count != n || part.ReservedBytes != reserved+guards || part.Bytes != resident {
		t.Errorf("stacks.workers %+v: want %d stacks, %d B reserved (%d of guards), %d B resident", part, n, reserved+guards, guards, resident)
	}
	if resident <= 0 || resident*8 > reserved {
		t.Errorf("stacks resident %d B of %d B reserved: want some, and under an eighth", resident, reserved)
	}
}
