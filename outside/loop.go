package outside

import (
	"fmt"
	"os"
	"sync"
	"time"

	"memprobe/instrument/procfs"
	"memprobe/instrument/sampler"
	"memprobe/schema"
)

// watchLoop is the loop beside the sampler. At every sample (onSample,
// on the sampler's goroutine: no wake of its own) it takes from the
// sample whether the process still lives and its VmHWM, and asks the
// walk scheduler whether a walk is due, which it then takes in a
// goroutine of its own; at most every tick it notices an execve (what
// the process runs: its exe and Go build) and reads attach's counters
// every countersEvery ticks. Once the sampler has stopped while the watch
// goes on (the program exited before the first sample, or the sampler's
// reads failed while the process lived on), run ticks on its own and
// reads status itself. It owns those readings; its lock guards them
// against finish and Wait, which read them, and tests.
type watchLoop struct {
	fs     procfs.FS
	pid    int
	start  time.Time
	attach bool
	tick   time.Duration
	status *procfs.StatusReader // nil: unreadable at the start
	sched  *walkScheduler
	// stop is closed when the watch ends: onSample then does nothing.
	stop <-chan struct{}
	// tickRSS is RSS at the last sample or tick; ticks counts the ticks
	// taken, lastTick is when the latest began (onSample's, then run's
	// goroutine: run takes over only once the sampler has stopped).
	tickRSS  uint64
	ticks    int
	lastTick time.Time

	mu sync.Mutex
	// lastAlive is the last tick that saw the process with memory.
	lastAlive time.Time
	hwm       uint64 // the largest VmHWM read
	// goBuild is the program's Go build information, nil for another
	// language: read at the start and again after each execve seen, so
	// that a wrapper (sh -c 'exec ./goprog') ends up judged by what it
	// became.
	goBuild *schema.GoBuild
	// exe is /proc/PID/exe as last read; execs the execve calls seen
	// (exe changed), each "at about T s: old → new".
	exe   string
	execs []string
	// counters are the process's own CPU time, faults and context
	// switches as last read from /proc (attach: exec has wait4's);
	// countersOK says whether they were read at all.
	counters   counters
	countersOK bool
}

// countersEvery is how many loop ticks apart attach reads the process's
// counters (readCounters: a file per thread).
const countersEvery = 10

// run waits until stop is closed, then closes done. Where smpDone (the
// sampler's end; closed from the start where there is no sampler)
// closes first, it ticks on its own from then on, reading status itself.
func (l *watchLoop) run(smpDone <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	select {
	case <-l.stop:
		return
	case <-smpDone:
	}
	t := time.NewTicker(l.tick)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		// status, not statm: VmHWM too, so that the last peak read
		// before the process exits is at most a tick old.
		var st procfs.Status
		if l.status == nil || l.status.Read(&st) != nil || st.VmSizeBytes == 0 {
			continue // exited, or exiting: Wait will see it
		}
		l.step(st.VmRSSBytes, st.VmHWMBytes, true)
	}
}

// onSample is the sampler's hook: the loop's step on a sample that read
// the process alive (its VSZ), at no wake of its own.
func (l *watchLoop) onSample(p sampler.Point) {
	select {
	case <-l.stop:
		return
	default:
	}
	if p.VSZBytes > 0 && l.sched.hooked() {
		l.step(p.RSSBytes, p.VmHWMBytes, false)
	}
}

// step takes a reading of the process alive with RSS rss and VmHWM hwm
// (0: not read): at most every tick (or at every call, where tick says
// so) the execve check and attach's counters, then the liveness, the
// peak, and a walk where one is due.
func (l *watchLoop) step(rss, hwm uint64, tick bool) {
	now := time.Now()
	if tick || now.Sub(l.lastTick) >= l.tick {
		l.lastTick = now
		if l.attach && l.ticks%countersEvery == 0 {
			l.readCounters()
		}
		l.ticks++
		l.checkExec()
	}
	l.mu.Lock()
	l.lastAlive = now
	l.hwm = max(l.hwm, hwm)
	l.mu.Unlock()
	regular, high := l.sched.due(rss, l.tickRSS, time.Now())
	l.tickRSS = rss
	if regular || high {
		// In a goroutine of its own, unless a walk is under way: the
		// samples go on meanwhile.
		l.sched.hookWalk.start(func() { _ = l.sched.walk(regular) })
	}
}

// readCounters reads the process's own CPU time, faults and context
// switches (attach; exec has wait4's at exit).
func (l *watchLoop) readCounters() {
	c, ok := readCounters(l.fs, l.pid)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counters, l.countersOK = c, true
}

// checkExec notices an execve of the process (its exe link changed) and
// reads again what the start read of the old program: whether it is a Go
// program, and the walker's stack limit and MALLOC_ARENA_MAX (an execve
// may come with another environment). A readlink, every loop tick.
func (l *watchLoop) checkExec() {
	exe, err := os.Readlink(l.fs.Path(l.pid, "exe"))
	if err != nil || exe == "" {
		return // exited, or no access to the link: nothing to compare
	}
	l.mu.Lock()
	old := l.exe
	l.mu.Unlock()
	if exe == old {
		return
	}
	g := readGoBuild(l.fs, l.pid)
	l.sched.walker.refresh(g != nil)
	t := time.Since(l.start)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.exe, l.goBuild = exe, g
	if old != "" {
		l.execs = append(l.execs, fmt.Sprintf("at about %.2f s: %s → %s", t.Seconds(), old, exe))
	}
}

// loopSeen is what the loop read, as of a moment.
type loopSeen struct {
	lastAlive  time.Time
	hwm        uint64
	goBuild    *schema.GoBuild
	execs      []string
	counters   counters
	countersOK bool
}

// seen is what the loop has read so far.
func (l *watchLoop) seen() loopSeen {
	l.mu.Lock()
	defer l.mu.Unlock()
	return loopSeen{lastAlive: l.lastAlive, hwm: l.hwm, goBuild: l.goBuild, execs: append([]string(nil), l.execs...),
		counters: l.counters, countersOK: l.countersOK}
}

// program is the Go build of what the process runs now, nil for another
// language.
func (l *watchLoop) program() *schema.GoBuild {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.goBuild
}
