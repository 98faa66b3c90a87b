package outside

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"memprobe/instrument/procfs"
	"memprobe/instrument/sampler"
	"memprobe/internal/atomicfile"
	"memprobe/schema"
)

// Session watches one process: the sampler, and a loop that takes the
// walks, reads the descendants and fetches heap profiles. Exec and Attach
// make one; Wait ends it and returns the result.
type Session struct {
	opts    Options
	mode    string
	pid     int
	command []string
	start   time.Time
	cpu0    time.Duration
	smp     *sampler.Sampler
	// smpStart is when the sampler started: its samples' times count
	// from it.
	smpStart time.Time
	gpu      *gpuWatch // nil: no NVML, or Options.NoGPU
	walker   *walker
	status   *procfs.StatusReader
	cmd      *exec.Cmd // exec only
	// ownGroup: cmd leads a process group of its own (ExecOptions.OwnGroup).
	ownGroup bool
	// release frees the thread that started cmd (childproc.Start), once cmd
	// has been reaped.
	release func()
	// probeHWM is the probe's own VmHWM when it started the program.
	probeHWM uint64
	sites    *sitesRun // exec --sites only

	stop     chan struct{}
	loopDone chan struct{}
	// kids reads the descendants (Options.Children; nil without), until
	// stop; kidsDone is closed after its last read.
	kids     *childWatch
	kidsDone chan struct{}
	// leadWalker walks the descendant of the most RSS (walkLead), in
	// leadWalk's goroutine.
	leadWalker *walker
	leadWalk   background
	// hookWalk is onSample's walk of the program (the loop does not
	// walk while it runs).
	hookWalk background

	mu        sync.Mutex // guards the fields below (the loop and Walk)
	walks     int
	walkCost  time.Duration
	nextWalk  time.Time // the SmapsEvery spacing
	nextHigh  time.Time // the walks at new highs' spacing (putOffHigh)
	lastRSS   uint64    // RSS at the last walk
	tickRSS   uint64    // RSS at the loop's last tick
	sampleRSS uint64    // RSS at the sampler's last sample (onSample)
	hooksOn   bool      // onSample may start walks: from the end of newSession to finish
	peak, end *schema.Snapshot
	// lead is the descendants' highest walk (walkLead), of leadPID;
	// leadWalks and leadCost count their walks.
	lead      *schema.Snapshot
	leadPID   int
	leadWalks int
	leadCost  time.Duration
	peakRaw   []byte
	endRaw    []byte
	lastPprof time.Time
	hwm       uint64 // the largest VmHWM read by the loop and the walks
	warnings  []string
	files     map[string]bool
	// goBuild is the program's Go build information, nil for another
	// language: read at the start and again after each execve seen, so
	// that a wrapper (sh -c 'exec ./goprog') ends up judged by what it
	// became.
	goBuild *schema.GoBuild
	// exe is /proc/PID/exe as last read; execs the execve calls seen
	// (exe changed), each "at about T s: old → new".
	exe   string
	execs []string
	// lastAlive is the last moment the process was seen with memory (a
	// status read by the loop, a walk): against the sampler's last sample
	// it tells a timeline cut short from one that ended with the process.
	lastAlive time.Time
	// exitAt is when exec's program exited (waitExec): its lifetime's end.
	exitAt time.Time
	// timelineCut says the sampler stopped while the process lived on
	// (finish): the timeline's figures end early.
	timelineCut bool
	// counters are the process's own CPU time, faults and context
	// switches as last read from /proc (attach: exec has wait4's);
	// countersOK says whether they were read at all.
	counters   counters
	countersOK bool
}

// newSession starts watching pid: the sampler takes its first sample now.
func newSession(opts Options, mode string, pid int, command []string) (*Session, error) {
	s := &Session{
		opts: opts, mode: mode, pid: pid, command: command,
		start: time.Now(), cpu0: selfCPU(),
		stop: make(chan struct{}), loopDone: make(chan struct{}),
		warnings: []string{}, files: map[string]bool{},
	}
	s.goBuild = readGoBuild(opts.FS, pid)
	s.exe, _ = os.Readlink(opts.FS.Path(pid, "exe"))
	smp, err := sampler.New(sampler.Options{PID: pid, Interval: opts.Interval, FS: opts.FS, OnSample: s.onSample})
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
		s.status = st
	}
	s.walker = newWalker(opts.FS, pid, s.goBuild != nil)
	if !opts.NoGPU {
		var warn string
		if s.gpu, warn = watchGPU(pid); warn != "" {
			s.warnf("%s", warn)
		}
	}
	if opts.Children {
		s.kids, s.kidsDone = newChildWatch(opts.FS, pid, s.start, opts.Interval, s.tick(), mode == schema.ModeExec), make(chan struct{})
		s.kids.lead = s.walkLead
		go s.kids.run(s.stop, s.kidsDone)
	}
	s.mu.Lock()
	s.hooksOn = true
	s.mu.Unlock()
	go s.loop()
	return s, nil
}

