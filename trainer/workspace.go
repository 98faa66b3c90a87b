package trainer

// Workspaces: the executors (or worker contexts) that own one sequence's
// memory, made through the ledger and dropped through it.

import (
	"runtime"

	"memprobe/ledger"
	"memprobe/trainer/model"
)

// executor owns the workspace of one sequence in flight: an executor of
// the pool (the fixed state) or the workspace of a worker context
// (Pathology.ContextWorkspaces).
type executor struct {
	id    int
	acts  *model.Acts
	grads *model.GradActs
	turn  seqTurnstile

	// The caches (Pathology): each slice is the whole buffer, headroom
	// included; the model reads only its first, right-sized part.
	attCache  []float32 // acts.Att and its headroom (nil when right-sized)
	gradCache []float32 // grads.Memory and its headroom
	embCache  []float32 // copy of wte and headroom (nil: params is t.Param)
	params    *model.Params
	version   uint64 // t.version when the caches were last cleared and refreshed

	in, tg []uint16 // (T) the sequence being run, read from the batch
	head   *decodeHead
	// sequences counts the sequences this workspace has run; one worker
	// holds it at a time (the pool or its context), so a plain count.
	sequences int64

	actsMem []float32        // the activations and the attention cache's headroom, as made
	accts   executorAccounts // where each buffer is counted
}

// executorAccounts are the ledger accounts of one workspace's buffers.
type executorAccounts struct {
	batches, acts, cacheAtt, gacts, cacheEmb *ledger.Account
}

// workerContext is a sphere of the notes' hierarchy: a worker's context
// owning its workspace. worker is -1 for a context no worker uses.
type workerContext struct {
	id, level, worker int
	exec              *executor
}

// numExecutors is the size of the executor pool: min(Threads, GOMAXPROCS,
// Batch), or Options.Executors (at most Batch) when it is set.
func (t *Trainer) numExecutors() int {
	if t.opts.Executors > 0 {
		return min(t.opts.Executors, t.cfg.Batch) + plant.extraExecutors
	}
	return max(1, min(t.opts.Threads, runtime.GOMAXPROCS(0), t.cfg.Batch)) + plant.extraExecutors
}

// newExecutor allocates one sequence workspace. A context's workspace is
// written through at once (touch), as the notes' C code memset its
// buffers; unused counts it under ledger.WorkerContexts. Every buffer is
// made through ledger.Make on the account that owns it, so the ledger
// holds the sizes actually made.
func (t *Trainer) newExecutor(id int, touch, unused bool) *executor {
	cfg, l := t.cfg, t.layout
	e := &executor{id: id, params: t.Param}
	e.turn.slots = t.turns
	e.accts = t.executorAccounts(unused)

	e.in = ledger.Make[uint16](e.accts.batches, cfg.Context)
	e.tg = ledger.Make[uint16](e.accts.batches, cfg.Context)
	if t.opts.Engine == "tape" {
		return e // the tape allocates each sequence's tensors itself
	}

	// Activations, with the attention cache's headroom after them. The
	// attention probabilities (Acts.Att) belong to the activations when
	// right-sized and to the attention cache when over-sized.
	att := cfg.Layers * cfg.Heads * cfg.Context * cfg.Context
	headroom := max(0, l.attCache-att)
	e.actsMem = ledger.Make[float32](nil, l.acts+headroom+plant.oversizeActs) // charged below, by share
	e.acts = model.NewActs(cfg, e.actsMem[:l.acts])
	if l.attCache > 0 {
		e.attCache = e.actsMem[l.acts : l.acts+headroom] // headroom; Att itself is cleared separately
	}
	actsBytes, cacheBytes := e.actsShares()
	e.accts.acts.Alloc(actsBytes)
	e.accts.cacheAtt.Alloc(cacheBytes)

	gacts := cfg.GradActsSize()
	e.gradCache = ledger.Make[float32](e.accts.gacts, l.grads)
	e.grads = model.NewGradActs(cfg, e.gradCache[:gacts])

	if l.emb > 0 {
		e.embCache = ledger.Make[float32](e.accts.cacheEmb, l.emb)
		p := *t.Param
		p.WTE = e.embCache[: cfg.Vocab*cfg.Dim : cfg.Vocab*cfg.Dim]
		e.params = &p
	}

	if touch {
		clear(e.actsMem)
		clear(e.gradCache)
		clear(e.embCache)
	}
	return e
}

// actsShares splits the activation buffer as made between the components
// that own it: the attention cache, when over-sized, holds the attention
// probabilities (Acts.Att) and the headroom after the activations; the
// activations hold the rest. Both are measured on the slices themselves.
func (e *executor) actsShares() (acts, cache int64) {
	if e.attCache != nil {
		cache = ledger.LenBytes(e.acts.Att) + ledger.LenBytes(e.attCache)
	}
	return ledger.SliceBytes(e.actsMem) - cache, cache
}

// executorAccounts are the accounts a workspace's buffers are charged to:
// the components' own, or ledger.WorkerContexts for a context no worker
// uses. The backward workspace is the backward cache when over-sized.
func (t *Trainer) executorAccounts(unused bool) executorAccounts {
	a := executorAccounts{batches: t.acct.batches, acts: t.acct.acts, cacheAtt: t.acct.cacheAtt, gacts: t.acct.gacts, cacheEmb: t.acct.cacheEmb}
	if t.layout.grads > t.cfg.GradActsSize() {
		a.gacts = t.acct.cacheBwd
	}
	if unused {
		c := t.acct.contexts
		a = executorAccounts{c, c, c, c, c}
	}
	return a
}

// dropExecutor records that e's buffers are no longer held, on the
// accounts newExecutor charged them to.
func (t *Trainer) dropExecutor(e *executor) {
	a := e.accts
	ledger.Drop(a.batches, e.in)
	ledger.Drop(a.batches, e.tg)
	if e.actsMem != nil {
		actsBytes, cacheBytes := e.actsShares()
		a.acts.Free(actsBytes)
		a.cacheAtt.Free(cacheBytes)
		ledger.Drop(a.gacts, e.gradCache)
	}
	if e.embCache != nil {
		ledger.Drop(a.cacheEmb, e.embCache)
	}
	e.actsMem, e.gradCache, e.embCache, e.attCache = nil, nil, nil, nil
}

// newContexts makes the worker contexts: one per worker, or the whole
// sphere hierarchy (root first, then level by level) with the workers on
// the contexts after the root.
func (t *Trainer) newContexts() {
	n, first := t.opts.Threads, 0
	if t.opts.Pathology.SphereHierarchy {
		n, first = HierarchySize(t.opts.Threads), 1
	}
	t.contexts = make([]*workerContext, n)
	t.execs = make([]*executor, t.opts.Threads)
	level, levelEnd, width := 0, 1, 1
	if !t.opts.Pathology.SphereHierarchy {
		levelEnd = n
	}
	for i := range t.contexts {
		if i == levelEnd {
			level++
			width *= KissingNumber
			levelEnd += width
		}
		c := &workerContext{id: i, level: level, worker: -1}
		w := i - first
		if w >= 0 && w < t.opts.Threads {
			c.worker = w
			c.exec = t.newExecutor(w, true, false)
			t.execs[w] = c.exec
		} else {
			c.exec = t.newExecutor(-1, true, true)
		}
		t.contexts[i] = c
	}
}
