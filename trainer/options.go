package trainer

// Options and their validation: the one place a run's configuration is
// checked before anything is allocated.

import (
	"fmt"

	"memprobe/probe/ledger"
	"memprobe/trainer/gemm"
	"memprobe/trainer/model"
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
	if err := gemm.Check(o.GEMM); err != nil {
		return err
	}
	if err := o.Pathology.validate(o); err != nil {
		return err
	}
	return o.validateExec()
}