// tick is the loop's period: often enough to catch a peak that lasts a
// tenth of a second, rarely enough to cost little (a status read and a
// readlink, tens of µs, 20 times a second).
func (s *Session) tick() time.Duration {
	return max(s.opts.Interval, min(s.opts.SmapsEvery/4, 50*time.Millisecond))
}

func (s *Session) loop() {
	defer close(s.loopDone)
	t := time.NewTicker(s.tick())
	defer t.Stop()
	for n := 0; ; n++ {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		if s.mode == schema.ModeAttach && n%countersEvery == 0 {
			s.readCounters()
		}
		// status, not statm: VmHWM too, so that the last peak read
		// before the process exits is at most a tick old.
		var st procfs.Status
		if s.status == nil || s.status.Read(&st) != nil || st.VmSizeBytes == 0 {
			continue // exited, or exiting: Wait will see it
		}
		seen := time.Now()
		s.checkExec()
		s.mu.Lock()
		s.lastAlive = seen
		s.hwm = max(s.hwm, st.VmHWMBytes)
		regular, high := s.walkDue(st.VmRSSBytes, s.tickRSS, time.Now())
		s.tickRSS = st.VmRSSBytes
		s.mu.Unlock()
		if (regular || high) && !s.hookWalk.running() {
			s.walk(regular)
		}
	}
}

