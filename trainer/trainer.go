// Package trainer is the reference trainer: a GPT-2-style decoder (package
// model) trained with AdamW by many logical worker threads over a token
// array (package data), every product through a gemm.Backend.
//
// Concurrency, in the fixed state: a step's B sequences are split over N
// logical workers (sequence b belongs to worker b mod N). A worker runs a
// sequence on an executor, which owns the memory one sequence needs
// (activations and a backward workspace). There are at most GOMAXPROCS
// executors however many workers there are, so memory does not grow with
// the 63 workers of the design notes. Executors are granted in sequence order
// and each sequence adds its gradients into the one shared gradient buffer
// through a per-slot turnstile, in sequence order: the sum, and so the loss,
// is the same bit for bit at any thread count, with no global lock around
// forward and backward.
//
// Options.Pathology switches the notes' defects back on, one field per fix
// (package phase names the notes' phases): workers on pthreads
// with large stacks, a context per worker (and per unused sphere) owning a
// whole workspace, over-sized caches, eagerly materialised batches, a lock
// around forward and backward. They change what is allocated, touched and
// waited for, never the arithmetic: every setting gives the same losses.
//
// Workers label their goroutines with pprof labels "worker" and "stage"
// (data, forward, backward, reduce, optimizer, side), see labels.go.
//
// Every long-lived buffer is made through a ledger.Account so the probe can
// name and count it.
package trainer

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"memprobe/probe/ledger"
	"memprobe/trainer/data"
	"memprobe/trainer/gemm"
	"memprobe/trainer/model"
	"memprobe/trainer/osthread"
)

// MaxThreads is the most logical workers a run may ask for.
const MaxThreads = 1024

// Options configure a training run. The zero value of a field means its
// default, noted beside it; the zero Pathology, Exec, Tape, Side and Decode
// are the fixed trainer.
type Options struct {
	Config    model.Config
	Optimizer model.AdamW
	Threads   int    // logical workers, 1..MaxThreads
	Executors int    // 0: min(Threads, GOMAXPROCS, Batch)
	Seed      uint64 // parameter initialisation
	GEMM      string // backend name; "" or "auto" for the fastest compiled in
	Ledger    *ledger.Ledger

	// Pathology switches on the design notes' defects (notes 000, 001).
	Pathology Pathology
	// Exec is how a sequence runs: "" or "static" (model.Forward and
	// Backward over preallocated workspaces) or "tape" (op by op through
	// package trainer/tape, notes 002 and 004), configured by Tape.
	Exec string
	Tape TapeOptions
	// Side is the work the notes' loops did beside training (sample,
	// checkpoint) every Side.Every steps.
	Side SideWork
	// Decode, when set, runs each executor's LM head through a device
	// decode head in this mode (per-token-copy, per-token-view,
	// per-token-prealloc or batch; note 003) instead of model.ForwardHead.
	Decode string
	// Device is the decode head's device: "" or "cpu", or "cuda" in a build
	// with the cuda tag.
	Device string
}

// Validate reports the first option out of range.
func (o *Options) Validate() error {
	if err := o.Config.Validate(); err != nil {
		return err
	}
	if o.Threads < 1 || o.Threads > MaxThreads {
		return fmt.Errorf("threads %d out of range [1, %d]", o.Threads, MaxThreads)
	}
	if o.Executors < 0 || o.Executors > MaxThreads {
		return fmt.Errorf("executors %d out of range [0, %d]", o.Executors, MaxThreads)
	}
	op := o.Optimizer
	switch {
	case !(op.LR > 0 && op.LR < 10):
		return fmt.Errorf("lr %g out of range (0, 10)", op.LR)
	case !(op.Beta1 >= 0 && op.Beta1 < 1):
		return fmt.Errorf("beta1 %g out of range [0, 1)", op.Beta1)
	case !(op.Beta2 >= 0 && op.Beta2 < 1):
		return fmt.Errorf("beta2 %g out of range [0, 1)", op.Beta2)
	case !(op.Eps > 0):
		return fmt.Errorf("eps %g must be > 0", op.Eps)
	case !(op.WeightDecay >= 0):
		return fmt.Errorf("weight decay %g must be >= 0", op.WeightDecay)
	case !(op.ClipNorm >= 0):
		return fmt.Errorf("clip norm %g must be >= 0", op.ClipNorm)
	}
	if err := o.Pathology.validate(o); err != nil {
		return err
	}
	return o.validateExec()
}

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

