// Package sampler watches a process's memory over time: on Linux the
// /proc/<pid>/status, smaps_rollup and statm fields that
// [memprobe/instrument/procfs] parses (RSS is VmRSS of status, statm's resident;
// VSZ is VmSize, statm's size: the counters gopsutil reads), elsewhere RSS
// and VSZ from gopsutil.
//
// It is the second stage of the probe: procfs reads one moment, sampler
// turns moments into a bounded timeline and the peak of every field, and
// [memprobe/instrument/reconcile] explains one moment in detail.
//
// The sampler reads from outside, by pid, so it works on a child process as
// well as on itself. Start takes the first sample before it returns (so a
// bad pid is an error at once); Stop takes a last one (so a run shorter than
// the interval still has a value).
//
// Cost. Every sample reads status (about 7 µs of kernel time; statm, which
// holds only RSS and VSZ, costs 1.5 µs, and Options.StatusEvery can make
// most samples read only statm); smaps_rollup, whose page walk takes
// milliseconds on a large process, is read at most every SmapsEvery samples
// and within SmapsBudget of wall time. A sample presents only what it read:
// a field of a file it did not read is 0, and the point's StatusSamples and
// SmapsSamples say which were read (nothing is carried forward from an
// earlier read, so no point mixes moments). Result.CostMs says what the
// sampling took. On Linux a sample allocates nothing: the files are re-read
// through descriptors kept open into reused buffers (procfs.StatusReader
// and friends), and the timeline's storage is allocated once. When the
// sampler watches its own process it is one of its goroutines, so this
// keeps it out of the process-wide allocation counters that per-step costs
// are derived from.
//
// Descriptors kept open can go stale while the process lives: one of
// smaps_rollup holds the address space it was opened on, and after the
// process calls execve (a shell's exec, a wrapper script's exec "$@") every
// read of it fails with ESRCH. A read that fails is retried once on freshly
// opened files when /proc/<pid>/stat says the same process (same start
// time) still lives; the sampler stops only when it is gone. A process
// without an address space (a zombie waiting to be reaped, or a process
// exiting) has no memory to sample: the sampler stops there too, so no
// point reads zero for an exited process. Without smaps_rollup (Linux
// before 4.14, or where it cannot be read) the sampler goes on without its
// fields, saying so in a warning.
package sampler

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/shirou/gopsutil/v4/process"

	"memprobe/instrument/procfs"
	"memprobe/schema"
)

// Defaults and limits of Options.
const (
	DefaultInterval   = 10 * time.Millisecond
	MinInterval       = time.Millisecond
	DefaultSmapsEvery = 10
	// DefaultStatusEvery: status on every sample. A sample's reads then
	// take about 9 to 13 µs in a loop, against 3 with status every tenth
	// (BenchmarkSample); in a watch, with cold caches, 70 to 90 µs, and
	// waking the probe for it costs several times that (docs/exec.md,
	// Cost). It is what gives every
	// point VmHWM, RssAnon/RssFile/RssShmem and the thread count of the
	// same moment as its RSS, and their peaks every sample's value.
	DefaultStatusEvery = 1
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
	// RSS and VSZ from statm, which costs 1.5 µs where status costs 7,
	// and have no status fields (their StatusSamples is 0: nothing is
	// carried forward). 0 means DefaultStatusEvery, every sample. Where
	// statm cannot be opened (a fixture tree), status is read every time.
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
	// MaxInterval, where above Interval, lets the period back off while
	// the process's memory stands still: after a sample whose RSS and
	// VmHWM are within 1 MiB or 1 % of the sample before's, the next waits
	// twice as long, up to MaxInterval; a move of more halves the period,
	// and one of a tenth brings it back to Interval at once. Each sample wakes the sampler,
	// and on a machine the program keeps busy the wake costs it more than
	// the read (docs/exec.md, Cost). The peaks stay exact through VmHWM,
	// which every status read and Stop's final sample carry. 0: every
	// Interval.
	MaxInterval time.Duration
	// OnSample, where set, is called with each periodic sample once it is
	// in the timeline (not the final one Stop takes), on the sampling
	// goroutine: it must return at once. It lets a caller act on a new
	// high within one interval, at no wakeup of its own.
	OnSample func(Point)
}

// Result is what a sampling run saw; package schema defines it, field by
// field, as part of the result's format.
type Result = schema.SamplerResult

// Exec is an execve the process made while sampled (schema.SamplerExec).
type Exec = schema.SamplerExec