// onSample is the sampler's hook: a new high that a sample reads (every
// interval) is walked at once, in a goroutine of its own, where the loop
// would see it at its next tick only, 50 ms on. A program that grows
// until it exits has its last walk that much nearer its peak.
func (s *Session) onSample(p sampler.Point) {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := s.sampleRSS
	s.sampleRSS = p.RSSBytes
	if !s.hooksOn || !s.highAllowed(time.Now()) || !s.highWanted(p.RSSBytes, prev) {
		return
	}
	// Unless one is under way; an error is the process gone: the loop
	// and Wait see it.
	s.hookWalk.start(func() { _ = s.walk(false) })
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

// highBudget is the walks at new highs' share of wall time at now:
// earlyHighWalkBudget in the run's first earlyWalks, where a short
// program's whole growth may lie, highWalkBudget after.
func (s *Session) highBudget(now time.Time) float64 {
	if now.Sub(s.start) < earlyWalks {
		return earlyHighWalkBudget
	}
	return highWalkBudget
}

// countersEvery is how many loop ticks apart attach reads the process's
// counters (readCounters: a file per thread).
const countersEvery = 10

// readCounters reads the process's own CPU time, faults and context
// switches (attach; exec has wait4's at exit).
func (s *Session) readCounters() {
	c, ok := readCounters(s.opts.FS, s.pid)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counters, s.countersOK = c, true
}

// walkDue says whether RSS rss, read at now (prev at the tick before),
// is to be walked now: regular, a move the SmapsEvery spacing allows
// (walkWanted); high, a new high the walks at new highs' budget allows
// (highWanted). Called with mu held.
func (s *Session) walkDue(rss, prev uint64, now time.Time) (regular, high bool) {
	if !now.Before(s.nextWalk) && s.walkWanted(rss) {
		return true, false
	}
	return false, s.highAllowed(now) && s.highWanted(rss, prev)
}

// highAllowed says whether the walks at new highs' budget allows one at
// now. Called with mu held.
func (s *Session) highAllowed(now time.Time) bool {
	return !s.opts.noHighWalks && !now.Before(s.nextHigh)
}

// putOffHigh spaces the walks at new highs after one of d (its CPU, at
// least a millisecond) that ended at now: d over highBudget. Called with
// mu held.
func (s *Session) putOffHigh(now time.Time, d time.Duration) {
	s.nextHigh = now.Add(time.Duration(float64(d) / s.highBudget(now)))
}

// highWanted says whether rss (prev at the tick before) is a new high
// worth a walk sooner than SmapsEvery, by aboveHigh against the highest
// walk. Called with mu held.
func (s *Session) highWanted(rss, prev uint64) bool {
	if s.peak == nil {
		return s.walks == 0
	}
	return aboveHigh(rss, prev, uint64(walkedRSS(&s.peak.Reconciliation)))
}

// walkedRSS is the resident memory a walk stands for as the highest so
// far: its status VmRSS, or what its smaps saw where that is less by
// more than vmRSSLag: a walk that began while the memory was being written (bigblocks' 32 MiB
// under -race: 19 MiB in smaps, VmRSS 33 MiB read after) put off the
// walk that would see it until RSS passed the VmRSS by 10 %.
func walkedRSS(r *schema.Reconciliation) int64 {
	if r.SmapsRSSBytes > 0 && r.SmapsRSSBytes+vmRSSLag(r.RSSBytes) < r.RSSBytes {
		return r.SmapsRSSBytes
	}
	return r.RSSBytes
}

// aboveHigh is the rule of the walks at new highs against top, the RSS
// of the highest walk so far: rss more than 1 MiB above it, and either
// highWalkRise above it or, where RSS has stopped rising (no higher
// than prev, the read before), 1 % above it.
func aboveHigh(rss, prev, top uint64) bool {
	if rss <= top+1<<20 {
		return false
	}
	return rss > top+uint64(highWalkRise*float64(top)) || rss <= prev && rss > top+top/100
}

// walkWanted says whether RSS rss is worth a walk: the first, a new high,
// or a move since the last walk, by 1 MiB and 0.5 %. Called with mu held.
func (s *Session) walkWanted(rss uint64) bool {
	if s.walks == 0 {
		return true
	}
	moved := func(a, b uint64) bool {
		d := max(a, b) - min(a, b)
		return a > b && d > 1<<20 && d*200 > b
	}
	peakRSS := uint64(0)
	if s.peak != nil {
		peakRSS = uint64(s.peak.Reconciliation.RSSBytes)
	}
	return moved(rss, peakRSS) || moved(rss, s.lastRSS) || moved(s.lastRSS, rss)
}

// walkLead walks descendant pid, the one of the most RSS (rss) at a read
// of the tree (prev at the read before), where that is a new high of the
// descendants' walks by the rule of the program's (highWanted), within
// the same budget: a driver's memory is its child's (g++'s cc1plus
// held 237 MiB beside the driver's 2.7), and the breakdown was the
// driver's alone. The highest walk is kept.
func (s *Session) walkLead(pid int, rss, prev uint64) {
	s.mu.Lock()
	due := s.highAllowed(time.Now())
	if s.lead == nil {
		due = due && rss > 1<<20
	} else {
		due = due && aboveHigh(rss, prev, uint64(walkedRSS(&s.lead.Reconciliation)))
	}
	s.mu.Unlock()
	if !due {
		return
	}
	// In a goroutine of its own, which finish waits for: the reads of
	// the tree go on at their period meanwhile. A walk on a loaded
	// machine takes hundreds of milliseconds, and a child that lived
	// 400 ms went unseen behind one (TestChildrenReadDuringWalk).
	s.leadWalk.start(func() { s.walkLeadNow(pid) })
}

// walkLeadNow takes walkLead's walk of pid, in leadWalk's goroutine.
func (s *Session) walkLeadNow(pid int) {
	if s.leadWalker == nil || s.leadWalker.pid != pid {
		s.leadWalker = newWalker(s.opts.FS, pid, readGoBuild(s.opts.FS, pid) != nil)
	}
	t0 := time.Now()
	snap, _, cpu, err := s.leadWalker.walk()
	if err != nil {
		return // gone meanwhile
	}
	snap.TMs = ms64(t0.Sub(s.start))
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leadWalks++
	s.leadCost += time.Duration(snap.WalkMs * float64(time.Millisecond))
	s.putOffHigh(time.Now(), max(cpu, time.Millisecond))
	// Kept as the program's peak walk is (betterPeak): by what smaps saw.
	if s.lead == nil || betterPeak(&snap.Reconciliation, &s.lead.Reconciliation) {
		s.lead, s.leadPID = snap, pid
	}
	if s.opts.Progress != nil {
		r := snap.Reconciliation
		fmt.Fprintf(s.opts.Progress, "probe: descendant %d walked at %.1f s: RSS %s, VSZ %s (%.1f ms, %.1f ms of CPU)\n",
			pid, t0.Sub(s.start).Seconds(), iec(r.RSSBytes), iec(r.VSZBytes), snap.WalkMs, ms64(cpu))
	}
}

// Walk takes a full walk now: it becomes the end view, and the peak view
// where betterPeak says so. It fails when the process has exited.
// Exec and Attach take walks on their own; Walk is for a caller that
// knows a moment matters (a test, before it lets the program go on).
func (s *Session) Walk() error { return s.walk(true) }

// walk takes a walk. A regular one (Walk, the SmapsEvery spacing) sets
// the next regular one SmapsEvery later; a walk at a new high does not
// put it off, only keeps it within walkBudget.
func (s *Session) walk(regular bool) error {
	t0 := time.Now()
	t := t0.Sub(s.start)
	snap, raw, cpu, err := s.walker.walk()
	if err != nil {
		return fmt.Errorf("walking pid %d: %w", s.pid, err)
	}
	snap.TMs = ms64(t)
	s.mu.Lock()
	if t0.After(s.lastAlive) {
		s.lastAlive = t0
	}
	s.walks++
	wall := time.Duration(snap.WalkMs * float64(time.Millisecond))
	s.walkCost += wall
	d := max(cpu, time.Millisecond) // the budgets are of the walks' CPU
	if walkBudgetByWall {
		d = wall
	}
	now := time.Now()
	if regular {
		s.nextWalk = now.Add(max(s.opts.SmapsEvery, time.Duration(float64(d)/walkBudget)))
	} else {
		if next := now.Add(time.Duration(float64(d) / walkBudget)); next.After(s.nextWalk) {
			s.nextWalk = next
		}
	}
	s.putOffHigh(now, d)
	s.lastRSS = uint64(snap.Reconciliation.RSSBytes)
	s.hwm = max(s.hwm, snap.VmHWMBytes)
	if s.end == nil || snap.TMs >= s.end.TMs {
		// Walks may overlap (the loop's, Walk's): the end is the one
		// that began last, not the one that finished last.
		s.end, s.endRaw = snap, raw
	}
	newPeak := s.peak == nil || betterPeak(&snap.Reconciliation, &s.peak.Reconciliation)
	if newPeak {
		s.peak, s.peakRaw = snap, raw
	}
	fetch := newPeak && s.opts.PprofURL != "" && time.Since(s.lastPprof) >= time.Second
	if fetch {
		s.lastPprof = time.Now()
	}
	s.mu.Unlock()
	if s.opts.Progress != nil {
		r := snap.Reconciliation
		fmt.Fprintf(s.opts.Progress, "probe: walk %d at %.1f s: RSS %s, VSZ %s, %d threads, %d stacks, %d arenas (%.1f ms, %.1f ms of CPU)\n",
			s.walks, t.Seconds(), iec(r.RSSBytes), iec(r.VSZBytes), snap.Threads, r.PthreadStacks, r.GlibcArenas, snap.WalkMs, ms64(cpu))
	}
	if fetch {
		s.fetchHeap()
	}
	return nil
}

// fetchHeap writes the pprof heap profile of the program to OutDir.
func (s *Session) fetchHeap() {
	path := filepath.Join(s.opts.OutDir, "heap-peak.pprof")
	client := http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(s.opts.PprofURL)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s", resp.Status)
	}
	var b []byte
	if err == nil {
		b, err = io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	}
	if resp != nil {
		resp.Body.Close()
	}
	if err == nil {
		err = atomicfile.WriteBytes(path, b)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.warnf("pprof %s: fetching the heap profile at the peak: %v", s.opts.PprofURL, err)
		return
	}
	s.files[path] = true
}

