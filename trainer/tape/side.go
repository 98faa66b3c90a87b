package tape

import (
	"memprobe/trainer/gemm"
	"memprobe/trainer/model"
)

// Sample generates n tokens after prompt (at least one token), sampling each
// from the model's softmax (temperature 1) with a seeded generator, as
// trainer.Sample does with the static pass: the same generator, the same
// window (the last c.Context tokens, zero-padded; no KV cache), and so the
// same tokens for the same parameters. Each token is one tape.Forward whose
// graph is released once its probabilities are read. With an Arena the
// graphs' memory stays in the arena until its next reset: a sample of n
// tokens holds n forward graphs there. This is the side work of design
// note 002's loop.
func Sample(g gemm.Backend, c model.Config, p *model.Params, prompt []uint16, n int, seed uint64, alloc Allocator, o Options) []uint16 {
	if len(prompt) == 0 {
		panic("tape: Sample needs a prompt of at least one token")
	}
	T, V := c.Context, c.Vocab
	rng := model.NewSampler(seed, model.SampleStream)
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
		gr, _ := Forward(g, c, p, window, targets, alloc, o)
		probs := gr.Probs()[(k-1)*V : k*V]
		next := model.SampleToken(probs, rng.Float32())
		gr.Release()
		hist = append(hist, next)
	}
	return hist[len(prompt):]
}

// StageCheckpoint copies parts back to back into one buffer from alloc and
// returns it: the snapshot a checkpoint writer serialises (parameters, Adam
// m, Adam v) while training goes on. With an Arena the staging buffer lives
// in the arena until its next reset. This is the other side work of design
// note 002's loop.
func StageCheckpoint(alloc Allocator, parts ...[]float32) []float32 {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	buf := alloc.Float32s(n)
	off := 0
	for _, p := range parts {
		off += copy(buf[off:], p)
	}
	return buf
}
