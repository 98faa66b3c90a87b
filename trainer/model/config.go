// Package model is the GPT-2-style decoder the reference trainer trains: its
// configuration, the layout of its memory, and the forward and backward pass
// of one sequence.
//
// The layout follows llm.c's train_gpt2.c: sizes are computed from the
// Config first, then one backing slice per memory class (parameters,
// gradients, Adam m, Adam v) is allocated once and cut into named tensors
// with shape comments. Activations belong to an executor (one sequence at a
// time, see Acts), never to a logical worker.
//
// Dimension names, used throughout: V vocabulary, C channels (dim), L layers,
// NH heads, FF feed-forward width, maxT context, T tokens in a sequence, B
// sequences per step.
package model

import (
	"fmt"
	"sort"
	"strings"
)

// Config describes the model and its batch. Every field is overridable from
// the command line.
type Config struct {
	Vocab   int `json:"vocab"`   // V
	Dim     int `json:"dim"`     // C
	Layers  int `json:"layers"`  // L
	Heads   int `json:"heads"`   // NH
	FF      int `json:"ff"`      // FF, 4*C in GPT-2
	Context int `json:"context"` // maxT; every sequence is this long
	Batch   int `json:"batch"`   // B sequences per step
}

// Presets are the named configurations. "seed" is the design notes' model.
var Presets = map[string]Config{
	"seed": {Vocab: 788, Dim: 256, Layers: 6, Heads: 8, FF: 1024, Context: 128, Batch: 32},
	// tiny keeps the seed vocabulary so that the loss starts at ln(788) and
	// tests exercise the same tokenizer and data; it trains in seconds.
	"tiny": {Vocab: 788, Dim: 64, Layers: 2, Heads: 4, FF: 256, Context: 64, Batch: 32},
	// micro is for finite-difference gradient checks: every tensor small.
	"micro": {Vocab: 13, Dim: 8, Layers: 2, Heads: 2, FF: 16, Context: 5, Batch: 3},
	// gpt2-head is GPT-2 small's LM head (C 768, V 50257) on a one-layer
	// body, for `probe decode`: the head is what the decode modes measure,
	// and at this V the logits product and the copies back are 64 times
	// the seed's, which is where per-token syncs dominate on a GPU (design
	// note 003). It trains, slowly: the embedding alone is 38.6 M values.
	"gpt2-head": {Vocab: 50257, Dim: 768, Layers: 1, Heads: 12, FF: 3072, Context: 128, Batch: 8},
}

// Preset returns the named preset or an error listing the known ones.
func Preset(name string) (Config, error) {
	c, ok := Presets[name]
	if !ok {
		names := make([]string, 0, len(Presets))
		for n := range Presets {
			names = append(names, n)
		}
		sort.Strings(names)
		return Config{}, fmt.Errorf("unknown preset %q (have: %s)", name, strings.Join(names, ", "))
	}
	return c, nil
}

// Validate reports the first field out of range.
func (c Config) Validate() error {
	check := func(name string, v, lo, hi int) error {
		if v < lo || v > hi {
			return fmt.Errorf("%s %d out of range [%d, %d]", name, v, lo, hi)
		}
		return nil
	}
	for _, e := range []error{
		check("vocab", c.Vocab, 2, 65535), // token ids are uint16
		check("dim", c.Dim, 1, 1<<14),
		check("layers", c.Layers, 1, 256),
		check("heads", c.Heads, 1, 1024),
		check("ff", c.FF, 1, 1<<16),
		check("context", c.Context, 1, 1<<14),
		check("batch", c.Batch, 1, 1<<16),
	} {
		if e != nil {
			return e
		}
	}
	if c.Dim%c.Heads != 0 {
		return fmt.Errorf("dim %d is not divisible by heads %d", c.Dim, c.Heads)
	}
	return nil
}

// String is the one-line summary printed at start.
func (c Config) String() string {
	return fmt.Sprintf("V=%d C=%d L=%d NH=%d FF=%d T=%d B=%d", c.Vocab, c.Dim, c.Layers, c.Heads, c.FF, c.Context, c.Batch)
}
