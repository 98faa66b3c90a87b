package outside

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"memprobe/instrument/procfs"
	"memprobe/schema"
)

// childWatch reads a process's descendants (Options.Children) every
// period: each one's peak RSS, command and life, and the tree's summed
// RSS. A descendant that lives between two reads is not seen; its parent's
// cminflt (the minor faults of the children it waited for, which every
// program that ran has) tells that one was reaped, and DescendantsMissed
// counts such reads: a lower bound, as two reaped in one period count
// once and one reaped with a child seen gone is not counted.
type childWatch struct {
	fs    procfs.FS
	root  int
	start time.Time
	// fast: task/TID/children is there (CONFIG_PROC_CHILDREN), read
	// from the root down; else every /proc/N/stat (procfs.Descendants),
	// which costs milliseconds on a busy machine and runs at the loop's
	// tick instead of the sampler's interval.
	fast   bool
	period time.Duration

	mu      sync.Mutex
	kids    map[int]*childState
	prev    map[int]bool // the processes listed by the previous read
	cminflt map[int]uint64
	// gone counts, by parent, the children seen that have since gone
	// and whose reaping its cminflt has not yet shown: its stat may be
	// read before the reap and the child's after, and the rise then
	// shows at the next read, when the child is no longer in prev.
	gone     map[int]int
	treePeak uint64
	lastTree uint64 // the tree's summed RSS at the last read
	missed   int
	cost     time.Duration
	polls    int
	// lead, where set, is called after each read with the live
	// descendant of the most RSS then, its RSS, and its RSS at the read
	// before (0 when not seen then): the Session walks it at new highs.
	lead func(pid int, rss, prev uint64)
}

// childState is what is known of one descendant.
type childState struct {
	c     schema.Child
	comm  string
	alive bool   // alive (not a zombie) at the last read
	rss   uint64 // its RSS at the last read that saw it alive
}

// newChildWatch watches root's descendants. fresh says root was just
// started (exec): it has reaped no child yet, so a child reaped before
// the first read counts as missed too.
func newChildWatch(fsys procfs.FS, root int, start time.Time, interval, tick time.Duration, fresh bool) *childWatch {
	w := &childWatch{fs: fsys, root: root, start: start, kids: map[int]*childState{}, prev: map[int]bool{}, cminflt: map[int]uint64{}, gone: map[int]int{}}
	if fresh {
		w.cminflt[root] = 0
	}
	_, err := os.Stat(filepath.Join(fsys.Path(root, "task"), strconv.Itoa(root), "children"))
	w.fast = err == nil
	w.period = tick
	if w.fast {
		w.period = interval
	}
	return w
}

// childBudget caps the share of one CPU the reads take: after a read
// that took d of CPU, the next waits at least d/childBudget (up to ten
// periods). A read costs tens of microseconds per thread of the tree
// (each thread's children file).
const childBudget = 0.02

// earlyChildren is the start of a run in which the descendants are read
// five times as often: a compiler driver's children live milliseconds.
const earlyChildren = time.Second

// run reads until stop is closed, every period (a fifth of it in the
// first earlyChildren), within childBudget; done is closed after.
func (w *childWatch) run(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		t0 := time.Now()
		d := w.pollCPU()
		next := w.period
		if t0.Sub(w.start) < earlyChildren {
			next = max(next/5, time.Millisecond)
		}
		// The budget may stretch the period tenfold, no more.
		t.Reset(max(next, min(time.Duration(float64(d)/childBudget), 10*w.period)))
	}
}

// pollCPU polls and returns the CPU time the read took, which is what it
// costs the machine: its wall time on a busy one is mostly waiting for a
// CPU, and a budget of it put a read descheduled for 18.7 ms 937 ms
// before the next, in which two of TestChildren's children 500 ms apart
// were reaped and counted as one missed.
func (w *childWatch) pollCPU() time.Duration {
	runtime.LockOSThread() // the thread's CPU clock is the read's
	defer runtime.UnlockOSThread()
	c0 := threadCPU()
	w.poll()
	return threadCPU() - c0
}

