package trainer

import (
	"fmt"
	"io"

	"memprobe/trainer/decode"
	"memprobe/trainer/device"
)

// How a sequence runs. Options.Exec picks the engine (engine.go): "static"
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
	params, m, v := t.engine.stage(t.Param.Memory, t.M.Memory, t.V.Memory)
	if err := t.writeCheckpointFrom(io.Discard, params, m, v); err != nil {
		t.fail(err)
	}
	t.sideRuns++
}
