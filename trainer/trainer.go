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
// Every long-lived buffer is made through a ledger.Account so the probe can
// name and count it.
package trainer

import (
	"fmt"
	"math"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"memprobe/probe/ledger"
	"memprobe/trainer/data"
	"memprobe/trainer/gemm"
	"memprobe/trainer/model"
)

// MaxThreads is the most logical workers a run may ask for.
const MaxThreads = 1024

// Options configure a training run. The zero value of a field means its
// default, noted beside it.
type Options struct {
	Config    model.Config
	Optimizer model.AdamW
	Threads   int    // logical workers, 1..MaxThreads
	Executors int    // 0: min(Threads, GOMAXPROCS, Batch)
	Seed      uint64 // parameter initialisation
	GEMM      string // backend name; "" or "auto" for the fastest compiled in
	Ledger    *ledger.Ledger
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
	return nil
}

// executor owns the workspace of one sequence in flight.
type executor struct {
	id    int
	acts  *model.Acts
	grads *model.GradActs
	turn  seqTurnstile
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

	execs   []*executor
	pool    execPool
	turns   []atomic.Int32
	workers []*worker
	wg      sync.WaitGroup

	// per-step state read by the workers
	seqLoss   []float32 // (B) mean loss of each sequence
	normSums  []float64 // (ceil(P/NormChunk)) chunk sums of squared gradients
	phase     phase
	pos       []int // (B) start position of each sequence in the token array
	gradScale float32

	acct struct{ params, grads, m, v, acts, gacts *ledger.Account }
}

type phase int

const (
	phaseSequences phase = iota
	phaseNorm
	phaseUpdate
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
	t := &Trainer{opts: opts, cfg: cfg, gemm: g, data: ds}
	led := opts.Ledger
	t.acct.params = led.Account(ledger.Params)
	t.acct.grads = led.Account(ledger.Grads)
	t.acct.m = led.Account(ledger.AdamM)
	t.acct.v = led.Account(ledger.AdamV)
	t.acct.acts = led.Account(ledger.Activations)
	t.acct.gacts = led.Account(ledger.ActivationGrads)

	P := cfg.NumParams()
	t.Param = model.NewParams(cfg, t.acct.params.Float32s(P))
	t.Grad = model.NewParams(cfg, t.acct.grads.Float32s(P))
	t.M = model.NewParams(cfg, t.acct.m.Float32s(P))
	t.V = model.NewParams(cfg, t.acct.v.Float32s(P))
	model.Init(cfg, t.Param, opts.Seed)

	nexec := t.NumExecutors()
	t.turns = make([]atomic.Int32, cfg.NumSlots())
	t.execs = make([]*executor, nexec)
	for i := range t.execs {
		e := &executor{id: i}
		e.acts = model.NewActs(cfg, t.acct.acts.Float32s(cfg.ActsSize()))
		e.grads = model.NewGradActs(cfg, t.acct.gacts.Float32s(cfg.GradActsSize()))
		e.turn.turns = t.turns
		t.execs[i] = e
	}
	t.pool.init(t.execs)
	t.seqLoss = make([]float32, cfg.Batch)
	t.pos = make([]int, cfg.Batch)
	t.normSums = make([]float64, (P+model.NormChunk-1)/model.NormChunk)

	t.workers = make([]*worker, opts.Threads)
	for i := range t.workers {
		w := &worker{id: i, t: t, start: make(chan struct{})}
		t.workers[i] = w
		go w.loop()
	}
	return t, nil
}

// NumExecutors is min(Threads, GOMAXPROCS, Batch), or Options.Executors
// when it is set.
func (t *Trainer) NumExecutors() int {
	if t.opts.Executors > 0 {
		return min(t.opts.Executors, t.cfg.Batch)
	}
	return max(1, min(t.opts.Threads, runtime.GOMAXPROCS(0), t.cfg.Batch))
}

// Config is the model configuration.
func (t *Trainer) Config() model.Config { return t.cfg }

// GEMM is the backend in use.
func (t *Trainer) GEMM() gemm.Backend { return t.gemm }

// StepsDone is the number of optimizer steps taken so far.
func (t *Trainer) StepsDone() int { return t.step }

// Close stops the workers. The trainer must not be used afterwards.
func (t *Trainer) Close() {
	for _, w := range t.workers {
		close(w.start)
	}
	t.workers = nil
}

// Step runs one optimizer step over the next B sequences and returns the
// step's mean loss (before the update).
func (t *Trainer) Step() float32 {
	cfg := t.cfg
	B, T := cfg.Batch, cfg.Context
	n := len(t.data.Tokens) - T - 1
	for b := 0; b < B; b++ {
		t.pos[b] = ((t.step*B + b) * T) % n
	}
	for i := range t.turns {
		t.turns[i].Store(0)
	}
	t.pool.reset()
	t.run(phaseSequences, len(t.workers))

	var sum float64
	for _, l := range t.seqLoss {
		sum += float64(l)
	}
	loss := float32(sum / float64(B))

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
	return loss
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

type worker struct {
	id    int
	t     *Trainer
	start chan struct{}
}

func (w *worker) loop() {
	for range w.start {
		w.do()
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
			e := t.pool.acquire(b)
			e.turn.seq = int32(b)
			p := t.pos[b]
			in := t.data.Tokens[p : p+T]
			tg := t.data.Tokens[p+1 : p+T+1]
			t.seqLoss[b] = model.Forward(t.gemm, t.cfg, t.Param, e.acts, in, tg)
			model.Backward(t.gemm, t.cfg, t.Param, t.Grad, e.acts, e.grads, in, tg, dloss, &e.turn)
			t.pool.release(e)
		}
	case phaseNorm:
		n := min(len(t.workers), len(t.execs))
		lo, hi := chunkRange(len(t.Grad.Memory), n, w.id)
		model.SquaredSums(t.normSums, t.Grad.Memory, lo, hi)
	case phaseUpdate:
		n := min(len(t.workers), len(t.execs))
		lo, hi := chunkRange(len(t.Param.Memory), n, w.id)
		t.opts.Optimizer.Update(t.Param.Memory[lo:hi], t.Grad.Memory[lo:hi], t.M.Memory[lo:hi], t.V.Memory[lo:hi], t.step, t.gradScale)
	}
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
	turns []atomic.Int32
	seq   int32
}

func (s *seqTurnstile) Enter(slot int) {
	for s.turns[slot].Load() != s.seq {
		runtime.Gosched()
	}
}

func (s *seqTurnstile) Leave(slot int) { s.turns[slot].Store(s.seq + 1) }

// median returns the median of d (d is sorted in place).
func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}