// list is the descendants of the root now, parents before children.
func (w *childWatch) list() []procfs.Proc {
	if !w.fast {
		return w.fs.Descendants(w.root)
	}
	var out []procfs.Proc
	queue := []int{w.root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		tasks, _ := os.ReadDir(w.fs.Path(p, "task"))
		for _, t := range tasks {
			b, err := os.ReadFile(filepath.Join(w.fs.Path(p, "task"), t.Name(), "children"))
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(f); err == nil {
					out = append(out, procfs.Proc{PID: c, PPID: p})
					queue = append(queue, c)
				}
			}
		}
	}
	return out
}

// procStat is what a descendant's stat file says.
type procStat struct {
	comm      string
	ppid      int
	cminflt   uint64
	startTick uint64
	zombie    bool
}

// readProcStat reads a stat file; false when it is gone or malformed.
func readProcStat(path string) (procStat, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return procStat{}, false
	}
	i, j := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if i < 0 || j < i {
		return procStat{}, false
	}
	f := strings.Fields(string(b[j+1:]))
	if len(f) < 20 {
		return procStat{}, false
	}
	num := func(k int) uint64 { n, _ := strconv.ParseUint(f[k-3], 10, 64); return n }
	return procStat{comm: string(b[i+1 : j]), ppid: int(num(4)), cminflt: num(11), startTick: num(22), zombie: f[0] == "Z" || f[0] == "X"}, true
}

// uptimeMs is the system's uptime (/proc/uptime), the clock of stat's
// start times; 0 when unreadable.
func (w *childWatch) uptimeMs() float64 {
	b, err := os.ReadFile(filepath.Join(w.fs.Root(), "uptime"))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	s, _ := strconv.ParseFloat(f[0], 64)
	return s * 1000
}

// poll reads the tree once (read), then keeps what it saw (record) and
// calls lead with the largest live descendant.
func (w *childWatch) poll() {
	t0 := time.Now()
	tr := w.read()
	lead := w.record(tr, t0)
	if w.lead != nil && lead.pid != 0 {
		w.lead(lead.pid, lead.rss, lead.prev)
	}
}

// treeRead is one read of the tree: the root's RSS and cminflt, and each
// descendant's stat and status.
type treeRead struct {
	now     float64 // when, in ms since start
	rootRSS uint64
	cminflt map[int]uint64 // by pid: the root's and each listed one's
	listed  map[int]bool   // the descendants whose stat was read
	reads   []descRead
}

// descRead is a descendant as a read of the tree saw it; alive: not a
// zombie, with memory.
type descRead struct {
	d     procfs.Proc
	ps    procStat
	st    procfs.Status
	alive bool
}

// read reads the tree, without the lock: the root's status and stat,
// then each descendant's stat and status (one reaped meanwhile is left
// out).
func (w *childWatch) read() treeRead {
	desc := w.list()
	tr := treeRead{now: ms64(time.Since(w.start)), listed: map[int]bool{}, cminflt: map[int]uint64{}}
	if st, err := w.fs.ReadStatus(w.root); err == nil {
		tr.rootRSS = st.VmRSSBytes
	}
	if ps, ok := readProcStat(w.fs.Path(w.root, "stat")); ok {
		tr.cminflt[w.root] = ps.cminflt
	}
	for _, d := range desc {
		ps, ok := readProcStat(w.fs.Path(d.PID, "stat"))
		if !ok {
			continue // reaped meanwhile
		}
		tr.listed[d.PID] = true
		tr.cminflt[d.PID] = ps.cminflt
		st, err := w.fs.ReadStatus(d.PID)
		tr.reads = append(tr.reads, descRead{d, ps, st, err == nil && !ps.zombie && st.VmSizeBytes > 0})
	}
	return tr
}

// leadSeen is the live descendant of the most RSS at a read, with its
// RSS then and at the read before (0 when not seen then).
type leadSeen struct {
	pid       int
	rss, prev uint64
}

