// Package sampler watches a process's memory over time: on Linux the
// /proc/<pid>/statm, status and smaps_rollup fields that
// [memprobe/probe/procfs] parses (RSS is statm's resident, VmRSS of status;
// VSZ is statm's size, VmSize: the counters gopsutil reads), elsewhere RSS
// and VSZ from gopsutil.
//
// It is the second stage of the probe: procfs reads one moment, sampler
// turns moments into a bounded timeline and the peak of every field, and
// [memprobe/probe/reconcile] explains one moment in detail.
//
// The sampler reads from outside, by pid, so it works on a child process as
// well as on itself. Start takes the first sample before it returns (so a
// bad pid is an error at once); Stop takes a last one (so a run shorter than
// the interval still has a value).
//
// Cost. Every sample reads statm (about a microsecond); every StatusEvery-th
// reads status (tens of microseconds); smaps_rollup, whose page walk takes
// milliseconds on a large process, is read at most every SmapsEvery samples
// and within SmapsBudget of wall time. Fields not read in a sample are
// carried forward from the last read. Result.CostMs says what the sampling
// took. On Linux a sample allocates nothing: the files are re-read through
// descriptors kept open into reused buffers (procfs.StatusReader and
// friends), and the timeline's storage is allocated once. When the sampler
// watches its own process it is one of its goroutines, so this keeps it out
// of the process-wide allocation counters that per-step costs are derived
// from.
package sampler

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shirou/gopsutil/v4/process"

	"memprobe/probe/procfs"
)

// Defaults and limits of Options.
const (
	DefaultInterval   = 10 * time.Millisecond
	MinInterval       = time.Millisecond
	DefaultSmapsEvery = 10
	// DefaultStatusEvery: status every 10th sample; statm, which holds
	// RSS and VSZ, on every one.
	DefaultStatusEvery = 10
	// DefaultSmapsBudget caps smaps_rollup reads at 0.25 % of wall time.
	DefaultSmapsBudget = 0.0025
	DefaultMaxPoints   = 512
)

// Options configures a Sampler. The zero value samples the calling process
// every 10 ms.
type Options struct {
	// PID is the process to sample; 0 means the calling process.
	PID int
	// Interval between samples; 0 means DefaultInterval. Below
	// MinInterval is an error.
	Interval time.Duration
	// SmapsEvery reads smaps_rollup every SmapsEvery-th sample (it walks
	// every mapping, so it is much dearer than status); 0 means
	// DefaultSmapsEvery, negative never reads it.
	SmapsEvery int
	// StatusEvery reads /proc/<pid>/status every StatusEvery-th sample
	// (and always on the first and the last); the samples between take
	// RSS and VSZ from statm, which costs about a microsecond where
	// status costs tens, and carry the other status fields forward. VmHWM
	// is a running maximum, so its peak loses nothing. 0 means
	// DefaultStatusEvery; 1 reads status every time. Where statm cannot
	// be opened (a fixture tree), status is read every time.
	StatusEvery int
	// SmapsBudget caps the share of wall time spent reading smaps_rollup:
	// its page walk costs milliseconds on a process with a large resident
	// set (7.6 ms on the seed preset's 145 MiB, on a loaded machine), so
	// after a read that took d the next one waits at least d/SmapsBudget
	// as well as SmapsEvery samples. 0 means DefaultSmapsBudget; negative
	// means no cap.
	SmapsBudget float64
	// MaxPoints bounds the timeline; 0 means DefaultMaxPoints, and it must
	// otherwise be at least 2.
	MaxPoints int
	// FS is where the Linux-only fields are read; the zero FS is /proc.
	FS procfs.FS
}

// Result is what a sampling run saw.
type Result struct {
	// PID is the process sampled.
	PID int `json:"pid"`
	// Peaks is the field-wise maximum over every sample, not just the
	// timeline's points; TMs is 0 and Samples the sample count.
	Peaks Point `json:"peaks"`
	// Timeline is at most MaxPoints points; each is the field-wise maximum
	// of the Samples samples it covers. Never nil.
	Timeline []Point `json:"timeline"`
	// Samples is the number of samples taken.
	Samples int `json:"samples"`
	// StatusSamples and SmapsSamples are how many of them read status and
	// smaps_rollup (the others carry those fields forward).
	StatusSamples int `json:"status_samples"`
	SmapsSamples  int `json:"smaps_samples"`
	// IntervalMs is the requested interval, in milliseconds.
	IntervalMs float64 `json:"interval_ms"`
	// DurationMs is the time from the first sample to the last.
	DurationMs float64 `json:"duration_ms"`
	// CostMs is the wall time spent taking samples (reading /proc, most
	// of it in the kernel), and SmapsCostMs its smaps_rollup part: the
	// sampler's own cost, to set against DurationMs.
	CostMs      float64 `json:"cost_ms"`
	SmapsCostMs float64 `json:"smaps_cost_ms"`
	// Warnings are problems that did not stop the run, e.g. the process
	// exited before Stop; never nil.
	Warnings []string `json:"warnings"`
}

