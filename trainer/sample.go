package trainer

import (
	"math/rand/v2"

	"memprobe/trainer/model"
)

// Sample generates n tokens after the dataset's first token, sampling each
// from the model's softmax (temperature 1) with a seeded generator. It reruns
// the whole window for every token (no KV cache): the causal mask makes the
// padding after the last real position irrelevant to its logits. It uses
// executor 0's workspace and must not run concurrently with Step. With
// Exec "tape" it runs tape.Sample, which gives the same tokens.
func (t *Trainer) Sample(n int, seed uint64) []uint16 {
	if t.tape != nil {
		return t.tape.sample(t.Param, t.data.Tokens[:1], n, seed)
	}
	cfg := t.cfg
	T, V := cfg.Context, cfg.Vocab
	rng := rand.New(rand.NewPCG(seed, 0x73616d706c65)) // "sample"
	e := t.execs[0]
	window := make([]uint16, T)
	targets := make([]uint16, T)
	out := make([]uint16, 0, n)
	hist := []uint16{t.data.Tokens[0]}
	for len(out) < n {
		start := max(0, len(hist)-T)
		k := copy(window, hist[start:])
		clear(window[k:])
		model.Forward(t.gemm, cfg, t.Param, e.acts, window, targets)
		probs := e.acts.Probs[(k-1)*V : k*V]
		next := model.SampleToken(probs, rng.Float32())
		out = append(out, next)
		hist = append(hist, next)
	}
	return out
}