// Trainer holds the model, its optimizer state, the executors and the
// logical workers. Methods are not safe for concurrent use.
type Trainer struct {
	opts  Options
	cfg   model.Config
	gemm  gemm.Backend
	data  *data.Dataset
	Param *model.Params // parameters
	Grad  *model.Params // gradients, summed over the step's sequences
	M, V  *model.Params // Adam moments
	step  int           // steps taken

	layout   layout
	execs    []*executor      // the workspaces that run sequences
	contexts []*workerContext // Pathology.ContextWorkspaces: every context made
	pool     execPool
	turns    *turnSlots
	workers  []*worker
	closed   bool
	wg       sync.WaitGroup
	batches  *batchStore
	lock     *modelLock // Pathology.ModelLock
	tape     tapeExec   // Exec "tape"
	version  uint64     // bumped whenever the parameters change outside a sequence

	// per-step state read by the workers
	seqLoss   []float32 // (B) mean loss of each sequence
	normSums  []float64 // (ceil(P/NormChunk)) chunk sums of squared gradients
	phase     phase
	gradScale float32
	loss      float32 // the last step's

	stepFn, sideFn func() // stepBody and sideBody, made once for the tape's iteration

	errMu sync.Mutex
	err   error

	cacheClears, embCopies atomic.Int64
	sideRuns               int
	stackBytes             int64

	plantedGrads  []float32 // plant.duplicateGrads
	plantedLeaked [][]int32 // plant.leakBatches

	acct struct {
		params, grads, m, v, acts, gacts   *ledger.Account
		cacheAtt, cacheBwd, cacheEmb       *ledger.Account
		batches, contexts, stacks, devices *ledger.Account
	}
}

type phase int

const (
	phaseSequences phase = iota
	phaseNorm
	phaseUpdate
	phaseSide
)

