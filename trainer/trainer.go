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
	"sync"
	"sync/atomic"

	"memprobe/ledger"
	"memprobe/trainer/data"
	"memprobe/trainer/gemm"
	"memprobe/trainer/model"
	"memprobe/trainer/osthread"
)

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
	engine   engine     // how a sequence runs (Options.Engine)
	version  uint64     // bumped whenever the parameters change outside a sequence

	// per-step state read by the workers
	seqLoss   []float32 // (B) mean loss of each sequence
	normSums  []float64 // (ceil(P/NormChunk)) chunk sums of squared gradients
	work      work      // the part of the step the workers are started on
	gradScale float32
	loss      float32 // the last step's

	stepFn, sideFn func() // stepBody and sideBody as values made once: the engine's iteration takes them every step
	// checkpointHeader is a checkpoint's bytes before its step (magic,
	// version, model, data), which no step changes: made once, so that
	// the side work's checkpoint every step allocates the same each time.
	checkpointHeader []byte

	errMu sync.Mutex
	err   error

	cacheClears, embCopies atomic.Int64
	sideRuns               int
	stackBytes             int64

	plantedGrads  []float32 // plant.duplicateGrads
	plantedLeaked [][]int32 // plant.leakBatches
	plantedHeap   []byte    // plant.unledgeredBytes

	acct struct {
		params, grads, m, v, acts, gacts   *ledger.Account
		cacheAtt, cacheBwd, cacheEmb       *ledger.Account
		batches, contexts, stacks, devices *ledger.Account
		stepSums, decodeHost               *ledger.Account
	}
}

// New builds a trainer over ds: it allocates every buffer it will use and
// starts the workers. Call Close to stop them. opts must have passed
// Options.Validate: the configuration is validated once, where it enters
// (job.Run), and New trusts it; New's own errors are about ds and the
// machine (a dataset the model cannot read, a thread or device that cannot
// be had).
func New(opts Options, ds *data.Dataset) (*Trainer, error) {
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
	if t.checkpointHeader, err = checkpointHeader(cfg, ds); err != nil {
		return nil, err
	}
	t.engine = staticEngine{t}
	t.stepFn, t.sideFn = t.stepBody, t.sideBody
	t.openAccounts()
	path := opts.Pathology
	P := t.allocParams()

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
	t.seqLoss = ledger.Make[float32](t.acct.stepSums, cfg.Batch)
	t.normSums = ledger.Make[float64](t.acct.stepSums, (P+model.NormChunk-1)/model.NormChunk)

	if opts.Decode != "" {
		for _, e := range t.execs {
			if e.head, err = newDecodeHead(t.deviceName(), opts.Decode, g, cfg, t.Param.WTE, t.acct.devices, t.acct.decodeHost); err != nil {
				t.Close()
				return nil, err
			}
		}
	}
	if opts.Engine == "tape" {
		tp, err := newTapeEngine(t, len(t.execs))
		if err != nil {
			t.Close()
			return nil, err
		}
		t.engine = tp
	}

	if err := t.startWorkers(); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// openAccounts opens the ledger's accounts of the buffers this trainer's
// options make: the parameters, gradients and moments always; activations
// except with the tape (its allocator counts them); the pathologies'
// caches, contexts and stacks; the decode head's.
func (t *Trainer) openAccounts() {
	opts, led := t.opts, t.opts.Ledger
	t.acct.params = led.Account(ledger.Params)
	t.acct.grads = led.Account(ledger.Grads)
	t.acct.m = led.Account(ledger.AdamM)
	t.acct.v = led.Account(ledger.AdamV)
	if opts.Engine != "tape" { // the tape's tensors are counted by its allocator
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
	t.acct.stepSums = led.Account(ledger.StepSums)
	if opts.Decode != "" {
		t.acct.devices = led.Account(ledger.DeviceBuffers)
		t.acct.decodeHost = led.Account(ledger.DecodeHost)
	}
}

// allocParams allocates the parameters (initialised from the seed), their
// gradients and AdamW's moments, P floats each, and what a planted fault
// adds; it returns P.
func (t *Trainer) allocParams() (P int) {
	cfg := t.cfg
	P = cfg.NumParams()
	t.Param = model.NewParams(cfg, ledger.Make[float32](t.acct.params, P))
	t.Grad = model.NewParams(cfg, ledger.Make[float32](t.acct.grads, P))
	t.M = model.NewParams(cfg, ledger.Make[float32](t.acct.m, P))
	t.V = model.NewParams(cfg, ledger.Make[float32](t.acct.v, P))
	model.Init(cfg, t.Param, t.opts.Seed)
	if plant.duplicateGrads {
		t.plantedGrads = ledger.Make[float32](t.acct.grads, P)
	}
	if plant.unledgeredBytes > 0 {
		t.plantedHeap = make([]byte, plant.unledgeredBytes)
	}
	return P
}

// startWorkers starts the Threads workers: goroutines, or OS threads with
// stacks of Pathology.WorkerStackBytes (counted in the ledger). On an
// error t.workers holds those started, for Close.
func (t *Trainer) startWorkers() error {
	path := t.opts.Pathology
	t.workers = make([]*worker, t.opts.Threads)
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
			return err
		}
		w.thread = th
		t.stackBytes = th.StackBytes()
		t.acct.stacks.Alloc(th.StackBytes())
	}
	return nil
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
	c.TapeGraphs, c.TapeGraphsKept = t.engine.graphs()
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
	if err := t.engine.close(); err != nil {
		t.fail(err)
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
// buffers: the workspaces (of every context, used or not), the batches, the
// step's sums and the four parameter-sized buffers.
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
	ledger.Drop(t.acct.stepSums, t.seqLoss)
	ledger.Drop(t.acct.stepSums, t.normSums)
	t.plantedHeap = nil
	ledger.Drop(t.acct.params, t.Param.Memory)
	ledger.Drop(t.acct.grads, t.Grad.Memory)
	ledger.Drop(t.acct.m, t.M.Memory)
	ledger.Drop(t.acct.v, t.V.Memory)
}
