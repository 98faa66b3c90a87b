// Package osthread runs a Go function for the whole life of an OS thread
// that the C library creates with a stack size of the caller's choosing.
//
// It exists to reproduce design note 000's first phase on the real
// mechanism: the note's trainer made one pthread per worker with the C
// library's default stack (8 MiB on glibc, from RLIMIT_STACK) and claimed
// that 65 threads × 8 MiB cost 520 MB of memory. A Go goroutine has no such
// stack, so to measure the claim the trainer can run each logical worker on
// a thread from Start: pthread_create with pthread_attr_setstacksize, the
// thread calls back into Go (an exported function), and the callback runs
// the worker's loop until the loop returns, after which the thread exits.
//
// Where the stack goes: the pthread's stack becomes the Go runtime's system
// stack (g0) for that thread, the one cgo calls such as OpenBLAS's sgemm run
// on; the worker's Go code runs on an ordinary, growable goroutine stack.
// The pthread stack is a reservation of address space (VSZ); only the pages
// a thread touches become resident (RSS). Thread.StackBytes reports the size
// the C library actually gave (pthread_getattr_np), which the trainer
// records in the ledger as reserved, not resident, memory; Thread.StackRange
// and Stacks say where each running thread's stack is, so that the probe's
// reconciliation can measure what of it is resident (/proc/self/smaps).
//
// Without cgo (CGO_ENABLED=0) Start returns ErrNoCgo.
package osthread

import "errors"

// MinStackBytes and MaxStackBytes bound the stack size Start accepts. The
// lower bound leaves room for the Go runtime's cgo callback; the C library
// may still refuse a small stack that cannot also hold the thread's static
// TLS (a binary that links OpenBLAS needs more than 64 KiB: its TLS alone is
// 60 KiB), and Start says so. The upper bound keeps a typo from reserving
// terabytes.
const (
	MinStackBytes = 64 << 10
	MaxStackBytes = 1 << 30
)

// ErrNoCgo is returned by Start in a binary built without cgo.
var ErrNoCgo = errors.New("worker stacks: this binary was built without cgo; --worker-stack is unavailable")
