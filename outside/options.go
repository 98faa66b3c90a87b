package outside

import (
	"fmt"
	"io"
	"net/url"
	"time"

	"memprobe/instrument/procfs"
	"memprobe/instrument/sampler"
)

// Defaults of Options.
const (
	DefaultInterval   = sampler.DefaultInterval
	DefaultSmapsEvery = time.Second
	// DefaultMaxInterval is how far the sampler's period backs off while
	// the program's memory stands still (Options.MaxInterval).
	DefaultMaxInterval = 100 * time.Millisecond
	// walkBudget caps the CPU of full smaps walks as a share of wall
	// time: after a walk that took d of CPU, the next waits at least
	// d/walkBudget.
	walkBudget = 0.01
	// highWalkRise and highWalkBudget are the rule of the walks at new
	// highs (Options.SmapsEvery).
	highWalkRise   = 0.10
	highWalkBudget = 0.05
	// highWalkSettled is the rise above the highest walk that is walked
	// once RSS stops rising. At 1 % a program whose RSS creeps (the
	// stress program: 40 to 52 MiB in a second, read unchanged at one
	// sample in three, as the kernel batches VmRSS) was walked at every
	// percent it crept; each walk holds the program's mmap lock.
	highWalkSettled = 0.03
	// earlyHighWalkBudget is highWalkBudget in a run's first earlyWalks:
	// a JVM's walk costs 7 ms of CPU, and at 5 % java's 0.17 s run had
	// one walk, at 45.7 MiB of a 140.7 MiB peak.
	earlyHighWalkBudget = 0.25
	earlyWalks          = time.Second
)

// Options configures a watch. The zero value samples every 10 ms and
// walks smaps at most every second.
type Options struct {
	// Interval is the sampler's period; 0 means DefaultInterval, below
	// sampler.MinInterval is an error.
	Interval time.Duration
	// MaxInterval is how far the period backs off while RSS stands still
	// (sampler.Options.MaxInterval): it doubles at each sample that reads
	// RSS and VmHWM within 1 MiB or 1 % of the sample before, halves at
	// one that moves more, and comes back to Interval at one that moves
	// by a tenth. A wake
	// of the probe costs a program that keeps every core busy far more
	// than the probe's own CPU. 0 means DefaultMaxInterval or Interval,
	// whichever is longer; below Interval is an error.
	MaxInterval time.Duration
	// SmapsEvery is the least time between two full smaps walks taken
	// because RSS moved; 0 means DefaultSmapsEvery, or Interval where that
	// is longer (a walk cannot come more often than a sample). Such a walk
	// is taken when RSS has reached a new high (by 1 MiB and 0.5 %) or
	// moved that much since the last walk.
	//
	// A new high more than 10 % (and 1 MiB) above the highest RSS walked
	// is walked sooner, without waiting for SmapsEvery, and so is one 3 %
	// above it once RSS stops rising (no higher than at the sample
	// before: a peak or a plateau): as soon as the last walk's CPU d has
	// been followed by 20 d (these walks take at most 5 % of one CPU).
	// Those at 10 % are few (24 from 100 MiB to 1 GiB, costing about 10
	// times the last one); the budget bounds the others. The breakdown is
	// then taken near the peak even of a program that peaks and frees it
	// within a second, before the SmapsEvery spacing would have allowed a
	// walk; these walks do not put off the next regular one.
	SmapsEvery time.Duration
	// Children watches the process's descendants too: their peaks, and
	// the tree's summed RSS.
	Children bool
	// NoGPU skips NVML. Otherwise, where libnvidia-ml opens (gpumem), the
	// process's GPU memory, its GPUs' utilization and its own are read every
	// gpumem.DefaultInterval; where it does not (no NVIDIA driver), the
	// result has no GPU section and says nothing of it.
	NoGPU bool
	// OutDir, when set, receives smaps-peak.txt and smaps-end.txt (the raw
	// walks behind the reconciliations) and the heap profile of PprofURL.
	OutDir string
	// PprofURL is a Go program's net/http/pprof heap endpoint (e.g.
	// http://127.0.0.1:6060/debug/pprof/heap): fetched at each new peak
	// walk (at most once a second) into OutDir/heap-peak.pprof.
	PprofURL string
	// CommandLine is the probe's own command line, for the result.
	CommandLine []string
	// Progress, when set, gets one line per walk.
	Progress io.Writer
	// FS is where /proc is read; the zero FS is /proc.
	FS procfs.FS
	// Sites records the allocation sites (exec only; sites.go).
	Sites SitesOptions

	// noHighWalks turns the walks at new highs off (tests: the old
	// behaviour, and walks only where the test takes them).
	noHighWalks bool
}

func (o *Options) defaults() error {
	switch {
	case o.Interval == 0:
		o.Interval = DefaultInterval
	case o.Interval < sampler.MinInterval:
		return fmt.Errorf("interval %v is below the minimum %v", o.Interval, sampler.MinInterval)
	}
	switch {
	case o.MaxInterval == 0:
		o.MaxInterval = max(DefaultMaxInterval, o.Interval)
	case o.MaxInterval < o.Interval:
		return fmt.Errorf("max interval %v is below the interval %v", o.MaxInterval, o.Interval)
	}
	switch {
	case o.SmapsEvery == 0:
		// Left to the default, it follows a long interval rather than
		// refusing it: the caller did not ask for this period.
		o.SmapsEvery = max(DefaultSmapsEvery, o.Interval)
	case o.SmapsEvery < o.Interval:
		return fmt.Errorf("smaps-every %v is below the interval %v", o.SmapsEvery, o.Interval)
	}
	if err := o.Sites.check(o.OutDir); err != nil {
		return err
	}
	if o.PprofURL != "" {
		if err := checkPprofURL(o.PprofURL); err != nil {
			return err
		}
		if o.OutDir == "" {
			return fmt.Errorf("pprof %s: needs an out-dir to write the heap profile to", o.PprofURL)
		}
	}
	return nil
}

// checkPprofURL refuses a --pprof that cannot be fetched at all (not an
// http or https URL with a host), at the start rather than as a warning
// at the first peak, seconds or hours into the run.
func checkPprofURL(s string) error {
	u, err := url.Parse(s)
	if err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		return nil
	}
	return fmt.Errorf("pprof %q: not an http(s) URL with a host (want e.g. http://127.0.0.1:6060/debug/pprof/heap)", s)
}

// Validate checks o as New would: for flag handling, before any work.
func (o Options) Validate() error { return o.defaults() }