// Sampler samples one process. Start and Stop are each called once.
type Sampler struct {
	opts   Options
	proc   *process.Process // non-Linux only
	linux  bool
	status *procfs.StatusReader
	statm  *procfs.StatmReader // nil: status on every sample
	smapsR *procfs.SmapsRollupReader
	st     procfs.Status // last status read, reused

	start  time.Time
	stop   context.CancelFunc
	done   chan struct{}
	paused atomic.Bool

	// Owned by the sampling goroutine until done is closed, then by Stop.
	mu        sync.Mutex // guards the fields below against Peek
	tl        *Timeline
	peaks     Point
	n         int
	nSmaps    int
	smapsAt   time.Duration // when the last smaps_rollup read started (since start)
	smapsN    int           // sample number of that read
	smapsGap  time.Duration // least time to the next read (the budget)
	cost      time.Duration // time spent in sample
	smapsCost time.Duration
	nStatus   int
	sm        procfs.Statm
	final     bool
	smaps     procfs.SmapsRollup
	last      time.Duration
	warnings  []string
}

// New checks opts and returns a Sampler that has not started.
func New(opts Options) (*Sampler, error) {
	switch {
	case opts.Interval == 0:
		opts.Interval = DefaultInterval
	case opts.Interval < MinInterval:
		return nil, fmt.Errorf("sampler: interval %v is below the minimum %v", opts.Interval, MinInterval)
	}
	if opts.SmapsEvery == 0 {
		opts.SmapsEvery = DefaultSmapsEvery
	}
	if opts.StatusEvery <= 0 {
		opts.StatusEvery = DefaultStatusEvery
	}
	if opts.SmapsBudget == 0 {
		opts.SmapsBudget = DefaultSmapsBudget
	}
	switch {
	case opts.MaxPoints == 0:
		opts.MaxPoints = DefaultMaxPoints
	case opts.MaxPoints < 2:
		return nil, fmt.Errorf("sampler: max points %d is below the minimum 2", opts.MaxPoints)
	}
	if opts.PID < 0 {
		return nil, fmt.Errorf("sampler: negative pid %d", opts.PID)
	}
	if opts.PID == 0 {
		opts.PID = os.Getpid()
	}
	return &Sampler{
		opts:  opts,
		linux: runtime.GOOS == "linux",
		tl:    NewTimeline(opts.MaxPoints),
		done:  make(chan struct{}),
	}, nil
}

// Start takes the first sample, then samples every interval until ctx is
// done or Stop is called. It fails if the process cannot be read.
func (s *Sampler) Start(ctx context.Context) error {
	if s.stop != nil {
		return fmt.Errorf("sampler: pid %d: already started", s.opts.PID)
	}
	if s.linux {
		st, err := s.opts.FS.OpenStatus(s.opts.PID)
		if err != nil {
			return fmt.Errorf("sampler: pid %d: %w", s.opts.PID, err)
		}
		s.status = st
		if sm, err := s.opts.FS.OpenStatm(s.opts.PID); err == nil {
			s.statm = sm
		}
		if s.opts.SmapsEvery > 0 {
			sm, err := s.opts.FS.OpenSmapsRollup(s.opts.PID)
			if err != nil {
				st.Close()
				return fmt.Errorf("sampler: pid %d: %w", s.opts.PID, err)
			}
			s.smapsR = sm
		}
	} else {
		p, err := process.NewProcessWithContext(ctx, int32(s.opts.PID))
		if err != nil {
			return fmt.Errorf("sampler: pid %d: %w", s.opts.PID, err)
		}
		s.proc = p
	}
	s.start = time.Now()
	if err := s.sample(ctx); err != nil {
		s.closeFiles()
		return fmt.Errorf("sampler: pid %d: %w", s.opts.PID, err)
	}
	ctx, s.stop = context.WithCancel(ctx)
	go s.loop(ctx)
	return nil
}

func (s *Sampler) loop(ctx context.Context) {
	defer close(s.done)
	tick := time.NewTicker(s.opts.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if s.paused.Load() {
				continue
			}
			if err := s.sample(ctx); err != nil {
				s.warn(fmt.Sprintf("sampling stopped after %d samples: %v", s.n, err))
				return
			}
		}
	}
}

// Stop ends sampling, takes a final sample and returns what was seen. If
// the final sample fails (the process has exited) that is a warning, not an
// error. Calling Stop before a successful Start is an error.
func (s *Sampler) Stop() (Result, error) {
	if s.stop == nil {
		return Result{}, fmt.Errorf("sampler: pid %d: Stop before Start", s.opts.PID)
	}
	s.stop()
	<-s.done
	s.final = true // read status: the last VmHWM is exact
	if err := s.sample(context.Background()); err != nil {
		s.warn(fmt.Sprintf("final sample: %v", err))
	}
	s.closeFiles()
	return s.result(), nil
}

