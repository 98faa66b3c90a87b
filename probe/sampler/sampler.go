// Package sampler watches a process's memory over time: RSS and VSZ from
// gopsutil on every platform, and on Linux the /proc/<pid>/status and
// smaps_rollup fields that [memprobe/probe/procfs] parses.
//
// It is the second stage of the probe: procfs reads one moment, sampler
// turns moments into a bounded timeline and the peak of every field, and
// [memprobe/probe/reconcile] explains one moment in detail.
//
// The sampler reads from outside, by pid, so it works on a child process as
// well as on itself. Start takes the first sample before it returns (so a
// bad pid is an error at once); Stop takes a last one (so a run shorter than
// the interval still has a value).
package sampler

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/shirou/gopsutil/v4/process"

	"memprobe/probe/procfs"
)

// Defaults and limits of Options.
const (
	DefaultInterval   = 10 * time.Millisecond
	MinInterval       = time.Millisecond
	DefaultSmapsEvery = 10
	DefaultMaxPoints  = 512
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
	// SmapsSamples is how many of them read smaps_rollup.
	SmapsSamples int `json:"smaps_samples"`
	// IntervalMs is the requested interval, in milliseconds.
	IntervalMs float64 `json:"interval_ms"`
	// DurationMs is the time from the first sample to the last.
	DurationMs float64 `json:"duration_ms"`
	// Warnings are problems that did not stop the run, e.g. the process
	// exited before Stop; never nil.
	Warnings []string `json:"warnings"`
}

// Sampler samples one process. Start and Stop are each called once.
type Sampler struct {
	opts  Options
	proc  *process.Process
	linux bool

	start time.Time
	stop  context.CancelFunc
	done  chan struct{}

	// Owned by the sampling goroutine until done is closed, then by Stop.
	mu       sync.Mutex // guards the fields below against Peek
	tl       *Timeline
	peaks    Point
	n        int
	nSmaps   int
	smaps    procfs.SmapsRollup
	last     time.Duration
	warnings []string
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
	p, err := process.NewProcessWithContext(ctx, int32(s.opts.PID))
	if err != nil {
		return fmt.Errorf("sampler: pid %d: %w", s.opts.PID, err)
	}
	s.proc = p
	s.start = time.Now()
	if err := s.sample(ctx); err != nil {
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
	if err := s.sample(context.Background()); err != nil {
		s.warn(fmt.Sprintf("final sample: %v", err))
	}
	return s.result(), nil
}

// Peek returns what has been seen so far without stopping.
func (s *Sampler) Peek() Result { return s.result() }

func (s *Sampler) result() Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Result{
		PID:          s.opts.PID,
		Peaks:        s.peaks,
		Timeline:     s.tl.Points(),
		Samples:      s.n,
		SmapsSamples: s.nSmaps,
		IntervalMs:   ms(s.opts.Interval),
		DurationMs:   ms(s.last),
		Warnings:     append([]string{}, s.warnings...),
	}
}

func (s *Sampler) warn(w string) {
	s.mu.Lock()
	s.warnings = append(s.warnings, w)
	s.mu.Unlock()
}

// sample reads one Point and adds it to the timeline and peaks.
func (s *Sampler) sample(ctx context.Context) error {
	t := time.Since(s.start)
	mi, err := s.proc.MemoryInfoWithContext(ctx)
	if err != nil {
		return fmt.Errorf("reading memory info: %w", err)
	}
	p := Point{TMs: ms(t), RSSBytes: mi.RSS, VSZBytes: mi.VMS}
	readSmaps := false
	if s.linux {
		st, err := s.opts.FS.ReadStatus(s.opts.PID)
		if err != nil {
			return err
		}
		p.VmHWMBytes = st.VmHWMBytes
		p.VmPeakBytes = st.VmPeakBytes
		p.RssAnonBytes = st.RssAnonBytes
		p.RssFileBytes = st.RssFileBytes
		p.RssShmemBytes = st.RssShmemBytes
		p.VmStkBytes = st.VmStkBytes
		p.Threads = st.Threads
		readSmaps = s.opts.SmapsEvery > 0 && s.n%s.opts.SmapsEvery == 0
	}
	var sm procfs.SmapsRollup
	if readSmaps {
		if sm, err = s.opts.FS.ReadSmapsRollup(s.opts.PID); err != nil {
			return err
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if readSmaps {
		s.smaps = sm
		s.nSmaps++
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
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
