package outside

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"memprobe/instrument/procfs"
	"memprobe/instrument/sampler"
	"memprobe/schema"
)

// Session watches one process. Exec and Attach make one; Wait ends it
// and returns the result. It holds what is fixed at the start and the
// parts of the watch, each with what it owns:
//   - the sampler (instrument/sampler): the timeline;
//   - the loop beside it (watchLoop): liveness, VmHWM, execve, counters;
//   - the walk scheduler (walkScheduler): when the program and its
//     largest descendant are walked, and what the walks saw;
//   - the descendants' watch (childWatch, Options.Children);
//   - the notes (notes): the warnings and the files written;
//
// and Wait assembles the result from them (assembly, result.go) once
// they have stopped. Session has no lock of its own: its fields are set
// before the parts start (exec's after Exec's newSession, read by Wait
// in the caller's goroutine), and each part guards its own.
type Session struct {
	opts    Options
	mode    string
	pid     int
	command []string
	// start is the run's clock's origin: for exec just before the
	// program's fork (its life's lower bound), for attach when the
	// watch began. The walks', descendants' and sites' times and the
	// program's duration count from it (the samples' from smpStart).
	start time.Time
	cpu0  time.Duration
	smp   *sampler.Sampler
	// smpStart is when the sampler started: its samples' times count
	// from it.
	smpStart time.Time
	gpu      *gpuWatch // nil: no NVML, or Options.NoGPU
	cmd      *exec.Cmd // exec only
	// ownGroup: cmd leads a process group of its own (ExecOptions.OwnGroup).
	ownGroup bool
	// release frees the thread that started cmd (childproc.Start), once cmd
	// has been reaped.
	release func()
	// probeHWM is the probe's own VmHWM when it started the program.
	probeHWM uint64
	sites    *sitesRun // exec --sites only
	// exitAt is when exec's program exited (waitExec): its lifetime's end.
	exitAt time.Time
	// timelineCut is set by Wait: the sampler stopped while the process
	// lived on (TimelineCut).
	timelineCut bool

	notes *notes
	sched *walkScheduler
	loop  *watchLoop
	// kids reads the descendants (Options.Children; nil without), until
	// stop; kidsDone is closed after its last read.
	kids     *childWatch
	kidsDone chan struct{}
	stop     chan struct{}
	loopDone chan struct{}
}

// newSession starts watching pid, on a clock from start: the sampler
// takes its first sample now.
func newSession(opts Options, mode string, pid int, command []string, start time.Time) (*Session, error) {
	s := &Session{
		opts: opts, mode: mode, pid: pid, command: command,
		start: start, cpu0: selfCPU(),
		stop: make(chan struct{}), loopDone: make(chan struct{}),
		notes: newNotes(),
	}
	s.sched = newWalkScheduler(opts, pid, s.start, s.notes)
	s.loop = &watchLoop{fs: opts.FS, pid: pid, start: s.start, attach: mode == schema.ModeAttach, tick: s.tick(), sched: s.sched, stop: s.stop}
	s.loop.goBuild = readGoBuild(opts.FS, pid)
	s.loop.exe, _ = os.Readlink(opts.FS.Path(pid, "exe"))
	onSample := func(p sampler.Point) {
		s.sched.onSample(p)
		s.loop.onSample(p)
	}
	smp, err := sampler.New(sampler.Options{PID: pid, Interval: opts.Interval, MaxInterval: opts.MaxInterval, FS: opts.FS, OnSample: onSample})
	if err != nil {
		return nil, err
	}
	s.smpStart = time.Now()
	if err := smp.Start(context.Background()); err != nil {
		// ESRCH: the task is exiting (its memory already released, not
		// yet a zombie), a window in which stat still says running.
		if mode != schema.ModeExec || !errors.Is(err, syscall.ESRCH) && !gone(opts.FS.Path(pid, "stat")) {
			return nil, err
		}
		// The program was over before the first sample (a zombie has no
		// memory to read): wait4 still has its peak and its status.
		s.warnf("the program exited before the first sample: only wait4's figures (peak RSS, CPU time, status) are known")
		smp = nil
	}
	s.smp = smp
	if st, err := opts.FS.OpenStatus(pid); err == nil {
		s.loop.status = st
	}
	s.sched.walker = newWalker(opts.FS, pid, s.loop.goBuild != nil)
	if !opts.NoGPU {
		var warn string
		if s.gpu, warn = watchGPU(pid); warn != "" {
			s.warnf("%s", warn)
		}
	}
	if opts.Children {
		s.kids, s.kidsDone = newChildWatch(opts.FS, pid, s.start, opts.Interval, s.tick(), mode == schema.ModeExec), make(chan struct{})
		s.kids.lead = s.sched.walkLead
		go s.kids.run(s.stop, s.kidsDone)
	}
	s.sched.hooks(true)
	var smpDone <-chan struct{}
	if smp != nil {
		smpDone = smp.Done()
	} else {
		closed := make(chan struct{})
		close(closed)
		smpDone = closed
	}
	go s.loop.run(smpDone, s.loopDone)
	return s, nil
}

