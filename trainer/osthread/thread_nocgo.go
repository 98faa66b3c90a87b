//go:build !cgo

package osthread

// Available reports whether Start can create threads (false without cgo).
func Available() bool { return false }

// DefaultStackBytes is 0 without cgo: no C library to ask.
func DefaultStackBytes() int64 { return 0 }

// Thread is an OS thread running one Go function; without cgo there is none.
type Thread struct{}

// Start returns ErrNoCgo: this binary was built without cgo.
func Start(stackBytes int64, fn func()) (*Thread, error) { return nil, ErrNoCgo }

// StackBytes is 0.
func (t *Thread) StackBytes() int64 { return 0 }

// Join returns nil.
func (t *Thread) Join() error { return nil }

// StackRange is 0, 0.
func (t *Thread) StackRange() (lo, hi uintptr) { return 0, 0 }

// GuardBytes is 0.
func (t *Thread) GuardBytes() int64 { return 0 }
