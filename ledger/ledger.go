// Package ledger counts what the trainer holds, by component.
//
// Every long-lived buffer of the trainer is made through Make (or, for
// memory Go does not allocate, such as a pthread stack or a device buffer,
// recorded with Alloc at the call that made it), under an Account named
// after the component that owns it (params, grads, adam.m, ...), and
// dropped through Drop (or Free) where the owner lets it go. The ledger
// records what was really made: the capacity of the slice that make
// returned, times its element size, not a size computed from a formula. So
// it is a measurement, and the "actual" column of the design notes'
// expected-vs-actual table; the analytical model in instrument/memmodel, which
// computes sizes from the configuration alone, is the "expected" one. A
// buffer made larger than needed, made twice or never dropped shows as a
// difference between the two.
//
// Accounts are created at set-up (which takes a lock, once per name); the
// step loop only touches an Account, whose updates are atomic adds. A nil
// *Ledger and a nil *Account are valid and count nothing, which is how the
// instruments are switched off.
package ledger

import (
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Component names the trainer uses. Other names are allowed; these are the
// ones the analytical model knows how to predict.
const (
	Params          = "params"
	Grads           = "grads"
	AdamM           = "adam.m"
	AdamV           = "adam.v"
	Activations     = "activations"
	ActivationGrads = "activation_grads"
	CacheAttention  = "cache.attention"
	CacheBackward   = "cache.backward"
	CacheEmbedding  = "cache.embedding"
	Batches         = "batches"
	DatasetTokens   = "dataset.tokens"
	WorkerContexts  = "worker.contexts"
	WorkerStacks    = "worker.stacks"
	Arena           = "arena"
	Tape            = "tape"
	DeviceBuffers   = "device.buffers"
	StepSums        = "step.sums"   // per-sequence losses and gradient-norm chunk sums
	DecodeHost      = "decode.host" // a decode head's host buffers (Go heap)
)

// Ledger holds one Account per component name.
type Ledger struct {
	mu       sync.Mutex
	accounts map[string]*Account
}

// New returns an empty ledger.
func New() *Ledger { return &Ledger{accounts: map[string]*Account{}} }

// Account counts the bytes one component holds now and at its peak.
type Account struct {
	name    string
	current atomic.Int64
	peak    atomic.Int64
	allocs  atomic.Int64
	frees   atomic.Int64
}

// Account returns the account for name, creating it on first use. Call it at
// set-up, not in the step loop: it takes the ledger's lock.
func (l *Ledger) Account(name string) *Account {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	a, ok := l.accounts[name]
	if !ok {
		a = &Account{name: name}
		l.accounts[name] = a
	}
	return a
}

// Name is the component this account counts.
func (a *Account) Name() string {
	if a == nil {
		return ""
	}
	return a.name
}

// Alloc records that the component now holds bytes more. Use it for memory
// that is not a Go slice, with the size the allocator reported; Make for a
// Go buffer.
func (a *Account) Alloc(bytes int64) {
	if a == nil {
		return
	}
	a.allocs.Add(1)
	cur := a.current.Add(bytes)
	for {
		p := a.peak.Load()
		if cur <= p || a.peak.CompareAndSwap(p, cur) {
			return
		}
	}
}

// Free records that the component released bytes.
func (a *Account) Free(bytes int64) {
	if a == nil {
		return
	}
	a.frees.Add(1)
	a.current.Add(-bytes)
}

// Make allocates a zeroed []T of n elements and records, in a, the bytes
// of the slice actually made: cap × the size of T. With a nil a it records
// nothing: the caller charges the buffer's parts to their owners itself.
func Make[T any](a *Account, n int) []T {
	s := make([]T, n)
	a.Alloc(SliceBytes(s))
	return s
}

// Drop records that s, made by Make on a (or recorded with Record), is no
// longer held by a: cap × the size of T. The memory itself goes back to the
// Go heap when the last reference to it is dropped.
func Drop[T any](a *Account, s []T) { a.Free(SliceBytes(s)) }

// Record records that a holds s, a slice made elsewhere (by a package that
// does not know the ledger, such as a loaded dataset): cap × the size of T.
func Record[T any](a *Account, s []T) { a.Alloc(SliceBytes(s)) }

// SliceBytes is the bytes s's backing array holds from its start: cap × the
// size of T.
func SliceBytes[T any](s []T) int64 { return int64(cap(s)) * int64(unsafe.Sizeof(*new(T))) }

// LenBytes is the bytes of s's elements: len × the size of T; for a part
// of a buffer made by Make that belongs to another component.
func LenBytes[T any](s []T) int64 { return int64(len(s)) * int64(unsafe.Sizeof(*new(T))) }

// Float32s is Make[float32](a, n); it lets an Account serve as a tensor
// allocator.
func (a *Account) Float32s(n int) []float32 { return Make[float32](a, n) }

// FreeFloat32s is Drop(a, s).
func (a *Account) FreeFloat32s(s []float32) { Drop(a, s) }

// Current is the number of bytes held now.
func (a *Account) Current() int64 {
	if a == nil {
		return 0
	}
	return a.current.Load()
}

// Peak is the most bytes held at once.
func (a *Account) Peak() int64 {
	if a == nil {
		return 0
	}
	return a.peak.Load()
}

// Entry is one component's counts at the time of a Snapshot.
type Entry struct {
	Component    string `json:"component"`
	CurrentBytes int64  `json:"current_bytes"`
	PeakBytes    int64  `json:"peak_bytes"`
	Allocs       int64  `json:"allocs"`
	Frees        int64  `json:"frees"`
}

// Snapshot returns every account's counts, sorted by component name so that
// reports are deterministic.
func (l *Ledger) Snapshot() []Entry {
	if l == nil {
		return []Entry{}
	}
	l.mu.Lock()
	out := make([]Entry, 0, len(l.accounts))
	for _, a := range l.accounts {
		out = append(out, Entry{a.name, a.current.Load(), a.peak.Load(), a.allocs.Load(), a.frees.Load()})
	}
	l.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Component < out[j].Component })
	return out
}

// TotalCurrentBytes sums the bytes every component holds now.
func (l *Ledger) TotalCurrentBytes() int64 {
	var t int64
	for _, e := range l.Snapshot() {
		t += e.CurrentBytes
	}
	return t
}