// reader is a /proc file re-read through a descriptor kept open: one of
// procfs's StatusReader, StatmReader and SmapsRollupReader, or in tests a
// stand-in that fails on cue.
type reader[T any] interface {
	Read(*T) error
	Close() error
}

// files are the descriptors a sample reads.
type files struct {
	status reader[procfs.Status]
	statm  reader[procfs.Statm]       // nil: status on every sample
	smaps  reader[procfs.SmapsRollup] // nil: smaps_rollup is not read
}

func (f *files) close() {
	for _, c := range []interface{ Close() error }{f.status, f.statm, f.smaps} {
		if c != nil {
			c.Close()
		}
	}
	*f = files{}
}

// openers open the files; tests replace them to make reads fail.
type openers struct {
	status func(procfs.FS, int) (reader[procfs.Status], error)
	statm  func(procfs.FS, int) (reader[procfs.Statm], error)
	smaps  func(procfs.FS, int) (reader[procfs.SmapsRollup], error)
}

var procOpeners = openers{
	status: func(fs procfs.FS, pid int) (reader[procfs.Status], error) {
		r, err := fs.OpenStatus(pid)
		if err != nil {
			return nil, err
		}
		return r, nil
	},
	statm: func(fs procfs.FS, pid int) (reader[procfs.Statm], error) {
		r, err := fs.OpenStatm(pid)
		if err != nil {
			return nil, err
		}
		return r, nil
	},
	smaps: func(fs procfs.FS, pid int) (reader[procfs.SmapsRollup], error) {
		r, err := fs.OpenSmapsRollup(pid)
		if err != nil {
			return nil, err
		}
		return r, nil
	},
}

// Sampler samples one process. Start and Stop are each called once.
type Sampler struct {
	opts  Options
	proc  *process.Process // non-Linux only
	linux bool
	open  openers
	f     files
	st    procfs.Status      // last status read, reused
	sm    procfs.Statm       // last statm read, reused
	roll  procfs.SmapsRollup // last smaps_rollup read, reused
	// The process's identity and program: /proc/<pid>/stat's start time
	// ("" where stat cannot be read, as in a fixture tree), which execve
	// keeps and a new process under a reused pid does not; exe and the
	// command name last seen, to notice an execve.
	startTime string
	exe       string
	comm      string
	// openedN is the sample during which the files were last reopened.
	openedN int

	start  time.Time
	stop   context.CancelFunc
	done   chan struct{}
	paused atomic.Bool
	// latest is the last sample, for OnSample: written and read by the
	// sampling goroutine only.
	latest Point
	// prevRSS and prevHWM are RSS at the sample before and the largest
	// VmHWM read (next; the sampling goroutine only).
	prevRSS, prevHWM uint64

	// Owned by the sampling goroutine until done is closed, then by Stop.
	mu        sync.Mutex // guards the fields below against Peek
	tl        *Timeline
	peaks     Point
	peakRSSAt float64 // TMs of the first sample at the peak RSS
	n         int
	nSmaps    int
	smapsAt   time.Duration // when the last smaps_rollup read started (since start)
	smapsN    int           // sample number of that read
	smapsGap  time.Duration // least time to the next read (the budget)
	cost      time.Duration // time spent in sample
	smapsCost time.Duration
	nStatus   int
	reopens   int
	execs     []Exec
	final     bool
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
		open:  procOpeners,
		tl:    NewTimeline(opts.MaxPoints),
		done:  make(chan struct{}),
	}, nil
}