// tick is the loop's period: often enough to catch a peak that lasts a
// tenth of a second, rarely enough to cost little (a status read and a
// readlink, tens of µs, 20 times a second).
func (s *Session) tick() time.Duration {
	return max(s.opts.Interval, min(s.opts.SmapsEvery/4, 50*time.Millisecond))
}

// background runs one function at a time in a goroutine of its own:
// start does nothing while one runs, and wait waits for it to end.
type background struct {
	busy atomic.Bool
	wg   sync.WaitGroup
}

func (b *background) start(f func()) {
	if !b.busy.CompareAndSwap(false, true) {
		return
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer b.busy.Store(false)
		f()
	}()
}

func (b *background) running() bool { return b.busy.Load() }
func (b *background) wait()         { b.wg.Wait() }

// notes are the result's warnings, each said once and in the order first
// said, and the files written to OutDir: every part of the watch adds to
// them, under their own lock (taken by nothing else while held).
type notes struct {
	mu       sync.Mutex
	warnings []string
	files    map[string]bool
}

func newNotes() *notes { return &notes{warnings: []string{}, files: map[string]bool{}} }

// warnf adds a warning, unless it was said already.
func (n *notes) warnf(format string, args ...any) {
	w := fmt.Sprintf(format, args...)
	n.mu.Lock()
	defer n.mu.Unlock()
	if !slices.Contains(n.warnings, w) {
		n.warnings = append(n.warnings, w)
	}
}

// addFile records a file written for the result.
func (n *notes) addFile(path string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.files[path] = true
}

// list is the warnings so far and the files, sorted.
func (n *notes) list() (warnings, files []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	files = []string{}
	for f := range n.files {
		files = append(files, f)
	}
	slices.Sort(files)
	return append([]string{}, n.warnings...), files
}

func (s *Session) warnf(format string, args ...any) { s.notes.warnf(format, args...) }

// Walk takes a full walk now: it becomes the end view, and the peak view
// where betterPeak says so. It fails when the process has exited.
// Exec and Attach take walks on their own; Walk is for a caller that
// knows a moment matters (a test, before it lets the program go on).
func (s *Session) Walk() error { return s.sched.walk(true) }

// finish ends the watch: the loop and the descendants' watch, then (if
// the process still lives, a last walk and) the sampler; exited says
// whether it did. cut says the timeline stopped while the process lived
// on (keptSamplerWarnings).
func (s *Session) finish(exited bool) (res sampler.Result, cut bool) {
	close(s.stop)
	<-s.loopDone
	if s.kidsDone != nil {
		<-s.kidsDone
	}
	s.sched.leadWalk.wait()
	if !exited {
		// The last look at a process that lives on: the final answer
		// to whether it is a Go program is what it runs now.
		s.loop.checkExec()
		if s.mode == schema.ModeAttach {
			s.loop.readCounters()
		}
		if err := s.Walk(); err != nil {
			s.warnf("end walk: %v", err)
		}
	}
	res = sampler.Result{PID: s.pid, Timeline: []sampler.Point{}, Warnings: []string{}, IntervalMs: ms64(s.opts.Interval)}
	if s.smp != nil {
		res, _ = s.smp.Stop()
	}
	s.sched.hooks(false)
	s.sched.hookWalk.wait()
	if s.loop.status != nil {
		s.loop.status.Close()
	}
	// The sampler's warnings go into the result's too, where the report
	// prints them, those of a process that exited sorted first.
	note := ""
	if exited && s.smp != nil {
		seen := s.loop.seen()
		res.Warnings, note = keptSamplerWarnings(res, s.start, s.smpStart, latest(seen.lastAlive, s.sched.lastWalked()), s.opts.Interval, seen.execs)
	} else if exited {
		res.Warnings = []string{}
	}
	if note != "" {
		s.warnf("%s", note)
	}
	for _, w := range res.Warnings {
		s.warnf("sampler: %s", w)
	}
	return res, note != ""
}

