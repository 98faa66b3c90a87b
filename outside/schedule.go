package outside

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"memprobe/instrument/sampler"
	"memprobe/internal/atomicfile"
	"memprobe/schema"
)

// walkScheduler decides when the program and its largest descendant are
// walked, takes those walks, and keeps what they saw. It owns the SmapsEvery
// spacing of the regular walks (the loop's ticks, Walk), the walks at new
// highs (the loop's ticks, the sampler's samples through onSample, the
// descendants' reads through walkLead) within their CPU budget, the
// program's peak and end views, the descendants' highest walk, and the heap
// profile fetched at a new peak. Its lock guards the fields below mu; a walk
// runs outside it, so that walks may overlap.
type walkScheduler struct {
	opts  Options
	pid   int
	start time.Time
	notes *notes
	// walker walks the program; set before the hooks are on and the
	// loop runs, then read only.
	walker *walker
	// hookWalk is onSample's walk of the program (the loop does not
	// walk while it runs).
	hookWalk background
	// leadWalk walks the descendant of the most RSS (walkLead) with
	// leadWalker, which its goroutine alone uses.
	leadWalk   background
	leadWalker *walker

	mu       sync.Mutex
	walks    int
	walkCost time.Duration
	nextWalk time.Time // the SmapsEvery spacing
	nextHigh time.Time // the walks at new highs' spacing (putOffHigh)
	lastRSS  uint64    // RSS at the last walk
	// sampleRSS is RSS at the sampler's last sample (onSample).
	sampleRSS uint64
	hooksOn   bool // onSample may start walks: from the end of newSession to finish
	peak, end *schema.Snapshot
	peakRaw   []byte
	endRaw    []byte
	lastPprof time.Time
	hwm       uint64    // the largest VmHWM a walk read
	lastWalk  time.Time // when the latest walk that succeeded began: the process lived then
	lead      leadPeak
}

// leadPeak is the descendants' highest walk (walkLead), of pid; walks
// and cost count all their walks.
type leadPeak struct {
	snap  *schema.Snapshot
	pid   int
	walks int
	cost  time.Duration
}

// newWalkScheduler schedules the walks of pid, watched since start; its
// walker is set by the caller before the hooks are turned on.
func newWalkScheduler(opts Options, pid int, start time.Time, n *notes) *walkScheduler {
	return &walkScheduler{opts: opts, pid: pid, start: start, notes: n}
}

// hooks turns onSample's walks on or off.
func (w *walkScheduler) hooks(on bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.hooksOn = on
}

// hooked says whether the hooks are on: the walker is set, and the
// watch has not ended.
func (w *walkScheduler) hooked() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.hooksOn
}

// onSample is the sampler's hook: a new high that a sample reads (every
// interval) is walked at once, in a goroutine of its own, where the loop
// would see it at its next tick only, 50 ms on. A program that grows
// until it exits has its last walk that much nearer its peak.
func (w *walkScheduler) onSample(p sampler.Point) {
	w.mu.Lock()
	defer w.mu.Unlock()
	prev := w.sampleRSS
	w.sampleRSS = p.RSSBytes
	if !w.hooksOn || !w.highAllowed(time.Now()) || !w.highWanted(p.RSSBytes, prev) {
		return
	}
	// Unless one is under way; an error is the process gone: the loop
	// and Wait see it.
	w.hookWalk.start(func() { _ = w.walk(false) })
}

// highBudget is the walks at new highs' share of wall time at now:
// earlyHighWalkBudget in the run's first earlyWalks, where a short
// program's whole growth may lie, highWalkBudget after.
func (w *walkScheduler) highBudget(now time.Time) float64 {
	if now.Sub(w.start) < earlyWalks {
		return earlyHighWalkBudget
	}
	return highWalkBudget
}

// due says whether RSS rss, read at now (prev at the tick before), is to
// be walked now: regular, a move the SmapsEvery spacing allows
// (walkWanted); high, a new high the walks at new highs' budget allows
// (highWanted).
func (w *walkScheduler) due(rss, prev uint64, now time.Time) (regular, high bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !now.Before(w.nextWalk) && w.walkWanted(rss) {
		return true, false
	}
	return false, w.highAllowed(now) && w.highWanted(rss, prev)
}

// highAllowed says whether the walks at new highs' budget allows one at
// now. Called with mu held.
func (w *walkScheduler) highAllowed(now time.Time) bool {
	return !w.opts.noHighWalks && !now.Before(w.nextHigh)
}