// record keeps a read of the tree begun at t0: each descendant's state,
// the new ones' start, the tree's RSS, the reaped children never seen.
func (w *childWatch) record(tr treeRead, t0 time.Time) (lead leadSeen) {
	w.mu.Lock()
	defer w.mu.Unlock()
	total := tr.rootRSS
	parents := map[int]bool{w.root: true}
	var newKids []descRead
	for _, r := range tr.reads {
		k := w.kids[r.d.PID]
		if k == nil {
			newKids = append(newKids, r)
			k = &childState{c: schema.Child{PID: r.d.PID, PPID: r.d.PPID, StartMs: tr.now, LastSeenMs: tr.now}}
			w.kids[r.d.PID] = k
		}
		k.alive = r.alive
		if !r.alive {
			continue
		}
		parents[r.d.PID] = true
		w.see(k, r, tr.now)
		total += r.st.VmRSSBytes
		if r.st.VmRSSBytes > lead.rss {
			lead = leadSeen{r.d.PID, r.st.VmRSSBytes, k.rss}
		}
		k.rss = r.st.VmRSSBytes
	}
	w.dateNew(newKids, tr.now)
	w.countMissed(tr, parents)
	w.prev, w.cminflt = tr.listed, tr.cminflt
	w.treePeak = max(w.treePeak, total)
	w.lastTree = total
	w.polls++
	w.cost += time.Since(t0)
	return lead
}

// see updates a live descendant's command, last sight and peaks from a
// read at now. Called with mu held.
func (w *childWatch) see(k *childState, r descRead, now float64) {
	if r.ps.comm != k.comm {
		// First sight, or an execve: the command is the new one's.
		k.comm = r.ps.comm
		if c := cmdline(w.fs, r.d.PID); c != nil {
			k.c.Command = c
		} else if k.c.Command == nil {
			k.c.Command = []string{r.ps.comm}
		}
	}
	k.c.LastSeenMs = now
	k.c.VmHWMBytes = max(k.c.VmHWMBytes, r.st.VmHWMBytes)
	k.c.PeakRSSBytes = max(k.c.PeakRSSBytes, r.st.VmRSSBytes)
}

// dateNew sets the start of descendants first seen at now, from stat's
// start time (clock ticks since boot) against the uptime now. Called
// with mu held.
func (w *childWatch) dateNew(newKids []descRead, now float64) {
	if len(newKids) == 0 {
		return
	}
	up := w.uptimeMs()
	if up <= 0 {
		return
	}
	for _, r := range newKids {
		age := up - float64(r.ps.startTick)*1000/userHZ
		if age >= 0 {
			w.kids[r.d.PID].c.StartMs = now - age
		}
	}
}

// countMissed counts the children reaped unseen: a parent whose cminflt
// rose since the read before reaped a child, and if none of the children
// seen gone is its, the child it reaped was never seen. Called with mu
// held.
func (w *childWatch) countMissed(tr treeRead, parents map[int]bool) {
	for pid := range w.prev {
		if k := w.kids[pid]; k != nil && !tr.listed[pid] {
			w.gone[k.c.PPID]++
		}
	}
	for p := range parents {
		before, had := w.cminflt[p]
		if !had || tr.cminflt[p] <= before {
			continue
		}
		if w.gone[p] > 0 {
			w.gone[p] = 0
		} else {
			w.missed++
		}
	}
}

// live is the number of descendants alive at the last read and the
// tree's summed RSS then (the live view).
func (w *childWatch) live() (n int, tree uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, k := range w.kids {
		if k.alive && w.prev[k.c.PID] {
			n++
		}
	}
	return n, w.lastTree
}

// fill writes what was seen into p: the descendants by pid (gone ones
// marked exited), the tree's peak, the largest one's peak, the misses.
func (w *childWatch) fill(p *schema.Process) (cost time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p.ChildrenWatched = true
	for _, k := range w.kids {
		c := k.c
		c.Exited = !k.alive || !w.prev[c.PID]
		c.LifetimeMs = max(c.LastSeenMs-c.StartMs, 0)
		if c.Command == nil {
			c.Command = []string{}
		}
		p.Children = append(p.Children, c)
		p.DescendantPeakRSSBytes = max(p.DescendantPeakRSSBytes, c.VmHWMBytes, c.PeakRSSBytes)
	}
	slices.SortFunc(p.Children, func(a, b schema.Child) int { return a.PID - b.PID })
	p.TreePeakRSSBytes = w.treePeak
	p.DescendantsMissed = w.missed
	return w.cost
}