func (s *Session) warnf(format string, args ...any) {
	w := fmt.Sprintf(format, args...)
	for _, x := range s.warnings {
		if x == w {
			return
		}
	}
	s.warnings = append(s.warnings, w)
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

// checkExec notices an execve of the process (its exe link changed) and
// reads again what the start read of the old program: whether it is a Go
// program, and the walker's stack limit and MALLOC_ARENA_MAX (an execve
// may come with another environment). A readlink, every loop tick.
func (s *Session) checkExec() {
	exe, err := os.Readlink(s.opts.FS.Path(s.pid, "exe"))
	if err != nil || exe == "" {
		return // exited, or no access to the link: nothing to compare
	}
	s.mu.Lock()
	old := s.exe
	s.mu.Unlock()
	if exe == old {
		return
	}
	g := readGoBuild(s.opts.FS, s.pid)
	s.walker.refresh(g != nil)
	t := time.Since(s.start)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exe, s.goBuild = exe, g
	if old != "" {
		s.execs = append(s.execs, fmt.Sprintf("at about %.2f s: %s → %s", t.Seconds(), old, exe))
	}
}

// finish ends the watch: the loop, then (if the process still lives, a
// last walk and) the sampler; exited says whether it did.
func (s *Session) finish(exited bool) sampler.Result {
	close(s.stop)
	<-s.loopDone
	if s.kidsDone != nil {
		<-s.kidsDone
	}
	s.leadWalk.wait()
	if !exited {
		// The last look at a process that lives on: the final answer
		// to whether it is a Go program is what it runs now.
		s.checkExec()
		if s.mode == schema.ModeAttach {
			s.readCounters()
		}
		if err := s.Walk(); err != nil {
			s.mu.Lock()
			s.warnf("end walk: %v", err)
			s.mu.Unlock()
		}
	}
	res := sampler.Result{PID: s.pid, Timeline: []sampler.Point{}, Warnings: []string{}, IntervalMs: ms64(s.opts.Interval)}
	if s.smp != nil {
		res, _ = s.smp.Stop()
	}
	s.mu.Lock()
	s.hooksOn = false
	s.mu.Unlock()
	s.hookWalk.wait()
	if s.status != nil {
		s.status.Close()
	}
	// The sampler's warnings go into the result's too, where the report
	// prints them, those of a process that exited sorted first.
	note := ""
	if exited && s.smp != nil {
		s.mu.Lock()
		res.Warnings, note = keptSamplerWarnings(res, s.start, s.smpStart, s.lastAlive, s.opts.Interval, s.execs)
		s.timelineCut = note != ""
		s.mu.Unlock()
	} else if exited {
		res.Warnings = []string{}
	}
	s.mu.Lock()
	if note != "" {
		s.warnf("%s", note)
	}
	for _, w := range res.Warnings {
		s.warnf("sampler: %s", w)
	}
	s.mu.Unlock()
	return res
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

// writeRaw writes the walks behind the reconciliations to OutDir.
func (s *Session) writeRaw() {
	if s.opts.OutDir == "" {
		return
	}
	for _, f := range []struct {
		name string
		b    []byte
	}{{"smaps-peak.txt", s.peakRaw}, {"smaps-end.txt", s.endRaw}} {
		if f.b == nil {
			continue
		}
		path := filepath.Join(s.opts.OutDir, f.name)
		if err := atomicfile.WriteBytes(path, f.b); err != nil {
			s.warnf("out-dir: %v", err)
			continue
		}
		s.files[path] = true
	}
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

// betterPeak says whether walk w, taken after the peak view's, replaces
// it: w's parts saw more resident memory (seenRSS: Σ smaps Rss, not
// status's VmRSS, which the kernel batches per CPU), or as much and its
// reads agree or the peak's do not, or the peak shrank. A walk can
// straddle a moment its memory moved: one taken at a program's start
// reads some of its stacks, and one taken as it exits reads smaps whole
// and status after the pages went (TestThreads63 under load). One that
// shrank is no peak, and a peak that shrank gives way to any walk that
// did not.
func betterPeak(w, peak *schema.Reconciliation) bool {
	if shrank(w) {
		return false
	}
	a, b := seenRSS(w), seenRSS(peak)
	return shrank(peak) || a > b || a == b && (readsAgree(w) || !readsAgree(peak))
}

// shrank says whether a walk's status, read after smaps, saw a smaller
// address space than smaps listed, or less resident memory by more than
// vmRSSLag: a process that exits frees its pages before its mappings.
func shrank(r *schema.Reconciliation) bool {
	if r.SmapsSizeBytes == 0 {
		return false
	}
	return r.VSZBytes < r.SmapsSizeBytes || r.RSSBytes+vmRSSLag(r.SmapsRSSBytes) < r.SmapsRSSBytes
}

// vmRSSLag is how far VmRSS, the kernel's per-CPU batched counter, may
// stand from a page walk's rss bytes: 4 MiB, or 2 %.
func vmRSSLag(rss int64) int64 { return max(4<<20, rss/50) }

// readsAgree says whether a walk's status and smaps reads saw the same
// mappings: no mapping came or went between them.
func readsAgree(r *schema.Reconciliation) bool { return r.VSZBytes == r.SmapsSizeBytes }

// seenRSS is the resident memory a walk's parts saw: Σ smaps Rss, or
// status's VmRSS where smaps gave none.
func seenRSS(r *schema.Reconciliation) int64 {
	if r.SmapsRSSBytes > 0 {
		return r.SmapsRSSBytes
	}
	return r.RSSBytes
}