// Start takes the first sample, then samples every interval until ctx is
// done or Stop is called. It fails if the process cannot be read: it does
// not exist, its status cannot be read, or it has no address space (it
// has exited; the error then wraps syscall.ESRCH). A process whose
// smaps_rollup cannot be read is sampled without it, with a warning.
func (s *Sampler) Start(ctx context.Context) error {
	if s.stop != nil {
		return fmt.Errorf("sampler: pid %d: already started", s.opts.PID)
	}
	if s.linux {
		if f := procfs.StatFields(s.opts.FS.Path(s.opts.PID, "stat")); len(f) > statStartTime {
			s.startTime = f[statStartTime]
		}
		s.exe = s.readExe()
		f, smErr, err := s.openFiles(s.opts.SmapsEvery > 0)
		if err != nil {
			return fmt.Errorf("sampler: pid %d: %w", s.opts.PID, err)
		}
		s.f = f
		if smErr != nil {
			// Linux before 4.14 has no smaps_rollup: RSS, VSZ and the
			// status fields are worth having without it.
			why := ""
			if errors.Is(smErr, fs.ErrNotExist) {
				why = " (Linux before 4.14 has none)"
			}
			s.warn(fmt.Sprintf("%v%s: PSS, swap and the private/shared split are not sampled", smErr, why))
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
		s.f.close()
		return fmt.Errorf("sampler: pid %d: %w", s.opts.PID, err)
	}
	ctx, s.stop = context.WithCancel(ctx)
	go s.loop(ctx)
	return nil
}

// statStartTime is the index of field 22 of /proc/<pid>/stat, the start
// time, in procfs.StatFields (which begins at field 3).
const statStartTime = 22 - 3

// openFiles opens status (which must open), statm (when samples between
// status reads need it) and, when smaps, smaps_rollup; smErr is why
// smaps_rollup could not be opened, and the files are then without it.
func (s *Sampler) openFiles(smaps bool) (f files, smErr, err error) {
	pid := s.opts.PID
	if f.status, err = s.open.status(s.opts.FS, pid); err != nil {
		return files{}, nil, err
	}
	if s.opts.StatusEvery > 1 {
		if r, err := s.open.statm(s.opts.FS, pid); err == nil {
			f.statm = r
		}
	}
	if smaps {
		if f.smaps, smErr = s.open.smaps(s.opts.FS, pid); smErr != nil {
			f.smaps = nil
		}
	}
	return f, smErr, nil
}

// loop samples until ctx is done or a sample fails. One timer, reset
// after each sample to the period next says: the goroutine wakes once a
// period and for nothing else.
func (s *Sampler) loop(ctx context.Context) {
	defer close(s.done)
	d := s.opts.Interval
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !s.paused.Load() {
			if err := s.sample(ctx); err != nil {
				s.warn(fmt.Sprintf("sampling stopped after %d samples: %v", s.n, err))
				return
			}
			d = s.next(d)
			if s.opts.OnSample != nil {
				s.opts.OnSample(s.latest)
			}
		}
		t.Reset(d)
	}
}

// next is the period after the latest sample, d the one before it
// (Options.MaxInterval): from the sample before, where RSS or VmHWM
// moved by a tenth, Interval; where they moved by more than rssMoved
// allows, half of d (a program that creeps is sampled at the period
// whose creep is a move, not at Interval); where they stood still, twice
// d, up to MaxInterval.
func (s *Sampler) next(d time.Duration) time.Duration {
	p := &s.latest
	hwm := max(s.prevHWM, p.VmHWMBytes)
	moved := rssMoved(p.RSSBytes, s.prevRSS) || rssMoved(hwm, s.prevHWM)
	jumped := jump(p.RSSBytes, s.prevRSS) || jump(hwm, s.prevHWM)
	s.prevRSS, s.prevHWM = p.RSSBytes, hwm
	switch {
	case jumped || s.opts.MaxInterval <= s.opts.Interval:
		return s.opts.Interval
	case moved:
		return max(s.opts.Interval, d/2)
	}
	return min(2*d, s.opts.MaxInterval)
}

// rssMoved says whether RSS a has moved from b by more than standing
// still allows: 1 MiB and 1 % of b.
func rssMoved(a, b uint64) bool {
	d := max(a, b) - min(a, b)
	return d > 1<<20 && d > b/100
}

// jump says whether RSS a has moved from b by a tenth of b (and 1 MiB):
// as much as makes a walk at a new high (outside's highWalkRise).
func jump(a, b uint64) bool {
	d := max(a, b) - min(a, b)
	return d > 1<<20 && d > b/10
}