// New builds a trainer over ds: it allocates every buffer it will use and
// starts the workers. Call Close to stop them.
func New(opts Options, ds *data.Dataset) (*Trainer, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	cfg := opts.Config
	if ds.Vocab > cfg.Vocab {
		return nil, fmt.Errorf("dataset %s has %d distinct tokens but the model's vocab is %d (raise --vocab)", ds.Source, ds.Vocab, cfg.Vocab)
	}
	if len(ds.Tokens) < cfg.Context+2 {
		return nil, fmt.Errorf("dataset %s has %d tokens, fewer than context+2 = %d", ds.Source, len(ds.Tokens), cfg.Context+2)
	}
	g, err := gemm.Get(opts.GEMM)
	if err != nil {
		return nil, err
	}
	t := &Trainer{opts: opts, cfg: cfg, gemm: g, data: ds, version: 1}
	led := opts.Ledger
	t.acct.params = led.Account(ledger.Params)
	t.acct.grads = led.Account(ledger.Grads)
	t.acct.m = led.Account(ledger.AdamM)
	t.acct.v = led.Account(ledger.AdamV)
	if opts.Exec != "tape" { // the tape's tensors are counted by its allocator
		t.acct.acts = led.Account(ledger.Activations)
		t.acct.gacts = led.Account(ledger.ActivationGrads)
	}
	path := opts.Pathology
	if path.cacheScale() > 1 {
		t.acct.cacheAtt = led.Account(ledger.CacheAttention)
		t.acct.cacheBwd = led.Account(ledger.CacheBackward)
	}
	if path.EmbeddingCache {
		t.acct.cacheEmb = led.Account(ledger.CacheEmbedding)
	}
	t.acct.batches = led.Account(ledger.Batches)
	if path.SphereHierarchy {
		t.acct.contexts = led.Account(ledger.WorkerContexts)
	}
	if path.WorkerStackBytes > 0 {
		t.acct.stacks = led.Account(ledger.WorkerStacks)
	}
	if opts.Decode != "" {
		t.acct.devices = led.Account(ledger.DeviceBuffers)
	}

	P := cfg.NumParams()
	t.Param = model.NewParams(cfg, ledger.Make[float32](t.acct.params, P))
	t.Grad = model.NewParams(cfg, ledger.Make[float32](t.acct.grads, P))
	t.M = model.NewParams(cfg, ledger.Make[float32](t.acct.m, P))
	t.V = model.NewParams(cfg, ledger.Make[float32](t.acct.v, P))
	model.Init(cfg, t.Param, opts.Seed)
	if plant.duplicateGrads {
		t.plantedGrads = ledger.Make[float32](t.acct.grads, P)
	}

	t.layout = layoutOf(cfg, path)
	t.turns = newTurnSlots(cfg.NumSlots())
	if path.ContextWorkspaces {
		t.newContexts()
	} else {
		t.execs = make([]*executor, t.numExecutors())
		for i := range t.execs {
			t.execs[i] = t.newExecutor(i, false, false)
		}
	}
	t.pool.init(t.execs)
	if path.ModelLock {
		t.lock = newModelLock()
	}
	t.batches = newBatchStore(cfg, ds.Tokens, path.EagerBatches, t.acct.batches)
	t.seqLoss = make([]float32, cfg.Batch)
	t.normSums = make([]float64, (P+model.NormChunk-1)/model.NormChunk)

	if opts.Decode != "" {
		for _, e := range t.execs {
			if e.head, err = newDecodeHead(t.deviceName(), opts.Decode, g, cfg, t.Param.WTE, t.acct.devices); err != nil {
				t.Close()
				return nil, err
			}
		}
	}
	if opts.Exec == "tape" {
		if t.tape, err = newTapeEngine(t, len(t.execs)); err != nil {
			t.Close()
			return nil, err
		}
		t.stepFn, t.sideFn = t.stepBody, t.sideBody
	}

	t.workers = make([]*worker, opts.Threads)
	for i := range t.workers {
		w := &worker{id: i, t: t, start: make(chan struct{}), labels: newWorkerLabels(i)}
		if path.ContextWorkspaces {
			w.exec = t.execs[i]
		}
		t.workers[i] = w
		if path.WorkerStackBytes == 0 {
			go w.loop()
			continue
		}
		th, err := osthread.Start(path.WorkerStackBytes, w.loop)
		if err != nil {
			t.workers = t.workers[:i]
			t.Close()
			return nil, err
		}
		w.thread = th
		t.stackBytes = th.StackBytes()
		t.acct.stacks.Alloc(th.StackBytes())
	}
	return t, nil
}

