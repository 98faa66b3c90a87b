package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"memprobe/instrument/profiling"
	"memprobe/instrument/sampler"
	"memprobe/run/job"
)

// instrumentFlags switch the instruments and pprof hooks (see
// docs/instruments.md).
type instrumentFlags struct {
	fs             *pflag.FlagSet
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
	fs.IntVar(&f.warmup, "warmup-steps", job.DefaultWarmupSteps, "steps left out of the per-step runtime costs (0: none)")
	fs.StringVar(&f.cpu, "cpuprofile", "", "write a CPU profile (pprof) of the job to this file")
	fs.StringVar(&f.mem, "memprofile", "", "write a heap profile at the end to this file, and heap profiles at the live heap's peaks beside it")
	fs.StringVar(&f.allocs, "allocprofile", "", "write the allocation profile (every sampled allocation since start) to this file")
	fs.StringVar(&f.mutex, "mutexprofile", "", "write a mutex contention profile to this file (turns mutex profiling on)")
	fs.StringVar(&f.block, "blockprofile", "", "write a blocking profile to this file (turns block profiling on)")
	fs.StringVar(&f.dir, "profile-dir", "", "write every profile (cpu, heap, heap peaks, allocs, mutex, block) into this directory as NAME.KIND.pprof")
	fs.StringVar(&f.name, "profile-name", "", `NAME of the profile files (default "<plan>-<phase>" with --plan, else "default")`)
	fs.IntVar(&f.peakProfiles, "heap-peak-profiles", profiling.DefaultPeakMax, "at most this many heap profiles at live-heap peaks (0: none)")
	fs.IntVar(&f.memRate, "memprofile-rate", 0, "bytes allocated per sampled allocation in the heap and allocs profiles, from the job's start (1: every allocation; 0: Go's default, 512 KiB)")
	fs.StringVar(&f.pprofAddr, "pprof-addr", "", "serve net/http/pprof on this loopback host:port while training, e.g. 127.0.0.1:6060")
	fs.BoolVar(&f.allowRemote, "pprof-allow-remote", false, "let --pprof-addr listen on a non-loopback address (exposes the process to the network)")
}

// apply sets the instrument and profiling options. Their ranges are
// job.Options.Validate's, but a 0 there means the default: a 0 given
// explicitly, below the documented minimum, is refused here.
func (f *instrumentFlags) apply(o *job.Options) error {
	changed := func(name string) bool { return f.fs != nil && f.fs.Changed(name) }
	if changed("sample-interval") && f.sampleInterval == 0 {
		return fmt.Errorf("--sample-interval 0s is below the minimum %v", sampler.MinInterval)
	}
	if changed("sample-max-points") && f.samplePoints == 0 {
		return fmt.Errorf("--sample-max-points 0 must be >= 2")
	}
	o.NoInstruments = f.off
	o.SampleInterval = f.sampleInterval
	o.SampleMaxPoints = f.samplePoints
	o.WarmupSteps = f.warmup
	p := &o.Profiling
	p.Name = f.name
	p.Dir = f.dir
	p.CPU, p.Heap, p.Allocs, p.Mutex, p.Block = f.cpu, f.mem, f.allocs, f.mutex, f.block
	p.PeakMax = f.peakProfiles
	p.PprofAddr, p.AllowRemote = f.pprofAddr, f.allowRemote
	p.MemProfileRate = f.memRate
	return nil
}