func (s *Sampler) closeFiles() {
	if s.status != nil {
		s.status.Close()
	}
	if s.smapsR != nil {
		s.smapsR.Close()
	}
	if s.statm != nil {
		s.statm.Close()
	}
}

// SetPaused stops (true) or resumes (false) the periodic samples without
// ending the run; Stop still takes its final sample. It exists to measure
// what sampling costs, step against step, in one process.
func (s *Sampler) SetPaused(p bool) { s.paused.Store(p) }

// Peek returns what has been seen so far without stopping.
func (s *Sampler) Peek() Result { return s.result() }

func (s *Sampler) result() Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Result{
		PID:           s.opts.PID,
		Peaks:         s.peaks,
		Timeline:      s.tl.Points(),
		Samples:       s.n,
		StatusSamples: s.nStatus,
		SmapsSamples:  s.nSmaps,
		IntervalMs:    ms(s.opts.Interval),
		DurationMs:    ms(s.last),
		CostMs:        ms(s.cost),
		SmapsCostMs:   ms(s.smapsCost),
		Warnings:      append([]string{}, s.warnings...),
	}
}

func (s *Sampler) warn(w string) {
	s.mu.Lock()
	s.warnings = append(s.warnings, w)
	s.mu.Unlock()
}

// sample reads one Point and adds it to the timeline and peaks.
func (s *Sampler) sample(ctx context.Context) error {
	t0 := time.Now()
	t := t0.Sub(s.start)
	var p Point
	readSmaps, readStatus := false, false
	if !s.linux {
		mi, err := s.proc.MemoryInfoWithContext(ctx)
		if err != nil {
			return fmt.Errorf("reading memory info: %w", err)
		}
		p = Point{TMs: ms(t), RSSBytes: mi.RSS, VSZBytes: mi.VMS}
	} else {
		st := &s.st
		if s.statm == nil || s.n == 0 || s.final || s.n%s.opts.StatusEvery == 0 {
			if err := s.status.Read(st); err != nil {
				return err
			}
			readStatus = true
		}
		// VmRSS and VmSize are the kernel counters that statm prints as
		// resident and size, which is what gopsutil's MemoryInfo reads.
		p = Point{TMs: ms(t), RSSBytes: st.VmRSSBytes, VSZBytes: st.VmSizeBytes}
		if s.statm != nil {
			if err := s.statm.Read(&s.sm); err != nil {
				return err
			}
			p.RSSBytes, p.VSZBytes = s.sm.ResidentBytes, s.sm.SizeBytes
		}
		p.VmHWMBytes = st.VmHWMBytes
		p.VmPeakBytes = st.VmPeakBytes
		p.RssAnonBytes = st.RssAnonBytes
		p.RssFileBytes = st.RssFileBytes
		p.RssShmemBytes = st.RssShmemBytes
		p.VmStkBytes = st.VmStkBytes
		p.Threads = st.Threads
		readSmaps = s.smapsDue(t)
	}
	var sm procfs.SmapsRollup
	var d time.Duration // of the smaps_rollup read
	if readSmaps {
		t1 := time.Now()
		if err := s.smapsR.Read(&sm); err != nil {
			return err
		}
		d = time.Since(t1)
		s.smapsAt, s.smapsN = t, s.n
		if s.opts.SmapsBudget > 0 {
			s.smapsGap = time.Duration(float64(d) / s.opts.SmapsBudget)
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if readSmaps {
		s.smaps = sm
		s.nSmaps++
		s.smapsCost += d
	}
	if readStatus {
		s.nStatus++
	}
	p.PssBytes = s.smaps.PssBytes
	p.PrivateDirtyBytes = s.smaps.PrivateDirtyBytes
	p.PrivateCleanBytes = s.smaps.PrivateCleanBytes
	p.SharedDirtyBytes = s.smaps.SharedDirtyBytes
	p.SharedCleanBytes = s.smaps.SharedCleanBytes
	p.AnonymousBytes = s.smaps.AnonymousBytes
	p.SwapBytes = s.smaps.SwapBytes
	s.tl.Add(p)
	p.Samples = 1
	if s.n == 0 {
		s.peaks = p
	} else {
		s.peaks = MaxPoint(s.peaks, p)
	}
	s.peaks.TMs = 0
	s.n++
	s.last = t
	s.cost += time.Since(t0)
	return nil
}

// smapsDue reports whether the sample at t (since start) reads
// smaps_rollup: the first sample does, then one every SmapsEvery samples at
// the most often, and no sooner than the budget allows.
func (s *Sampler) smapsDue(t time.Duration) bool {
	switch {
	case s.opts.SmapsEvery <= 0:
		return false
	case s.nSmaps == 0:
		return true
	}
	return s.n-s.smapsN >= s.opts.SmapsEvery && t-s.smapsAt >= s.smapsGap
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