// latest is the later of two times.
func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// readGoBuild is the Go build information of pid's executable; nil when
// it is not a Go program or cannot be read.
func readGoBuild(fsys procfs.FS, pid int) *schema.GoBuild {
	bi, err := buildinfo.ReadFile(fsys.Path(pid, "exe"))
	if err != nil {
		return nil
	}
	g := &schema.GoBuild{GoVersion: bi.GoVersion, Path: bi.Path}
	for _, kv := range bi.Settings {
		if kv.Key == "CGO_ENABLED" {
			g.Cgo = kv.Value
		}
	}
	return g
}

// keptSamplerWarnings sorts the sampler's warnings for a process that
// exited. Its reads fail once the process is gone, which is how every
// timeline ends: the loop's "sampling stopped after N samples" and Stop's
// "final sample" say nothing then, and are dropped. But a sampler that
// stopped while the process lived on (an execve that ends the reads of
// the memory its files were opened on; any read error) left a timeline
// that ends early, and its start, peak and final figures with it: its
// warning is kept, and note says so ("" when it did not). What tells the
// two apart is the process seen alive (status read by the loop, a walk:
// lastAlive) after the sampler's last sample (smpStart plus its
// DurationMs), by more than two intervals and 100 ms, the margin for
// ticks that come late on a busy machine. Any other warning of the
// sampler (a field it could not read) is kept as it is.
func keptSamplerWarnings(res sampler.Result, start, smpStart, lastAlive time.Time, interval time.Duration, execs []string) (kept []string, note string) {
	kept = []string{}
	last := smpStart.Add(time.Duration(res.DurationMs * float64(time.Millisecond)))
	cut := lastAlive.After(last.Add(2*interval + 100*time.Millisecond))
	if cut {
		why := ""
		if len(execs) > 0 {
			why = fmt.Sprintf("; it called execve %s", strings.Join(execs, ", "))
		}
		note = fmt.Sprintf("the timeline is incomplete: the sampler stopped at %.2f s, after %d samples, while the process lived until at least %.2f s%s; the timeline's start, peak and final figures and its growth cover only its start, while VmHWM, the walks and (exec) wait4's maxrss cover the whole run",
			last.Sub(start).Seconds(), res.Samples, lastAlive.Sub(start).Seconds(), why)
	}
	for _, w := range res.Warnings {
		switch {
		case strings.HasPrefix(w, "final sample:"):
			continue // taken after the process was reaped: always fails
		case strings.HasPrefix(w, "sampling stopped after") && !cut:
			continue // the process exited: the end of every timeline
		}
		kept = append(kept, w)
	}
	return kept, note
}

// cmdline reads /proc/PID/cmdline as arguments; nil when unreadable.
func cmdline(fs procfs.FS, pid int) []string {
	b, err := os.ReadFile(fs.Path(pid, "cmdline"))
	if err != nil || len(b) == 0 {
		return nil
	}
	var out []string
	for _, a := range bytes.Split(bytes.TrimRight(b, "\x00"), []byte{0}) {
		out = append(out, string(a))
	}
	return out
}

// walkBudgetByWall plants the budgets of a walk's wall time (tests only).
var walkBudgetByWall = false

// testHookAfterWatch, where a test sets it, runs in Wait after the watch
// ends and before the analysis that follows it: CPU it takes is the
// analysis's, not the watch's.
var testHookAfterWatch func()

// selfCPU is the probe's own CPU time so far (user + system).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
