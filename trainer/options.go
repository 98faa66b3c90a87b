package trainer

// Options and their validation: the one place a run's configuration is
// checked before anything is allocated.

import (
	"fmt"

	"memprobe/ledger"
	"memprobe/trainer/decode"
	"memprobe/trainer/gemm"
	"memprobe/trainer/model"
)

// MaxThreads is the most logical workers a run may ask for.
const MaxThreads = 1024

// Options configure a training run. The zero value of a field means its
// default, noted beside it; the zero Pathology, Engine, Tape, Side and Decode
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
	// Engine is how a sequence runs: "" or "static" (model.Forward and
	// Backward over preallocated workspaces) or "tape" (op by op through
	// package trainer/tape, notes 002 and 004), configured by Tape.
	Engine string
	Tape   TapeOptions
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
	if err := gemm.Check(o.GEMM); err != nil {
		return err
	}
	if err := o.Pathology.validate(o); err != nil {
		return err
	}
	return o.validateEngine()
}

// How a sequence runs. Options.Engine picks the engine (engine.go): "static"
// (the default) runs model.Forward and model.Backward over the workspace
// that New allocated; "tape" runs the same model op by op through package
// trainer/tape, whose temporaries come from an allocator (notes 002 and
// 004). Options.Decode replaces the host LM head with a device decode head
// (note 003, decodehead.go). Neither changes the workers, the turnstile or
// the optimizer: a plan's phases are configurations of one trainer.

// TapeOptions configure the tape engine (Options.Engine "tape"); they are the
// switches of the arena and embedding plans.
type TapeOptions struct {
	// Allocator is where the tape's temporaries come from: "arena" (the
	// default: a chunked arena, ledger.Arena) or "heap" (the Go heap).
	Allocator string `json:"allocator,omitempty"`
	// ResetBeforeSide resets the arena right after the optimizer update,
	// before the side work (sample, checkpoint), whose temporaries then
	// pile up until the next reset: note 002's bug. Off: the reset is the
	// last thing in the step.
	ResetBeforeSide bool `json:"reset_before_side,omitempty"`
	// FreeChunksEvery returns the arena's chunks to the allocator every k
	// steps (note 002's "aggressive cleanup every 10 iterations"); 0: an
	// arena keeps its chunks for reuse.
	FreeChunksEvery int `json:"free_chunks_every,omitempty"`
	// OneHotEmbedding computes the embedding's gradient as a dense product
	// with one-hot rows (T×V per sequence) instead of a scatter-add: note
	// 004's bug.
	OneHotEmbedding bool `json:"one_hot_embedding,omitempty"`
	// KeepGraphs keeps every step's graph reachable from a history slice,
	// so nothing a graph holds is ever released: note 004's bug.
	KeepGraphs bool `json:"keep_graphs,omitempty"`
}

// SideWork is what the notes' training loops did beside training: every
// Every steps, after the update, generate GenerateTokens tokens and write a
// checkpoint (serialised in full by the checkpoint encoder, then
// discarded, so that the run does no disk I/O). Every 0: none.
type SideWork struct {
	Every          int `json:"every,omitempty"`
	GenerateTokens int `json:"generate_tokens,omitempty"`
}

func (o *Options) validateEngine() error {
	switch o.Engine {
	case "", "static":
		if o.Tape != (TapeOptions{}) {
			return fmt.Errorf("tape options %+v need engine tape (engine is %q)", o.Tape, o.Engine)
		}
	case "tape":
		switch o.Tape.Allocator {
		case "", "arena", "heap":
		default:
			return fmt.Errorf("tape allocator %q: want arena or heap", o.Tape.Allocator)
		}
		if o.Tape.FreeChunksEvery < 0 {
			return fmt.Errorf("tape free-chunks-every %d must be >= 0", o.Tape.FreeChunksEvery)
		}
		if o.Decode != "" {
			return fmt.Errorf("decode %q: the decode head runs with engine static only", o.Decode)
		}
		if o.Pathology.ContextWorkspaces {
			return fmt.Errorf("engine tape: per-context workspaces are static workspaces; they need engine static")
		}
	default:
		return fmt.Errorf("engine %q: want static or tape", o.Engine)
	}
	if o.Decode != "" {
		if _, err := decode.ParseMode(o.Decode); err != nil {
			return err
		}
	} else if o.Device != "" && o.Device != "cpu" {
		return fmt.Errorf("device %q: a device is used only by a decode head (set a decode mode)", o.Device)
	}
	if s := o.Side; s.Every < 0 || s.GenerateTokens < 0 || s.GenerateTokens > 1<<20 {
		return fmt.Errorf("side work every %d steps, %d tokens to generate: want every >= 0 and 0 <= tokens <= %d", s.Every, s.GenerateTokens, 1<<20)
	}
	return nil
}
