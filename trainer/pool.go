package trainer

// The executor pool, granting workspaces in sequence order, and the
// per-slot turnstile that adds gradients in sequence order.

import (
	"sync"
	"sync/atomic"
)

// execPool grants executors to sequences in sequence order, so that the
// lowest unfinished sequence always holds an executor and the turnstile
// cannot deadlock.
type execPool struct {
	mu   sync.Mutex
	cond sync.Cond
	next int
	free []*executor
}

func (p *execPool) init(execs []*executor) {
	p.cond.L = &p.mu
	p.free = make([]*executor, 0, len(execs))
	for i := len(execs) - 1; i >= 0; i-- {
		p.free = append(p.free, execs[i])
	}
}

func (p *execPool) reset() { p.next = 0 }

func (p *execPool) acquire(seq int) *executor {
	p.mu.Lock()
	for p.next != seq || len(p.free) == 0 {
		p.cond.Wait()
	}
	e := p.free[len(p.free)-1]
	p.free = p.free[:len(p.free)-1]
	p.next++
	p.mu.Unlock()
	p.cond.Broadcast()
	return e
}

func (p *execPool) release(e *executor) {
	p.mu.Lock()
	p.free = append(p.free, e)
	p.mu.Unlock()
	p.cond.Broadcast()
}

// seqTurnstile is an executor's view of the shared per-slot turns: sequence
// seq may enter a slot once the slot's turn is seq.
type seqTurnstile struct {
	slots *turnSlots
	seq   int32
}

// turnSlots are the turns of every gradient slot. A sequence whose turn has
// not come sleeps on the slot's condition variable instead of spinning:
// with 63 workers on pthreads (Pathology.ContextWorkspaces) dozens of
// sequences wait at once, and spinners would take the cores from the one
// sequence they all wait for.
type turnSlots struct {
	turns   []atomic.Int32
	waiters []atomic.Int32
	mu      []sync.Mutex
	cond    []sync.Cond
}

func newTurnSlots(n int) *turnSlots {
	s := &turnSlots{turns: make([]atomic.Int32, n), waiters: make([]atomic.Int32, n), mu: make([]sync.Mutex, n), cond: make([]sync.Cond, n)}
	for i := range s.cond {
		s.cond[i].L = &s.mu[i]
	}
	return s
}

// reset gives every slot to sequence 0; no sequence may be waiting.
func (s *turnSlots) reset() {
	for i := range s.turns {
		s.turns[i].Store(0)
	}
}

func (s *seqTurnstile) Enter(slot int) {
	sl := s.slots
	if sl.turns[slot].Load() == s.seq {
		return
	}
	sl.mu[slot].Lock()
	sl.waiters[slot].Add(1)
	for sl.turns[slot].Load() != s.seq {
		sl.cond[slot].Wait()
	}
	sl.waiters[slot].Add(-1)
	sl.mu[slot].Unlock()
}

// Leave passes the slot to the next sequence. The waiter count is read
// after the turn is stored and raised under the slot's lock before the
// waiter's last look at the turn, so a wake-up is never lost.
func (s *seqTurnstile) Leave(slot int) {
	sl := s.slots
	sl.turns[slot].Store(s.seq + 1)
	if sl.waiters[slot].Load() > 0 {
		sl.mu[slot].Lock()
		sl.mu[slot].Unlock()
		sl.cond[slot].Broadcast()
	}
}
