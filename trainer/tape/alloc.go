package tape

import "memprobe/ledger"

// Allocator hands out the float32 tensors of a graph: forward outputs and
// the caches backward reads, then, during Backward, the gradients and the
// backward scratch. Float32s returns a zeroed slice of exactly n elements.
// An Allocator must be safe for concurrent use when graphs are built
// concurrently (the trainer runs several executors).
type Allocator interface {
	Float32s(n int) []float32
}

// Freer is implemented by allocators that account for each tensor on its
// own (Heap). Graph.Release passes every slice the graph obtained to Free.
// Allocators without it (Arena) reclaim memory only in bulk.
type Freer interface {
	Free(s []float32)
}

// Heap allocates every tensor with make and counts it in a ledger account
// (ledger.Tape): Alloc when the tensor is made, Free when the graph that
// holds it is released. The account's current bytes are the bytes of the
// graphs not yet released, so a training loop that keeps its graphs (design
// note 004: "computation graphs accumulate across batches") shows as an
// account that grows by one graph per step.
type Heap struct {
	acct *ledger.Account
}

// NewHeap returns a heap allocator counting into acct (nil counts nothing).
func NewHeap(acct *ledger.Account) *Heap { return &Heap{acct: acct} }

// Float32s implements Allocator.
func (h *Heap) Float32s(n int) []float32 { return h.acct.Float32s(n) }

// Free implements Freer: it records that s no longer counts. The memory
// itself goes back to the Go heap when the last reference to it is dropped.
func (h *Heap) Free(s []float32) { h.acct.FreeFloat32s(s) }