// putOffHigh spaces the walks at new highs after one of d (its CPU, at
// least a millisecond) that ended at now: d over highBudget. Called with
// mu held.
func (w *walkScheduler) putOffHigh(now time.Time, d time.Duration) {
	w.nextHigh = now.Add(time.Duration(float64(d) / w.highBudget(now)))
}

// highWanted says whether rss (prev at the tick before) is a new high
// worth a walk sooner than SmapsEvery, by aboveHigh against the highest
// walk. Called with mu held.
func (w *walkScheduler) highWanted(rss, prev uint64) bool {
	if w.peak == nil {
		return w.walks == 0
	}
	return aboveHigh(rss, prev, uint64(walkedRSS(&w.peak.Reconciliation)))
}

// walkWanted says whether RSS rss is worth a walk: the first, a new high,
// or a move since the last walk, by 1 MiB and 0.5 %. Called with mu held.
func (w *walkScheduler) walkWanted(rss uint64) bool {
	if w.walks == 0 {
		return true
	}
	moved := func(a, b uint64) bool {
		d := max(a, b) - min(a, b)
		return a > b && d > 1<<20 && d*200 > b
	}
	peakRSS := uint64(0)
	if w.peak != nil {
		peakRSS = uint64(w.peak.Reconciliation.RSSBytes)
	}
	return moved(rss, peakRSS) || moved(rss, w.lastRSS) || moved(w.lastRSS, rss)
}

// walk takes a walk of the program. A regular one (Walk, the SmapsEvery
// spacing) sets the next regular one SmapsEvery later; a walk at a new
// high does not put it off, only keeps it within walkBudget.
func (w *walkScheduler) walk(regular bool) error {
	t0 := time.Now()
	t := t0.Sub(w.start)
	snap, raw, cpu, err := w.walker.walk()
	if err != nil {
		return fmt.Errorf("walking pid %d: %w", w.pid, err)
	}
	snap.TMs = ms64(t)
	n, fetch := w.record(t0, snap, raw, cpu, regular)
	if w.opts.Progress != nil {
		r := snap.Reconciliation
		fmt.Fprintf(w.opts.Progress, "probe: walk %d at %.1f s: RSS %s, VSZ %s, %d threads, %d stacks, %d arenas (%.1f ms, %.1f ms of CPU)\n",
			n, t.Seconds(), iec(r.RSSBytes), iec(r.VSZBytes), snap.Threads, r.PthreadStacks, r.GlibcArenas, snap.WalkMs, ms64(cpu))
	}
	if fetch {
		w.fetchHeap()
	}
	return nil
}

// record keeps a walk begun at t0 that took cpu: it counts it, spaces
// the next ones, and makes it the end view and, where betterPeak says
// so, the peak view. n is the walks so far; fetch says a heap profile
// is due (a new peak, at most once a second).
func (w *walkScheduler) record(t0 time.Time, snap *schema.Snapshot, raw []byte, cpu time.Duration, regular bool) (n int, fetch bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t0.After(w.lastWalk) {
		w.lastWalk = t0
	}
	w.walks++
	wall := time.Duration(snap.WalkMs * float64(time.Millisecond))
	w.walkCost += wall
	d := max(cpu, time.Millisecond) // the budgets are of the walks' CPU
	if walkBudgetByWall {
		d = wall
	}
	now := time.Now()
	if regular {
		w.nextWalk = now.Add(max(w.opts.SmapsEvery, time.Duration(float64(d)/walkBudget)))
	} else if next := now.Add(time.Duration(float64(d) / walkBudget)); next.After(w.nextWalk) {
		w.nextWalk = next
	}
	w.putOffHigh(now, d)
	w.lastRSS = uint64(snap.Reconciliation.RSSBytes)
	w.hwm = max(w.hwm, snap.VmHWMBytes)
	if w.end == nil || snap.TMs >= w.end.TMs {
		// Walks may overlap (the loop's, Walk's): the end is the one
		// that began last, not the one that finished last.
		w.end, w.endRaw = snap, raw
	}
	newPeak := w.peak == nil || betterPeak(&snap.Reconciliation, &w.peak.Reconciliation)
	if newPeak {
		w.peak, w.peakRaw = snap, raw
	}
	fetch = newPeak && w.opts.PprofURL != "" && time.Since(w.lastPprof) >= time.Second
	if fetch {
		w.lastPprof = time.Now()
	}
	return w.walks, fetch
}

