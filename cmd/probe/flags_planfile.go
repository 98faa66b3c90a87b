package main

import (
	"fmt"
	"os"
	"strings"

	"memprobe/run/planfile"
	"memprobe/run/runner"
	"memprobe/schema"
)

// planFileFlags are the flags of the built-in plans that a plan file
// replaces: given with --plan-file, they are a usage error rather than
// silently ignored.
var planFileFlags = []string{"plan", "threads", "preset", "steps", "data", "quick"}

// planFileOptions turns --plan-file and its --sweep of the plan's
// variables into o.PlanFile. Everything wrong with the file is found
// here, before any child starts, as "FILE:LINE: what is wrong".
func (f *runFlags) planFileOptions(o *runner.Options) error {
	for _, name := range planFileFlags {
		if f.fs != nil && f.fs.Changed(name) {
			return fmt.Errorf("--%s does not apply to --plan-file %s: its phases are its own programs (set their arguments in the file, or sweep its variables with --sweep NAME=V1,V2)", name, f.planFile)
		}
	}
	var sweeps []planfile.Sweep
	for _, s := range f.sweeps {
		sw, err := planfile.ParseSweep(s)
		if err != nil {
			return err
		}
		sweeps = append(sweeps, sw)
	}
	p, err := planfile.Load(f.planFile, sweeps)
	if err != nil {
		return err
	}
	o.PlanFile = p
	o.Sweep = nil
	return nil
}

// planFileOut is the default report file of a plan file's run:
// probe-<plan>-<short commit>.json, apart from the built-in plans'.
func planFileOut(env schema.Environment, plan string) string {
	return "probe-" + plan + "-" + strings.TrimPrefix(runner.DefaultOut(env), "probe-")
}

// getenv is how --shard auto reads the scheduler's variables.
var getenv = os.Getenv
