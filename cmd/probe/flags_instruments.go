package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"memprobe/probe/job"
	"memprobe/probe/sampler"
)

// instrumentFlags switch the instruments and pprof hooks (see
// docs/instruments.md).
type instrumentFlags struct {
	fs *pflag.FlagSet

	off            bool
	sampleInterval time.Duration
	samplePoints   int
	warmup         int

	cpu, mem, allocs, mutex, block string
	dir, name                      string
	peakProfiles                   int
	memRate                        int
	pprofAddr                      string
	allowRemote                    bool
}

func (f *instrumentFlags) register(fs *pflag.FlagSet) {
	f.fs = fs
	fs.BoolVar(&f.off, "no-instruments", false, "turn the instruments off (no ledger, sampler, runtime counters or RSS reconciliation): the overhead baseline")
	fs.DurationVar(&f.sampleInterval, "sample-interval", sampler.DefaultInterval, "RSS sampler period (minimum 1ms)")
	fs.IntVar(&f.samplePoints, "sample-max-points", sampler.DefaultMaxPoints, "bound on the sampler's timeline in the JSON (>= 2)")
	fs.IntVar(&f.warmup, "warmup-steps", 1, "steps left out of the per-step runtime costs (0: none)")
	fs.StringVar(&f.cpu, "cpuprofile", "", "write a CPU profile (pprof) of the job to this file")
	fs.StringVar(&f.mem, "memprofile", "", "write a heap profile at the end to this file, and heap profiles at the live heap's peaks beside it")
	fs.StringVar(&f.allocs, "allocprofile", "", "write the allocation profile (every sampled allocation since start) to this file")
	fs.StringVar(&f.mutex, "mutexprofile", "", "write a mutex contention profile to this file (turns mutex profiling on)")
	fs.StringVar(&f.block, "blockprofile", "", "write a blocking profile to this file (turns block profiling on)")
	fs.StringVar(&f.dir, "profile-dir", "", "write every profile (cpu, heap, heap peaks, allocs, mutex, block) into this directory as NAME.KIND.pprof")
	fs.StringVar(&f.name, "profile-name", "", `NAME of the profile files (default "<plan>-<phase>" with --plan, else "default")`)
	fs.IntVar(&f.peakProfiles, "heap-peak-profiles", 8, "at most this many heap profiles at live-heap peaks (0: none)")
	fs.IntVar(&f.memRate, "memprofile-rate", 0, "bytes allocated per sampled allocation in the heap and allocs profiles, from the job's start (1: every allocation; 0: Go's default, 512 KiB)")
	fs.StringVar(&f.pprofAddr, "pprof-addr", "", "serve net/http/pprof on this loopback host:port while training, e.g. 127.0.0.1:6060")
	fs.BoolVar(&f.allowRemote, "pprof-allow-remote", false, "let --pprof-addr listen on a non-loopback address (exposes the process to the network)")
}

func (f *instrumentFlags) apply(o *job.Options) error {
	if f.sampleInterval < sampler.MinInterval {
		return fmt.Errorf("--sample-interval %v is below the minimum %v", f.sampleInterval, sampler.MinInterval)
	}
	if f.samplePoints < 2 {
		return fmt.Errorf("--sample-max-points %d must be >= 2", f.samplePoints)
	}
	if f.warmup < 0 {
		return fmt.Errorf("--warmup-steps %d must be >= 0", f.warmup)
	}
	if f.peakProfiles < 0 {
		return fmt.Errorf("--heap-peak-profiles %d must be >= 0", f.peakProfiles)
	}
	if f.memRate < 0 {
		return fmt.Errorf("--memprofile-rate %d must be >= 0", f.memRate)
	}
	if f.allowRemote && f.pprofAddr == "" {
		return fmt.Errorf("--pprof-allow-remote needs --pprof-addr")
	}
	o.NoInstruments = f.off
	o.SampleInterval = f.sampleInterval
	o.SampleMaxPoints = f.samplePoints
	o.WarmupSteps = f.warmup
	if f.warmup == 0 {
		o.WarmupSteps = -1 // job: 0 is the default (1), -1 none
	}
	if o.Label == "" {
		o.Label = f.planPhase()
	}
	p := &o.Profiling
	p.Name = f.name
	p.Dir = f.dir
	p.CPU, p.Heap, p.Allocs, p.Mutex, p.Block = f.cpu, f.mem, f.allocs, f.mutex, f.block
	p.PeakMax = f.peakProfiles
	if f.peakProfiles == 0 {
		p.PeakMax = -1 // profiling: 0 is the default, negative none
	}
	p.PprofAddr, p.AllowRemote = f.pprofAddr, f.allowRemote
	p.MemProfileRate = f.memRate
	return nil
}

// planPhase is "<plan>-<phase>" from the phase flags registered on the
// same flag set, or "" without them.
func (f *instrumentFlags) planPhase() string {
	if f.fs == nil {
		return ""
	}
	get := func(name string) string {
		if fl := f.fs.Lookup(name); fl != nil {
			return fl.Value.String()
		}
		return ""
	}
	plan, phase := get("plan"), get("phase")
	if plan == "" || phase == "" {
		return ""
	}
	return plan + "-" + phase
}
