package trainer

import (
	"memprobe/trainer/model"
)

// engine is how a sequence runs on an executor, picked by Options.Engine:
// staticEngine (model.Forward and model.Backward over the workspace New
// allocated, with the decode head when Options.Decode is set) or tapeEngine
// (engine_tape.go: the same model op by op through package trainer/tape).
// The step path calls only these methods, so the workers, the turnstile and
// the optimizer are the same for both.
type engine interface {
	// forward runs the sequence in e.in/e.tg on e and returns its mean
	// loss; backward adds its gradients into grads through e's turnstile.
	forward(e *executor) (float32, error)
	backward(e *executor, grads *model.Params, dloss float32) error
	// generate makes n tokens after prompt (Trainer.Generate).
	generate(prompt []uint16, n int, seed uint64) []uint16
	// stage returns the buffers a checkpoint of the side work is written
	// from: the parameters and moments themselves, or copies staged in
	// the tape's allocator, as note 002's loop did.
	stage(params, m, v []float32) (stagedParams, stagedM, stagedV []float32)
	// iteration runs one step: step (sequences and update), then side
	// (the side work), with the allocator's frame around them where the
	// engine has one (tape.ArenaLoop).
	iteration(step, side func())
	// graphs reports the tape graphs built so far and those kept (0, 0
	// for the static engine).
	graphs() (built int64, kept int)
	close() error
}

// staticEngine runs the model over the preallocated workspaces.
type staticEngine struct{ t *Trainer }

func (s staticEngine) forward(e *executor) (float32, error) {
	t := s.t
	if e.head != nil {
		model.ForwardBody(t.gemm, t.cfg, e.params, e.acts, e.in)
		return e.head.forward(e.acts, e.tg)
	}
	return model.Forward(t.gemm, t.cfg, e.params, e.acts, e.in, e.tg), nil
}

func (s staticEngine) backward(e *executor, grads *model.Params, dloss float32) error {
	t := s.t
	model.Backward(t.gemm, t.cfg, e.params, grads, e.acts, e.grads, e.in, e.tg, dloss, &e.turn)
	return nil
}

// generate reruns the whole window for every token (no KV cache): the causal
// mask makes the padding after the last real position irrelevant to its
// logits. It uses executor 0's workspace.
func (s staticEngine) generate(prompt []uint16, n int, seed uint64) []uint16 {
	t := s.t
	cfg := t.cfg
	T, V := cfg.Context, cfg.Vocab
	rng := model.NewSampler(seed, model.SampleStream)
	e := t.execs[0]
	window := make([]uint16, T)
	targets := make([]uint16, T)
	// One buffer holds the prompt and the tokens drawn, of at least 16
	// bytes: smaller, the tiny allocator would pack it into a shared
	// block or not, and the count of allocations would vary between runs.
	hist := make([]uint16, len(prompt), max(len(prompt)+n, 8))
	copy(hist, prompt)
	for len(hist) < len(prompt)+n {
		start := max(0, len(hist)-T)
		k := copy(window, hist[start:])
		clear(window[k:])
		model.Forward(t.gemm, cfg, t.Param, e.acts, window, targets)
		probs := e.acts.Probs[(k-1)*V : k*V]
		next := model.SampleToken(probs, rng.Float32())
		hist = append(hist, next)
	}
	return hist[len(prompt):]
}

func (staticEngine) stage(params, m, v []float32) ([]float32, []float32, []float32) {
	return params, m, v
}

func (staticEngine) iteration(step, side func()) {
	step()
	side()
}

func (staticEngine) graphs() (int64, int) { return 0, 0 }

func (staticEngine) close() error { return nil }
