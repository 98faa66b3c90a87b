package tape

import (
	"fmt"
	"sync"

	"memprobe/ledger"
)

// Arena is a chunked bump allocator with one iteration frame. See the
// package documentation for its semantics and the loop it models. It is safe
// for concurrent use; allocations from several goroutines interleave, so
// only the totals (InUseBytes), not the layout, are independent of the
// schedule.
type Arena struct {
	mu          sync.Mutex
	chunkFloats int
	acct        *ledger.Account

	chunks [][]float32 // held chunks, in bump order
	ci     int         // chunk the bump pointer is in (== len(chunks) when none)
	off    int         // bump offset in chunks[ci], in floats
	inUse  int64       // bytes handed out and not rewound

	open  bool // an iteration frame is open
	mark  pos  // where the open frame began
	epoch uint64

	held, peak, peakInUse int64
}

// pos is a bump position and the in-use count there.
type pos struct {
	ci, off int
	inUse   int64
}

// NewArena returns an empty arena whose chunks hold chunkBytes (rounded down
// to whole float32s, at least one); a request larger than a chunk gets a
// chunk of its own size. Chunk bytes are counted in acct (ledger.Arena):
// Alloc when a chunk is made, Free when ReleaseChunks returns it.
func NewArena(chunkBytes int, acct *ledger.Account) *Arena {
	if chunkBytes < 4 {
		panic(fmt.Sprintf("tape: arena chunk of %d bytes is smaller than one float32", chunkBytes))
	}
	return &Arena{chunkFloats: chunkBytes / 4, acct: acct}
}

// Float32s implements Allocator: a zeroed slice of n floats at the bump
// pointer, moving to the next chunk (reusing a held one, or making a new
// one) when n does not fit in the rest of the current chunk. The slice stays
// valid until a Reset or ResetAll rewinds below it.
func (a *Arena) Float32s(n int) []float32 {
	if n < 0 {
		panic(fmt.Sprintf("tape: arena request of %d floats", n))
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for {
		if a.ci < len(a.chunks) {
			ch := a.chunks[a.ci]
			if a.off+n <= len(ch) {
				s := ch[a.off : a.off+n : a.off+n]
				clear(s)
				a.off += n
				a.inUse += int64(n) * 4
				a.peakInUse = max(a.peakInUse, a.inUse)
				return s
			}
			if a.off > 0 || a.ci+1 < len(a.chunks) && len(a.chunks[a.ci+1]) >= n {
				// Skip the rest of this chunk (or an empty chunk too small
				// for n, when the next one fits).
				a.ci++
				a.off = 0
				continue
			}
			// chunks[ci] is empty and too small: put a big enough chunk
			// in front of it.
		}
		a.insertChunk(max(a.chunkFloats, n))
	}
}

// insertChunk makes a chunk of n floats at index ci.
func (a *Arena) insertChunk(n int) {
	ch := ledger.Make[float32](a.acct, n)
	a.chunks = append(a.chunks, nil)
	copy(a.chunks[a.ci+1:], a.chunks[a.ci:])
	a.chunks[a.ci] = ch
	a.off = 0
	a.held += ledger.SliceBytes(ch)
	a.peak = max(a.peak, a.held)
}

// Begin opens the iteration frame at the current bump position. Reset
// rewinds to it. It panics if a frame is already open (frames do not nest).
func (a *Arena) Begin() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.open {
		panic("tape: Arena.Begin with an iteration frame already open")
	}
	a.open = true
	a.mark = pos{a.ci, a.off, a.inUse}
}

// Reset closes the iteration frame and rewinds the bump pointer to where
// Begin opened it: everything allocated since then is reused by the next
// allocations, and memory allocated before Begin is kept. With no frame
// open it rewinds to the start of the arena, like ResetAll. Chunks stay
// held (see ReleaseChunks). Every slice handed out since the rewind point
// is invalid afterwards; graphs over them must have been released (Backward
// panics on a graph whose arena was reset after its Forward).
func (a *Arena) Reset() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.open {
		a.rewind(a.mark)
	} else {
		a.rewind(pos{})
	}
}

// ResetAll closes any frame and rewinds to the start of the arena: the
// caller asserts that nothing allocated from the arena is still in use.
func (a *Arena) ResetAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rewind(pos{})
}

