package outside

import (
	"fmt"
	"os"
	"sync"
	"time"

	"memprobe/instrument/procfs"
	"memprobe/schema"
)

// watchLoop is the loop beside the sampler. Every tick it reads the
// process's status (whether it still lives, its VmHWM), notices an
// execve (what the process runs: its exe and Go build), reads attach's
// counters every countersEvery ticks, and asks the walk scheduler
// whether a walk is due, which it then takes in its own goroutine. It
// owns those readings; its lock guards them against finish and Wait,
// which read them, and tests.
type watchLoop struct {
	fs     procfs.FS
	pid    int
	start  time.Time
	attach bool
	tick   time.Duration
	status *procfs.StatusReader // nil: unreadable at the start
	sched  *walkScheduler
	// tickRSS is RSS at the last tick (run's goroutine only).
	tickRSS uint64

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

// run ticks until stop is closed; done is closed after.
func (l *watchLoop) run(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(l.tick)
	defer t.Stop()
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if l.attach && n%countersEvery == 0 {
			l.readCounters()
		}
		// status, not statm: VmHWM too, so that the last peak read
		// before the process exits is at most a tick old.
		var st procfs.Status
		if l.status == nil || l.status.Read(&st) != nil || st.VmSizeBytes == 0 {
			continue // exited, or exiting: Wait will see it
		}
		seen := time.Now()
		l.checkExec()
		l.mu.Lock()
		l.lastAlive = seen
		l.hwm = max(l.hwm, st.VmHWMBytes)
		l.mu.Unlock()
		regular, high := l.sched.due(st.VmRSSBytes, l.tickRSS, time.Now())
		l.tickRSS = st.VmRSSBytes
		if (regular || high) && !l.sched.hookWalk.running() {
			l.sched.walk(regular)
		}
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
