package main

import (
	"github.com/spf13/pflag"

	"memprobe/probe/job"
)

// phaseFlags select a documented plan and phase and the knobs the probe
// sweeps (issue 4). Filled in by the phases work.
type phaseFlags struct{}

func (f *phaseFlags) register(fs *pflag.FlagSet) {}

// apply sets the trainer options the flags select; it runs after the
// generic flags are turned into o, and may override them.
func (f *phaseFlags) apply(o *job.Options) error { return nil }