// numExecutors is the size of the executor pool: min(Threads, GOMAXPROCS,
// Batch), or Options.Executors (at most Batch) when it is set.
func (t *Trainer) numExecutors() int {
	if t.opts.Executors > 0 {
		return min(t.opts.Executors, t.cfg.Batch)
	}
	return max(1, min(t.opts.Threads, runtime.GOMAXPROCS(0), t.cfg.Batch))
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
	if t.opts.Exec == "tape" {
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

// NumExecutors is the number of workspaces that run sequences: the pool's
// executors, min(Threads, GOMAXPROCS, Batch) or Options.Executors, or with
// Pathology.ContextWorkspaces one per worker.
func (t *Trainer) NumExecutors() int {
	if t.execs != nil {
		return len(t.execs)
	}
	return t.numExecutors()
}

// Config is the model configuration.
func (t *Trainer) Config() model.Config { return t.cfg }

// GEMM is the backend in use.
func (t *Trainer) GEMM() gemm.Backend { return t.gemm }

// StepsDone is the number of optimizer steps taken so far.
func (t *Trainer) StepsDone() int { return t.step }

// Counts reports what the trainer built and did that Options.Pathology
// changes; see Counts.
func (t *Trainer) Counts() Counts {
	c := Counts{
		Workers:         t.opts.Threads,
		Contexts:        len(t.contexts),
		Workspaces:      len(t.execs),
		CacheClears:     t.cacheClears.Load(),
		EmbeddingCopies: t.embCopies.Load(),
		SideWorkRuns:    t.sideRuns,
	}
	for _, w := range t.workers {
		if w.thread != nil {
			c.WorkerThreads++
		}
	}
	if c.WorkerThreads > 0 {
		c.WorkerStackBytes = t.stackBytes
	}
	for _, x := range t.contexts {
		if x.exec.sequences == 0 {
			c.UnusedContexts++
		}
	}
	for _, w := range t.workers {
		if w.sequences == 0 {
			c.IdleWorkers++
		}
	}
	if t.batches != nil {
		c.BatchBuffers = len(t.batches.bufs)
		c.BatchRowFills = t.batches.fills.Load()
	}
	if t.lock != nil {
		c.ModelLockHolds = t.lock.holds.Load()
	}
	if t.tape != nil {
		c.TapeGraphs, c.TapeGraphsKept = t.tape.graphs()
	}
	return c
}

// Err is the first error a step met (a decode head or the tape failing),
// or nil. Train returns it; a caller of Step should check it.
func (t *Trainer) Err() error {
	t.errMu.Lock()
	defer t.errMu.Unlock()
	return t.err
}

func (t *Trainer) fail(err error) {
	t.errMu.Lock()
	if t.err == nil {
		t.err = err
	}
	t.errMu.Unlock()
}

// Close stops the workers, waits for their threads to exit, releases the
// decode heads and the tape, and records in the ledger that every buffer
// is dropped. The trainer must not be used afterwards; a second Close does
// nothing.
func (t *Trainer) Close() {
	if t.closed {
		return
	}
	t.closed = true
	for _, w := range t.workers {
		close(w.start)
	}
	for _, w := range t.workers {
		if w.thread != nil {
			if err := w.thread.Join(); err != nil {
				t.fail(err)
			}
			t.acct.stacks.Free(w.thread.StackBytes())
		}
	}
	t.workers = nil
	if t.tape != nil {
		if err := t.tape.close(); err != nil {
			t.fail(err)
		}
	}
	for _, e := range t.execs {
		if e.head != nil {
			if err := e.head.close(); err != nil {
				t.fail(err)
			}
			e.head = nil
		}
	}
	t.dropBuffers()
}

// dropBuffers records in the ledger that the trainer no longer holds its
// buffers: the workspaces (of every context, used or not), the batches and
// the four parameter-sized buffers.
func (t *Trainer) dropBuffers() {
	if t.contexts != nil {
		for _, c := range t.contexts {
			t.dropExecutor(c.exec)
		}
	} else {
		for _, e := range t.execs {
			t.dropExecutor(e)
		}
	}
	if t.batches != nil {
		ledger.Drop(t.acct.batches, t.batches.mem)
	}
	ledger.Drop(t.acct.params, t.Param.Memory)
	ledger.Drop(t.acct.grads, t.Grad.Memory)
	ledger.Drop(t.acct.m, t.M.Memory)
	ledger.Drop(t.acct.v, t.V.Memory)
}

// Step runs one optimizer step over the next B sequences and returns the
// step's mean loss (before the update). If a decode head or the tape
// fails, Err reports it and the step's result is not to be trusted.
func (t *Trainer) Step() float32 {
	if t.tape != nil {
		t.tape.iteration(t.stepFn, t.sideFn)
	} else {
		t.stepBody()
		t.sideBody()
	}
	return t.loss
}

// stepBody runs the sequences and the update; the loss goes to t.loss.
func (t *Trainer) stepBody() {
	cfg := t.cfg
	if plant.leakBatches {
		t.plantedLeaked = append(t.plantedLeaked, ledger.Make[int32](t.acct.batches, 3*cfg.Batch*cfg.Context))
	}
	t.batches.begin(t.step)
	t.turns.reset()
	t.pool.reset()
	if t.lock != nil {
		t.lock.reset()
	}
	t.run(phaseSequences, len(t.workers))

	var sum float64
	for _, l := range t.seqLoss {
		sum += float64(l)
	}
	t.loss = float32(sum / float64(cfg.Batch))

	t.gradScale = 1
	if t.opts.Optimizer.ClipNorm > 0 {
		t.run(phaseNorm, min(len(t.workers), len(t.execs)))
		var sq float64
		for _, s := range t.normSums {
			sq += s
		}
		norm := float32(math.Sqrt(sq))
		if norm > t.opts.Optimizer.ClipNorm {
			t.gradScale = t.opts.Optimizer.ClipNorm / norm
		}
	}
	t.step++
	t.run(phaseUpdate, min(len(t.workers), len(t.execs)))
	t.version++
	t.refreshHeads()
}

// sideBody runs the side work when it is due (Options.Side).
func (t *Trainer) sideBody() {
	if s := t.opts.Side; s.Every > 0 && t.step%s.Every == 0 {
		t.run(phaseSide, 1)
	}
}

// run starts phase p on the first n workers and waits for them.
func (t *Trainer) run(p phase, n int) {
	t.phase = p
	t.wg.Add(n)
	for _, w := range t.workers[:n] {
		w.start <- struct{}{}
	}
	t.wg.Wait()
}

// chunkRange splits [0, P) into n ranges aligned to NormChunk and returns
// the i-th.
func chunkRange(P, n, i int) (lo, hi int) {
	chunks := (P + model.NormChunk - 1) / model.NormChunk
	lo = (chunks * i / n) * model.NormChunk
	hi = min(P, (chunks*(i+1)/n)*model.NormChunk)
	return lo, hi
}

// worker is a logical worker: a goroutine, or with
// Pathology.WorkerStackBytes an OS thread of its own running the same loop.
type worker struct {
	id     int
	t      *Trainer
	start  chan struct{}
	exec   *executor // its context's workspace (ContextWorkspaces), else nil: the pool's
	labels *workerLabels
	thread *osthread.Thread
	// sequences counts the sequences this worker has run (its goroutine
	// writes it; Counts reads it between steps).
	sequences int64
}

func (w *worker) loop() {
	w.labels.set(stageIdle)
	for range w.start {
		w.do()
		w.labels.set(stageIdle)
		w.t.wg.Done()
	}
}

func (w *worker) do() {
	t := w.t
	switch t.phase {
	case phaseSequences:
		T := t.cfg.Context
		dloss := 1 / float32(t.cfg.Batch*T)
		for b := w.id; b < t.cfg.Batch; b += len(t.workers) {
			w.labels.set(stageData)
			t.batches.fill(b)
			e := w.exec
			if e == nil {
				e = t.pool.acquire(b)
			}
			e.turn.seq = int32(b)
			e.sequences++
			w.sequences++
			t.batches.load(b, e.in, e.tg)
			if e.version != t.version {
				w.labels.set(stageSide)
				t.prepare(e)
			}
			if t.lock != nil {
				t.lock.lock(b)
			}
			w.labels.set(stageForward)
			loss, err := t.forward(e)
			if err == nil {
				w.labels.set(stageBackward)
				err = t.backward(e, dloss)
			}
			if err != nil {
				t.fail(err)
				t.passTurnstile(e)
			}
			t.seqLoss[b] = loss
			if t.lock != nil {
				t.lock.unlock()
			}
			if w.exec == nil {
				t.pool.release(e)
			}
		}
	case phaseNorm:
		w.labels.set(stageReduce)
		n := min(len(t.workers), len(t.execs))
		lo, hi := chunkRange(len(t.Grad.Memory), n, w.id)
		model.SquaredSums(t.normSums, t.Grad.Memory, lo, hi)
	case phaseUpdate:
		w.labels.set(stageOptimizer)
		n := min(len(t.workers), len(t.execs))
		lo, hi := chunkRange(len(t.Param.Memory), n, w.id)
		t.opts.Optimizer.Update(t.Param.Memory[lo:hi], t.Grad.Memory[lo:hi], t.M.Memory[lo:hi], t.V.Memory[lo:hi], t.step, t.gradScale)
	case phaseSide:
		w.labels.set(stageSide)
		t.sideWork()
	}
}

// prepare brings a workspace's caches up to date with the parameters, the
// first time it runs a sequence after they changed: with ClearCaches it
// clears every cache, headroom included, and with EmbeddingCache it copies
// wte into its own embedding cache.
func (t *Trainer) prepare(e *executor) {
	if t.opts.Pathology.ClearCaches {
		clear(e.acts.Att)
		clear(e.attCache)
		clear(e.gradCache)
		clear(e.embCache)
		t.cacheClears.Add(1)
	}
	if e.embCache != nil {
		copy(e.embCache, t.Param.WTE)
		t.embCopies.Add(1)
	}
	e.version = t.version
}

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