func (a *Arena) rewind(p pos) {
	a.ci, a.off, a.inUse = p.ci, p.off, p.inUse
	a.open = false
	a.epoch++
}

// ReleaseChunks returns to the heap (and to the ledger account) every chunk
// above the bump pointer: the chunks no allocation lies in. Called after
// ResetAll it returns them all.
func (a *Arena) ReleaseChunks() {
	a.mu.Lock()
	defer a.mu.Unlock()
	keep := a.ci + 1
	if a.off == 0 {
		keep = a.ci
	}
	keep = min(keep, len(a.chunks))
	for i := keep; i < len(a.chunks); i++ {
		ledger.Drop(a.acct, a.chunks[i])
		a.held -= ledger.SliceBytes(a.chunks[i])
		a.chunks[i] = nil
	}
	a.chunks = a.chunks[:keep]
}

// HeldBytes is the bytes of the chunks the arena holds now.
func (a *Arena) HeldBytes() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.held
}

// PeakBytes is the most chunk bytes the arena has held at once.
func (a *Arena) PeakBytes() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.peak
}

// InUseBytes is the bytes handed out by Float32s and not yet rewound (the
// chunk tails skipped when a request did not fit are not counted).
func (a *Arena) InUseBytes() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.inUse
}

// PeakInUseBytes is the most InUseBytes at once.
func (a *Arena) PeakInUseBytes() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.peakInUse
}

// Chunks is the number of chunks held now.
func (a *Arena) Chunks() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.chunks)
}

// resets counts the rewinds so that a graph can detect that its memory was
// handed out again.
func (a *Arena) resets() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.epoch
}

// ResetOrder says where ArenaLoop puts the reset point in an iteration.
type ResetOrder int

const (
	// ResetAtEnd resets after the side work, as the last thing in the
	// iteration: design note 002's fix.
	ResetAtEnd ResetOrder = iota
	// ResetBeforeSideWork resets right after the training step, before the
	// side work: design note 002's "before" state.
	ResetBeforeSideWork
)

// String is the flag spelling: "end" or "before".
func (o ResetOrder) String() string {
	switch o {
	case ResetAtEnd:
		return "end"
	case ResetBeforeSideWork:
		return "before"
	}
	return fmt.Sprintf("ResetOrder(%d)", int(o))
}

// ParseResetOrder reads "end" or "before".
func ParseResetOrder(s string) (ResetOrder, error) {
	switch s {
	case "end":
		return ResetAtEnd, nil
	case "before":
		return ResetBeforeSideWork, nil
	}
	return 0, fmt.Errorf("arena reset order %q is not one of: end, before", s)
}

// DefaultReleaseEvery is how often the loop of design note 002 returned its
// arena's chunks: every 10 iterations.
const DefaultReleaseEvery = 10

// ArenaLoop drives the iterations of a training loop whose temporaries live
// in Arena, with the reset point where Order puts it. Each Iteration does
//
//	Arena.Begin()
//	step()                       // forward, backward, optimizer update
//	reset point if ResetBeforeSideWork
//	side()                       // sample generation, checkpoint staging
//	reset point if ResetAtEnd
//
// where the reset point is Arena.Reset(), except on every ReleaseEvery-th
// iteration (0: never) where it is Arena.ResetAll() then
// Arena.ReleaseChunks(). step and side must release the graphs they build
// before the reset point that follows them.
type ArenaLoop struct {
	Arena        *Arena
	Order        ResetOrder
	ReleaseEvery int

	iter int
}

// Iteration runs one iteration (see ArenaLoop). side may be nil.
func (l *ArenaLoop) Iteration(step, side func()) {
	l.iter++
	l.Arena.Begin()
	step()
	if l.Order == ResetBeforeSideWork {
		l.resetPoint()
	}
	if side != nil {
		side()
	}
	if l.Order != ResetBeforeSideWork {
		l.resetPoint()
	}
}

func (l *ArenaLoop) resetPoint() {
	if l.ReleaseEvery > 0 && l.iter%l.ReleaseEvery == 0 {
		l.Arena.ResetAll()
		l.Arena.ReleaseChunks()
		return
	}
	l.Arena.Reset()
}

// Iterations is the number of iterations run so far.
func (l *ArenaLoop) Iterations() int { return l.iter }
