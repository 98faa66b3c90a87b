package trainer

// The step loop: Step runs the engine's iteration over stepBody (the
// sequences, the norm and the update, each started on the workers with
// run) and sideBody; each worker's loop does the part of the step it is
// started on.

import (
	"io"
	"math"

	"memprobe/ledger"
	"memprobe/trainer/model"
	"memprobe/trainer/osthread"
)

// work is the part of a step the workers are started on: the step's
// sequences, the gradient norm's chunk sums, the optimizer update, the side
// work. (Not to be confused with a plan's phases, package phase, nor with
// the pprof "stage" labels, labels.go.)
type work int

const (
	workSequences work = iota
	workNorm
	workUpdate
	workSide
)

// Step runs one optimizer step over the next B sequences and returns the
// step's mean loss (before the update). If a decode head or the tape
// fails, Err reports it and the step's result is not to be trusted.
func (t *Trainer) Step() float32 {
	t.engine.iteration(t.stepFn, t.sideFn)
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
	t.run(workSequences, len(t.workers))

	var sum float64
	for _, l := range t.seqLoss {
		sum += float64(l)
	}
	t.loss = float32(sum / float64(cfg.Batch))

	t.gradScale = 1
	if t.opts.Optimizer.ClipNorm > 0 {
		t.run(workNorm, min(len(t.workers), len(t.execs)))
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
	t.run(workUpdate, min(len(t.workers), len(t.execs)))
	t.version++
	t.refreshHeads()
}

// sideBody runs the side work when it is due (Options.Side).
func (t *Trainer) sideBody() {
	if s := t.opts.Side; s.Every > 0 && t.step%s.Every == 0 {
		t.run(workSide, 1)
	}
}

// run starts the workers' part w of a step on the first n workers and waits
// for them.
func (t *Trainer) run(w work, n int) {
	t.work = w
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
	switch t.work {
	case workSequences:
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
			loss, err := t.engine.forward(e)
			if err == nil {
				w.labels.set(stageBackward)
				err = t.engine.backward(e, t.Grad, dloss)
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
	case workNorm:
		w.labels.set(stageReduce)
		n := min(len(t.workers), len(t.execs))
		lo, hi := chunkRange(len(t.Grad.Memory), n, w.id)
		model.SquaredSums(t.normSums, t.Grad.Memory, lo, hi)
	case workUpdate:
		w.labels.set(stageOptimizer)
		n := min(len(t.workers), len(t.execs))
		lo, hi := chunkRange(len(t.Param.Memory), n, w.id)
		t.opts.Optimizer.Update(t.Param.Memory[lo:hi], t.Grad.Memory[lo:hi], t.M.Memory[lo:hi], t.V.Memory[lo:hi], t.step, t.gradScale)
	case workSide:
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

// passTurnstile lets a failed sequence through every slot without adding
// anything, so that the sequences after it do not wait for it forever.
func (t *Trainer) passTurnstile(e *executor) {
	for s := range t.cfg.NumSlots() {
		e.turn.Enter(s)
		e.turn.Leave(s)
	}
}

// sideWork is one round of Options.Side: a sample, then a checkpoint
// serialised and discarded. With the tape both come from the tape's
// allocator (tape.Sample, tape.StageCheckpoint), as in note 002's loop. It
// runs on worker 0 (stage "side").
func (t *Trainer) sideWork() {
	n, seed := t.opts.Side.GenerateTokens, t.opts.Seed+uint64(t.step)
	if n > 0 {
		t.Generate(n, seed)
	}
	params, m, v := t.engine.stage(t.Param.Memory, t.M.Memory, t.V.Memory)
	if err := t.writeCheckpointFrom(io.Discard, params, m, v); err != nil {
		t.fail(err)
	}
	t.sideRuns++
}
