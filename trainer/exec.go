package trainer

import (
	"fmt"
	"io"

	"memprobe/trainer/decode"
	"memprobe/trainer/device"
	"memprobe/trainer/model"
)

// How a sequence runs. Options.Exec picks the executor's engine: "static"
// (the default) runs model.Forward and model.Backward over the workspace
// that New allocated; "tape" runs the same model op by op through package
// trainer/tape, whose temporaries come from an allocator (notes 002 and
// 004). Options.Decode replaces the host LM head with a device decode head
// (note 003, decodehead.go). Neither changes the workers, the turnstile or
// the optimizer: a plan's phases are configurations of one trainer.

// TapeOptions configure the tape engine (Options.Exec "tape"); they are the
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
// Every steps, after the update, generate SampleTokens tokens and write a
// checkpoint (serialised in full by the checkpoint encoder, then
// discarded, so that the run does no disk I/O). Every 0: none.
type SideWork struct {
	Every        int `json:"every,omitempty"`
	SampleTokens int `json:"sample_tokens,omitempty"`
}

// tapeExec is the tape engine (newTapeEngine in exec_tape.go, over package
// trainer/tape), behind an interface so that the step path names only what
// it calls.
type tapeExec interface {
	// forward and backward run one sequence on executor e's tape; backward
	// then releases the sequence's graph (or keeps it, Tape.KeepGraphs).
	forward(e int, p *model.Params, in, tg []uint16) (float32, error)
	backward(e int, grads *model.Params, dloss float32, ts model.Turnstile) error
	// sample generates n tokens after prompt through the tape.
	sample(p *model.Params, prompt []uint16, n int, seed uint64) []uint16
	// stage copies parts into one buffer from the tape's allocator: the
	// checkpoint snapshot of the side work.
	stage(parts ...[]float32) []float32
	// iteration runs one step: step (sequences and update), then side (the
	// side work), with the allocator's iteration frame and reset point
	// around them (tape.ArenaLoop).
	iteration(step, side func())
	// graphs reports the graphs built so far and those kept.
	graphs() (built int64, kept int)
	close() error
}

func (o *Options) validateExec() error {
	switch o.Exec {
	case "", "static":
		if o.Tape != (TapeOptions{}) {
			return fmt.Errorf("tape options %+v need exec tape (exec is %q)", o.Tape, o.Exec)
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
			return fmt.Errorf("decode %q: the decode head runs with exec static only", o.Decode)
		}
		if o.Pathology.ContextWorkspaces {
			return fmt.Errorf("exec tape: per-context workspaces are static workspaces; they need exec static")
		}
	default:
		return fmt.Errorf("exec %q: want static or tape", o.Exec)
	}
	if o.Decode != "" {
		if _, err := decode.ParseMode(o.Decode); err != nil {
			return err
		}
	} else if o.Device != "" && o.Device != "cpu" {
		return fmt.Errorf("device %q: a device is used only by a decode head (set a decode mode)", o.Device)
	}
	if s := o.Side; s.Every < 0 || s.SampleTokens < 0 || s.SampleTokens > 1<<20 {
		return fmt.Errorf("side work every %d steps, %d sample tokens: want every >= 0 and 0 <= tokens <= %d", s.Every, s.SampleTokens, 1<<20)
	}
	return nil
}

func (t *Trainer) deviceName() string {
	if t.opts.Device == "" {
		return "cpu"
	}
	return t.opts.Device
}

// forward runs the sequence in e.in/e.tg on e and returns its mean loss.
func (t *Trainer) forward(e *executor) (float32, error) {
	switch {
	case t.tape != nil:
		return t.tape.forward(e.id, e.params, e.in, e.tg)
	case e.head != nil:
		model.ForwardBody(t.gemm, t.cfg, e.params, e.acts, e.in)
		return e.head.forward(e.acts, e.tg)
	default:
		return model.Forward(t.gemm, t.cfg, e.params, e.acts, e.in, e.tg), nil
	}
}

// backward adds the sequence's gradients into t.Grad through e's turnstile.
func (t *Trainer) backward(e *executor, dloss float32) error {
	if t.tape != nil {
		return t.tape.backward(e.id, t.Grad, dloss, &e.turn)
	}
	model.Backward(t.gemm, t.cfg, e.params, t.Grad, e.acts, e.grads, e.in, e.tg, dloss, &e.turn)
	return nil
}

// passTurnstile lets a failed sequence through every slot without adding
// anything, so that the sequences after it do not wait for it forever.
func (t *Trainer) passTurnstile(e *executor) {
	for s := range t.cfg.NumSlots() {
		e.turn.Enter(s)
		e.turn.Leave(s)
	}
}

// refreshHeads uploads wte to every decode head after an update.
func (t *Trainer) refreshHeads() {
	for _, e := range t.execs {
		if e.head != nil {
			if err := e.head.refresh(t.Param.WTE); err != nil {
				t.fail(err)
			}
		}
	}
}

// DecodeStats sums the device counters of every decode head (zero without
// Options.Decode).
func (t *Trainer) DecodeStats() device.Stats {
	var s device.Stats
	for _, e := range t.execs {
		if e.head == nil {
			continue
		}
		h := e.head.stats()
		s.Launches += h.Launches
		s.Syncs += h.Syncs
		s.H2DCopies += h.H2DCopies
		s.D2HCopies += h.D2HCopies
		s.H2DBytes += h.H2DBytes
		s.D2HBytes += h.D2HBytes
		s.DeviceBytesInUse += h.DeviceBytesInUse
		s.DeviceBytesPeak += h.DeviceBytesPeak
	}
	return s
}

// sideWork is one round of Options.Side: a sample, then a checkpoint
// serialised and discarded. With the tape both come from the tape's
// allocator (tape.Sample, tape.StageCheckpoint), as in note 002's loop. It
// runs on worker 0 (stage "side").
func (t *Trainer) sideWork() {
	n, seed := t.opts.Side.SampleTokens, t.opts.Seed+uint64(t.step)
	if n > 0 {
		t.Sample(n, seed)
	}
	params, m, v := t.Param.Memory, t.M.Memory, t.V.Memory
	if t.tape != nil {
		P := len(params)
		buf := t.tape.stage(params, m, v)
		params, m, v = buf[:P:P], buf[P:2*P:2*P], buf[2*P:]
	}
	if err := t.writeCheckpointFrom(io.Discard, params, m, v); err != nil {
		t.fail(err)
	}
	t.sideRuns++
}