// Done is closed once the periodic samples have ended: Stop was called,
// or a sample failed (the process exited, or could no longer be read).
func (s *Sampler) Done() <-chan struct{} { return s.done }

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
	s.f.close()
	return s.result(), nil
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
	r := Result{
		PID:           s.opts.PID,
		Peaks:         s.peaks,
		PeakRSSAtMs:   s.peakRSSAt,
		Timeline:      s.tl.Points(),
		Samples:       s.n,
		StatusSamples: s.nStatus,
		SmapsSamples:  s.nSmaps,
		Reopens:       s.reopens,
		Execs:         append([]Exec{}, s.execs...),
		IntervalMs:    ms(s.opts.Interval),
		DurationMs:    ms(s.last),
		CostMs:        ms(s.cost),
		SmapsCostMs:   ms(s.smapsCost),
		Warnings:      append([]string{}, s.warnings...),
	}
	if p, ok := s.tl.First(); ok {
		r.First = &p
	}
	if p, ok := s.tl.Last(); ok {
		r.Last = &p
	}
	return r
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
	p := Point{TMs: ms(t)}
	var d time.Duration // of the smaps_rollup read
	if !s.linux {
		mi, err := s.proc.MemoryInfoWithContext(ctx)
		if err != nil {
			return fmt.Errorf("reading memory info: %w", err)
		}
		p.RSSBytes, p.VSZBytes = mi.RSS, mi.VMS
	} else {
		var err error
		if d, err = s.read(&p, t); err != nil {
			if d, err = s.retry(&p, t, err); err != nil {
				return err
			}
		}
	}
	if p.SmapsSamples > 0 {
		s.smapsAt, s.smapsN = t, s.n
		if s.opts.SmapsBudget > 0 {
			s.smapsGap = time.Duration(float64(d) / s.opts.SmapsBudget)
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.nSmaps += p.SmapsSamples
	s.nStatus += p.StatusSamples
	if p.SmapsSamples > 0 {
		s.smapsCost += d
	}
	p.Samples = 1
	s.latest = p
	s.tl.Add(p)
	if s.n == 0 || p.RSSBytes > s.peaks.RSSBytes {
		s.peakRSSAt = p.TMs
	}
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

// smapsError is a failed read of smaps_rollup, told apart from the other
// files': the process can be sampled without it.
type smapsError struct{ err error }

func (e *smapsError) Error() string { return e.err.Error() }
func (e *smapsError) Unwrap() error { return e.err }

// read reads the files due at the sample at t (since start) into p, and
// returns how long the smaps_rollup read took. It fails, wrapping
// syscall.ESRCH, when the process has no address space: it has exited (a
// zombie's status has no Vm lines, its statm reads 0) or is exiting.
func (s *Sampler) read(p *Point, t time.Duration) (time.Duration, error) {
	if s.f.statm == nil || s.n == 0 || s.final || s.n%s.opts.StatusEvery == 0 {
		st := &s.st
		if err := s.f.status.Read(st); err != nil {
			return 0, err
		}
		// RSS and VSZ from the same read as the rest, so a point's
		// RssAnon + RssFile + RssShmem is its RSS, and its VmHWM at
		// least its RSS. VmRSS and VmSize are the counters statm prints
		// as resident and size, and gopsutil's MemoryInfo reads.
		p.StatusSamples = 1
		p.RSSBytes, p.VSZBytes = st.VmRSSBytes, st.VmSizeBytes
		p.VmHWMBytes = st.VmHWMBytes
		p.VmPeakBytes = st.VmPeakBytes
		p.RssAnonBytes = st.RssAnonBytes
		p.RssFileBytes = st.RssFileBytes
		p.RssShmemBytes = st.RssShmemBytes
		p.VmStkBytes = st.VmStkBytes
		p.Threads = st.Threads
		// A new command name may be an execve (or a prctl rename):
		// /proc/<pid>/exe tells. Comparing costs nothing; the name
		// string is reused while it does not change.
		if st.Name != s.comm {
			seen := s.n > 0
			s.comm = st.Name
			if seen && st.VmSizeBytes > 0 && s.checkExec(t, false) && s.openedN != s.n {
				// smaps_rollup's descriptor holds the replaced
				// address space: reopen before it is read (unless
				// this sample has just done so).
				if err := s.reopen(); err != nil {
					return 0, err
				}
			}
		}
	} else {
		if err := s.f.statm.Read(&s.sm); err != nil {
			return 0, err
		}
		p.RSSBytes, p.VSZBytes = s.sm.ResidentBytes, s.sm.SizeBytes
	}
	if p.VSZBytes == 0 {
		return 0, &exitedError{s.opts.PID}
	}
	if s.f.smaps == nil || !s.smapsDue(t) {
		return 0, nil
	}
	t1 := time.Now()
	if err := s.f.smaps.Read(&s.roll); err != nil {
		return 0, &smapsError{err}
	}
	d := time.Since(t1)
	sm := &s.roll
	p.SmapsSamples = 1
	p.PssBytes = sm.PssBytes
	p.PrivateDirtyBytes = sm.PrivateDirtyBytes
	p.PrivateCleanBytes = sm.PrivateCleanBytes
	p.SharedDirtyBytes = sm.SharedDirtyBytes
	p.SharedCleanBytes = sm.SharedCleanBytes
	p.AnonymousBytes = sm.AnonymousBytes
	p.SwapBytes = sm.SwapBytes
	return d, nil
}

// exitedError is a process without an address space. It wraps
// syscall.ESRCH, what the kernel's reads of such a process return.
type exitedError struct{ pid int }

func (e *exitedError) Error() string {
	return fmt.Sprintf("pid %d has no address space: it has exited, or is exiting", e.pid)
}
func (e *exitedError) Unwrap() error { return syscall.ESRCH }

// retry handles a failed read (err) of the sample at t: unless the file
// was malformed or the process has exited, it reopens the files and reads
// again. A descriptor opened earlier can fail while the process lives:
// smaps_rollup's holds the address space it was opened on, which an
// execve replaces, and its reads are ESRCH from then on. If smaps_rollup
// alone still fails on a fresh descriptor (a set-uid program, which the
// probe may not inspect), sampling goes on without it.
func (s *Sampler) retry(p *Point, t time.Duration, err error) (time.Duration, error) {
	var pe *procfs.ParseError
	var ee *exitedError
	if errors.As(err, &pe) || errors.As(err, &ee) {
		return 0, err
	}
	execs := len(s.execs)
	if rerr := s.reopen(); rerr != nil {
		return 0, fmt.Errorf("%w; %v", err, rerr)
	}
	*p = Point{TMs: ms(t)}
	d, err2 := s.read(p, t)
	var se *smapsError
	dropped := errors.As(err2, &se)
	if dropped {
		s.f.smaps.Close()
		s.f.smaps = nil
		s.warn(fmt.Sprintf("%v, also on a new descriptor: PSS, swap and the private/shared split are not sampled from %.0f ms on", se.err, ms(t)))
		*p = Point{TMs: ms(t)}
		d, err2 = s.read(p, t)
	}
	if err2 != nil {
		return 0, err2
	}
	switch {
	case dropped: // said above
	case len(s.execs) > execs: // read saw the new program's name
	case errors.Is(err, syscall.ESRCH):
		// The process lives and has an address space, but not the one
		// the old descriptor held: it called execve, perhaps of the
		// same program (exe and name unchanged).
		s.checkExec(t, true)
	default:
		s.warn(fmt.Sprintf("%v: read again on new descriptors at %.0f ms, and sampling went on", err, ms(t)))
	}
	return d, nil
}

// reopen opens the process's files anew, if it is the same process and
// has not exited: /proc/<pid>/stat gives the start time it had at Start
// (a pid reused by a new process gives another) and a state other than
// zombie. Where stat could not be read at Start (a fixture tree), only
// status opening again is checked.
func (s *Sampler) reopen() error {
	pid := s.opts.PID
	if s.startTime != "" {
		f := procfs.StatFields(s.opts.FS.Path(pid, "stat"))
		switch {
		case len(f) <= statStartTime:
			return fmt.Errorf("pid %d has exited", pid)
		case f[statStartTime] != s.startTime:
			return fmt.Errorf("pid %d has exited (the pid is now another process's)", pid)
		case f[0] == "Z" || f[0] == "X":
			return fmt.Errorf("pid %d has exited", pid)
		}
	}
	f, smErr, err := s.openFiles(s.f.smaps != nil)
	if err != nil {
		return fmt.Errorf("reopening: %w", err)
	}
	if smErr != nil {
		s.warn(fmt.Sprintf("%v: PSS, swap and the private/shared split are not sampled from now on", smErr))
	}
	s.f.close()
	s.f = f
	s.openedN = s.n
	s.mu.Lock()
	s.reopens++
	s.mu.Unlock()
	return nil
}

// checkExec records an Exec at t when /proc/<pid>/exe differs from the
// last read, or when force says that one happened whatever exe says. It
// reports whether it recorded one.
func (s *Sampler) checkExec(t time.Duration, force bool) bool {
	exe := s.readExe()
	if exe == s.exe && !force {
		return false
	}
	s.exe = exe
	s.mu.Lock()
	s.execs = append(s.execs, Exec{TMs: ms(t), Exe: exe, Name: s.comm})
	s.mu.Unlock()
	return true
}

// readExe is the target of /proc/<pid>/exe; "" where it cannot be read
// (another user's process, a fixture tree).
func (s *Sampler) readExe() string {
	exe, _ := os.Readlink(s.opts.FS.Path(s.opts.PID, "exe"))
	return exe
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
