package trainer

import (
	"fmt"
	"sync"
	"sync/atomic"

	"memprobe/ledger"
	"memprobe/trainer/model"
	"memprobe/trainer/tape"
)

// The tape engine (Options.Engine "tape"): package trainer/tape runs each
// sequence op by op, its temporaries from an Allocator, instead of
// model.Forward and model.Backward over a preallocated workspace. The
// workers, the executors (which then hold only their token buffers), the
// ordered turnstile and the optimizer are the static engine's.

type tapeEngine struct {
	t     *Trainer
	opts  tape.Options
	alloc tape.Allocator
	loop  *tape.ArenaLoop // nil with the heap allocator

	inFlight []*tape.Graph // (executors) the graph between forward and backward
	built    atomic.Int64

	mu      sync.Mutex
	history []*tape.Graph // Tape.KeepGraphs: every graph, never released
}

// newTapeEngine makes the allocator the options name. An arena's chunk
// holds one sequence's activations (model.Config.ActsSize floats): the
// size of the largest group of tensors a sequence's forward makes.
func newTapeEngine(t *Trainer, executors int) (*tapeEngine, error) {
	o := t.opts.Tape
	e := &tapeEngine{t: t, opts: tape.Options{OneHotEmbedding: o.OneHotEmbedding}, inFlight: make([]*tape.Graph, executors)}
	switch o.Allocator {
	case "", "arena":
		order := tape.ResetAtEnd
		if o.ResetBeforeSide {
			order = tape.ResetBeforeSideWork
		}
		a := tape.NewArena(4*t.cfg.ActsSize(), t.opts.Ledger.Account(ledger.Arena))
		e.alloc = a
		e.loop = &tape.ArenaLoop{Arena: a, Order: order, ReleaseEvery: o.FreeChunksEvery}
	case "heap":
		e.alloc = tape.NewHeap(t.opts.Ledger.Account(ledger.Tape))
	default:
		return nil, fmt.Errorf("tape allocator %q: want arena or heap", o.Allocator)
	}
	return e, nil
}

func (e *tapeEngine) forward(x *executor) (float32, error) {
	gr, loss := tape.Forward(e.t.gemm, e.t.cfg, x.params, x.in, x.tg, e.alloc, e.opts)
	e.inFlight[x.id] = gr
	e.built.Add(1)
	return loss, nil
}

func (e *tapeEngine) backward(x *executor, grads *model.Params, dloss float32) error {
	gr := e.inFlight[x.id]
	if gr == nil {
		return fmt.Errorf("engine tape: executor %d has no graph to run backward on", x.id)
	}
	e.inFlight[x.id] = nil
	gr.Backward(grads, dloss, &x.turn)
	if e.t.opts.Tape.KeepGraphs {
		e.mu.Lock()
		e.history = append(e.history, gr)
		e.mu.Unlock()
		return nil
	}
	gr.Release()
	return nil
}

func (e *tapeEngine) generate(prompt []uint16, n int, seed uint64) []uint16 {
	return tape.Sample(e.t.gemm, e.t.cfg, e.t.Param, prompt, n, seed, e.alloc, e.opts)
}

// stage copies the parameters and moments into one buffer from the tape's
// allocator (tape.StageCheckpoint), as note 002's checkpoint did.
func (e *tapeEngine) stage(params, m, v []float32) ([]float32, []float32, []float32) {
	P := len(params)
	buf := tape.StageCheckpoint(e.alloc, params, m, v)
	return buf[:P:P], buf[P : 2*P : 2*P], buf[2*P:]
}

func (e *tapeEngine) iteration(step, side func()) {
	if e.loop != nil {
		e.loop.Iteration(step, side)
		return
	}
	step()
	side()
}

func (e *tapeEngine) graphs() (int64, int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.built.Load(), len(e.history)
}

// close releases the kept graphs (their ledger bytes are freed with a heap
// allocator).
func (e *tapeEngine) close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, gr := range e.history {
		gr.Release()
	}
	e.history = nil
	return nil
}
