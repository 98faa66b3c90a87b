package trainer

import (
	"sync"
	"sync/atomic"
)

// modelLock is the notes' model_lock: one lock around a sequence's forward
// and backward, so one sequence runs at a time whatever the number of
// workers. It is a ticket lock granted in sequence order: a plain mutex
// would let sequence b+1 in before b, and b+1 would then wait in the
// gradient turnstile for b, which waits for the lock — a deadlock. In order,
// the holder is always the lowest unfinished sequence, its turnstile never
// waits, and the sum, so the loss, is the unlocked trainer's bit for bit.
type modelLock struct {
	mu    sync.Mutex
	cond  sync.Cond
	next  int
	holds atomic.Int64
}

func newModelLock() *modelLock {
	l := &modelLock{}
	l.cond.L = &l.mu
	return l
}

// reset starts a step: sequence 0 is next.
func (l *modelLock) reset() { l.next = 0 }

// lock waits until every sequence before seq has unlocked.
func (l *modelLock) lock(seq int) {
	l.mu.Lock()
	for l.next != seq {
		l.cond.Wait()
	}
	l.mu.Unlock()
	l.holds.Add(1)
}

func (l *modelLock) unlock() {
	l.mu.Lock()
	l.next++
	l.mu.Unlock()
	l.cond.Broadcast()
}
