package main

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"memprobe/run/job"
	"memprobe/trainer"
	"memprobe/trainer/phase"
)

// phaseFlags select a documented plan and phase and the knobs the probe
// sweeps. A knob given explicitly overrides what the phase sets.
type phaseFlags struct {
	fs          *pflag.FlagSet
	plan, phase string
	list        bool
	cacheScale  float64
	batchAlloc  string
	workerStack string
	engine      string
}

func (f *phaseFlags) register(fs *pflag.FlagSet) {
	f.fs = fs
	fs.StringVar(&f.plan, "plan", "", "documented fix plan: threads, arena, embedding or decode (see --list-phases)")
	fs.StringVar(&f.phase, "phase", "", "phase of --plan: before, P1, P2, ... (cumulative: Pk applies fixes 1..k), or after (the plan's fixed state, its last phase)")
	fs.BoolVar(&f.list, "list-phases", false, "print the plans and their phases, one line each, and exit")
	fs.Float64Var(&f.cacheScale, "cache-scale", 1, "caches as a factor of right-sized, 1 to 64")
	fs.StringVar(&f.batchAlloc, "batch-alloc", "lazy", "batches: lazy (one, refilled each step) or eager (a whole epoch up front)")
	fs.StringVar(&f.workerStack, "worker-stack", "0", "0: goroutine workers; else each worker on its own pthread with this stack (64KiB to 1GiB; units as for sizes: KiB, MiB, GiB, KB, MB, ...)")
	fs.StringVar(&f.engine, "engine", "static", "how a sequence runs: static (preallocated workspaces) or tape (op-by-op autograd)")
}

// listPhases handles --list-phases: it writes the list to w and reports
// true, after which the command must stop. The command calls it before
// building the options.
func (f *phaseFlags) listPhases(w io.Writer) (bool, error) {
	if !f.list {
		return false, nil
	}
	return true, phase.List(w)
}

// apply sets the trainer options the flags select; it runs after the
// generic flags are turned into o, and may override them.
func (f *phaseFlags) apply(o *job.Options) error {
	t := &o.Trainer
	switch {
	case f.plan != "" && f.phase == "":
		p, err := phase.Lookup(f.plan)
		if err != nil {
			return fmt.Errorf("--plan: %w", err)
		}
		return fmt.Errorf("--plan %s needs --phase (one of %s)", f.plan, phaseNames(p))
	case f.plan == "" && f.phase != "":
		return fmt.Errorf("--phase %s needs --plan (see --list-phases)", f.phase)
	case f.plan != "":
		p, err := phase.Lookup(f.plan)
		if err != nil {
			return fmt.Errorf("--plan: %w", err)
		}
		if err := p.Configure(t, f.phase); err != nil {
			return fmt.Errorf("--phase: %w", err)
		}
		o.Phase = p.Resolve(f.phase) // "after" is recorded as the phase it names
	}
	changed := func(name string) bool { return f.fs != nil && f.fs.Changed(name) }
	if changed("cache-scale") {
		// 0 in the options means the right-sized default: given
		// explicitly it is out of the documented range, not the default.
		if f.cacheScale == 0 {
			return fmt.Errorf("--cache-scale 0 out of range [1, %d]", trainer.MaxCacheScale)
		}
		t.Pathology.CacheScale = f.cacheScale
	}
	if changed("batch-alloc") {
		eager, err := phase.BatchAlloc(f.batchAlloc)
		if err != nil {
			return err
		}
		t.Pathology.EagerBatches = eager
	}
	if changed("worker-stack") {
		n, err := phase.WorkerStack(f.workerStack)
		if err != nil {
			return err
		}
		t.Pathology.WorkerStackBytes = n
	}
	if changed("engine") {
		if f.engine == "" { // "" in the options is static
			return fmt.Errorf(`--engine "": want static or tape`)
		}
		t.Engine = f.engine
	}
	return nil
}

func phaseNames(p phase.Plan) string {
	s := ""
	for i, ph := range p.Phases {
		if i > 0 {
			s += ", "
		}
		s += ph.Name
	}
	return s
}