// walkLead walks descendant pid, the one of the most RSS (rss) at a read
// of the tree (prev at the read before), where that is a new high of the
// descendants' walks by the rule of the program's (highWanted), within
// the same budget: a driver's memory is its child's (g++'s cc1plus
// held 237 MiB beside the driver's 2.7), and the breakdown was the
// driver's alone. The highest walk is kept.
func (w *walkScheduler) walkLead(pid int, rss, prev uint64) {
	w.mu.Lock()
	due := w.highAllowed(time.Now())
	if w.lead.snap == nil {
		due = due && rss > 1<<20
	} else {
		due = due && aboveHigh(rss, prev, uint64(walkedRSS(&w.lead.snap.Reconciliation)))
	}
	w.mu.Unlock()
	if !due {
		return
	}
	// In a goroutine of its own, which finish waits for: the reads of
	// the tree go on at their period meanwhile. A walk on a loaded
	// machine takes hundreds of milliseconds, and a child that lived
	// 400 ms went unseen behind one (TestChildrenReadDuringWalk).
	w.leadWalk.start(func() { w.walkLeadNow(pid) })
}

// walkLeadNow takes walkLead's walk of pid, in leadWalk's goroutine.
func (w *walkScheduler) walkLeadNow(pid int) {
	if w.leadWalker == nil || w.leadWalker.pid != pid {
		w.leadWalker = newWalker(w.opts.FS, pid, readGoBuild(w.opts.FS, pid) != nil)
	}
	t0 := time.Now()
	snap, _, cpu, err := w.leadWalker.walk()
	if err != nil {
		return // gone meanwhile
	}
	snap.TMs = ms64(t0.Sub(w.start))
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lead.walks++
	w.lead.cost += time.Duration(snap.WalkMs * float64(time.Millisecond))
	w.putOffHigh(time.Now(), max(cpu, time.Millisecond))
	// Kept as the program's peak walk is (betterPeak): by what smaps saw.
	if w.lead.snap == nil || betterPeak(&snap.Reconciliation, &w.lead.snap.Reconciliation) {
		w.lead.snap, w.lead.pid = snap, pid
	}
	if w.opts.Progress != nil {
		r := snap.Reconciliation
		fmt.Fprintf(w.opts.Progress, "probe: descendant %d walked at %.1f s: RSS %s, VSZ %s (%.1f ms, %.1f ms of CPU)\n",
			pid, t0.Sub(w.start).Seconds(), iec(r.RSSBytes), iec(r.VSZBytes), snap.WalkMs, ms64(cpu))
	}
}

// fetchHeap writes the pprof heap profile of the program to OutDir.
func (w *walkScheduler) fetchHeap() {
	path := filepath.Join(w.opts.OutDir, "heap-peak.pprof")
	client := http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(w.opts.PprofURL)
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
	if err != nil {
		w.notes.warnf("pprof %s: fetching the heap profile at the peak: %v", w.opts.PprofURL, err)
		return
	}
	w.notes.addFile(path)
}

// endWalk is the latest walk of the program begun (the end view so far);
// nil before the first.
func (w *walkScheduler) endWalk() *schema.Snapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.end
}

// highestLead is the descendants' highest walk and whose it is; nil and
// 0 when none was walked.
func (w *walkScheduler) highestLead() (*schema.Snapshot, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lead.snap, w.lead.pid
}

// lastWalked is when the latest walk that succeeded began.
func (w *walkScheduler) lastWalked() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastWalk
}

// walksSeen is what the walks saw, once they have ended (Wait).
type walksSeen struct {
	walks           int
	cost            time.Duration
	peak, end       *schema.Snapshot
	peakRaw, endRaw []byte
	hwm             uint64
	lead            leadPeak
}

// seen is what the walks saw so far.
func (w *walkScheduler) seen() walksSeen {
	w.mu.Lock()
	defer w.mu.Unlock()
	return walksSeen{walks: w.walks, cost: w.walkCost, peak: w.peak, end: w.end, peakRaw: w.peakRaw, endRaw: w.endRaw, hwm: w.hwm, lead: w.lead}
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
// than prev, the read before), highWalkSettled above it.
func aboveHigh(rss, prev, top uint64) bool {
	if rss <= top+1<<20 {
		return false
	}
	return rss > top+uint64(highWalkRise*float64(top)) || rss <= prev && rss > top+uint64(highWalkSettled*float64(top))
}
