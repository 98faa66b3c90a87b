package allocsite

import (
	"runtime"
	"testing"
)

func frames(fns ...string) []runtime.Frame {
	out := make([]runtime.Frame, len(fns))
	for i, f := range fns {
		out[i] = runtime.Frame{Function: f, File: "f.go", Line: i + 1}
	}
	return out
}

// TestClassifyFrames: the site is the first frame past the allocation
// entry points; runtime sites name the code that led to them; the innermost
// frame of the module decides program against probe; a helper that
// allocates for its caller is passed over.
func TestClassifyFrames(t *testing.T) {
	own := []string{"memprobe/run/", "memprobe/instrument/", "memprobe/outside/"}
	helpers := []string{"memprobe/ledger."}
	for _, c := range []struct {
		name       string
		frames     []runtime.Frame
		class, fn  string
		calledFrom string
	}{
		{"trainer make", frames("runtime.mallocgc", "runtime.makeslice", "memprobe/trainer.(*Trainer).stepBody", "memprobe/trainer.(*Trainer).Step"),
			Program, "memprobe/trainer.(*Trainer).stepBody", ""},
		{"sudog on channel receive", frames("runtime.mallocgc", "runtime.newobject", "runtime.acquireSudog", "runtime.chanrecv", "runtime.chanrecv2", "memprobe/trainer.(*worker).loop"),
			Runtime, "runtime.acquireSudog", "memprobe/trainer.(*worker).loop"},
		{"sudog in sync.Cond", frames("runtime.newobject", "runtime.acquireSudog", "internal/sync.runtime_notifyListWait", "sync.(*Cond).Wait", "memprobe/trainer.(*execPool).acquire"),
			Runtime, "runtime.acquireSudog", "memprobe/trainer.(*execPool).acquire"},
		{"new thread", frames("runtime.mallocgc", "runtime.newobject", "runtime.allocm", "runtime.newm", "runtime.startm", "runtime.handoffp"),
			Runtime, "runtime.allocm", ""},
		{"progress line", frames("runtime.mallocgc", "runtime.growslice", "fmt.(*buffer).write", "fmt.(*pp).doPrintf", "fmt.Fprintf", "memprobe/run/job.Run.func1", "memprobe/trainer.(*Trainer).Train"),
			Probe, "fmt.(*buffer).write", ""},
		{"map growth in the trainer", frames("runtime.mallocgc", "internal/runtime/maps.newarray", "internal/runtime/maps.(*Map).growToTable", "runtime.mapassign_fast64", "memprobe/trainer/data.build"),
			Program, "memprobe/trainer/data.build", ""},
		{"outside the module", frames("runtime.mallocgc", "runtime.newobject", "encoding/json.Marshal", "main.main"),
			Program, "encoding/json.Marshal", ""},
		// The ledger is in the probe's tree but allocates for its caller:
		// the tape's per-step buffers are the program's, at the tape.
		{"through the ledger", frames("runtime.mallocgc", "runtime.makeslice", "memprobe/ledger.Make[...]", "memprobe/ledger.(*Account).Float32s", "memprobe/trainer/tape.(*Heap).Float32s", "memprobe/trainer/tape.Forward"),
			Program, "memprobe/trainer/tape.(*Heap).Float32s", ""},
		{"the probe's own use of the ledger", frames("runtime.mallocgc", "runtime.makeslice", "memprobe/ledger.Make[...]", "memprobe/run/job.(*instruments).setUp"),
			Probe, "memprobe/run/job.(*instruments).setUp", ""},
		// The standard library inside a helper, for the probe: the peak
		// reconciliation's ledger snapshot sorts (sort.Slice's swapper).
		{"the standard library inside a helper", frames("runtime.mallocgc", "runtime.newobject", "internal/reflectlite.Swapper", "sort.Slice", "memprobe/ledger.(*Ledger).Snapshot", "memprobe/instrument/reconcile.GatherSelf", "memprobe/run/job.(*instruments).reconcile"),
			Probe, "internal/reflectlite.Swapper", ""},
	} {
		s := classifyFrames(c.frames, own, helpers)
		if s.Class != c.class || s.Function != c.fn || s.CalledFrom != c.calledFrom {
			t.Errorf("%s: got %s %s from %q, want %s %s from %q", c.name, s.Class, s.Function, s.CalledFrom, c.class, c.fn, c.calledFrom)
		}
	}
}

func TestScale(t *testing.T) {
	// At rate r an object of r bytes is sampled with probability 1−1/e.
	c := scale(counts{objects: 100, bytes: 100 * 512}, 512)
	if c.objects < 157 || c.objects > 159 {
		t.Errorf("scaled objects %d, want about 158", c.objects)
	}
}
