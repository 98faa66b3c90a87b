package outside

import (
	"slices"
	"strings"
	"testing"
	"time"

	"memprobe/instrument/procfs"
	"memprobe/instrument/sampler"
	"memprobe/schema"
)

// TestAssemblyAlone: the result's assembly from figures built by hand,
// no process watched. A program that exited after one sample and before
// any walk gets the warnings of a short life after those said before,
// each once, then its execve's and, last, its unknown exit status; its
// peak is wait4's maxrss; the files come sorted.
func TestAssemblyAlone(t *testing.T) {
	n := newNotes()
	n.addFile("/out/b")
	n.addFile("/out/a")
	n.warnf("said before")
	n.warnf("said before")
	p := &schema.Process{Mode: schema.ModeExec, PID: 42, Command: []string{"x"}, Exited: true, DurationMs: 3,
		RusageMaxRSSBytes: 8 << 20, VmHWMBytes: 2 << 20,
		Children: []schema.Child{}, Diagnosis: []schema.Finding{}, Files: []string{}}
	samp := sampler.Result{Samples: 1, Timeline: []sampler.Point{{RSSBytes: 2 << 20, VSZBytes: 4 << 20, Samples: 1}}}
	samp.Peaks.RSSBytes = 2 << 20
	a := &assembly{p: p, samp: samp, interval: 10 * time.Millisecond, start: time.Unix(0, 0), notes: n,
		execs: []string{"at about 0.00 s: /a → /b"}}
	r := a.result()
	if r.PeakRSSBytes != 8<<20 || p.PeakRSSSource != "wait4_maxrss" {
		t.Errorf("peak %d B from %q, want wait4's 8 MiB", r.PeakRSSBytes, p.PeakRSSSource)
	}
	want := []string{"said before", "no smaps walk", "exited before a second sample", "called execve", "exit status unknown"}
	if len(r.Warnings) != len(want) {
		t.Fatalf("warnings %q, want %d", r.Warnings, len(want))
	}
	for i, w := range want {
		if !strings.Contains(r.Warnings[i], w) {
			t.Errorf("warning %d %q, want one saying %q", i, r.Warnings[i], w)
		}
	}
	if !slices.Equal(p.Files, []string{"/out/a", "/out/b"}) {
		t.Errorf("files %q", p.Files)
	}
	if r.RSSReconciliation != nil || r.Interrupted || r.CommandLine == nil {
		t.Errorf("reconciliation %v without a walk, interrupted %v, command line %v", r.RSSReconciliation, r.Interrupted, r.CommandLine)
	}
}

// TestChildRecordAlone: the descendants' watch keeps reads of the tree
// built by hand. A child seen and then gone, with its parent's cminflt
// risen, is no miss; a rise with no child seen gone is one; the tree's
// peak is the largest sum, and the largest live child is the lead.
func TestChildRecordAlone(t *testing.T) {
	const root, kid = 1 << 30, 1<<30 + 1 // pids no process has: cmdline reads nothing
	w := &childWatch{fs: procfs.FS{}, root: root, start: time.Now(), kids: map[int]*childState{}, prev: map[int]bool{},
		cminflt: map[int]uint64{root: 0}, gone: map[int]int{}}
	alive := descRead{d: procfs.Proc{PID: kid, PPID: root}, ps: procStat{comm: "cc1", ppid: root}, alive: true}
	alive.st.VmRSSBytes, alive.st.VmHWMBytes = 64<<20, 64<<20
	reads := []treeRead{
		{now: 10, rootRSS: 1 << 20, cminflt: map[int]uint64{root: 0, kid: 0}, listed: map[int]bool{kid: true}, reads: []descRead{alive}},
		{now: 20, rootRSS: 1 << 20, cminflt: map[int]uint64{root: 100}, listed: map[int]bool{}},
		{now: 30, rootRSS: 1 << 20, cminflt: map[int]uint64{root: 150}, listed: map[int]bool{}},
	}
	lead := w.record(reads[0], time.Now())
	if lead.pid != kid || lead.rss != 64<<20 || lead.prev != 0 {
		t.Errorf("lead %+v, want pid %d at 64 MiB, not seen before", lead, kid)
	}
	w.record(reads[1], time.Now())
	if w.missed != 0 {
		t.Errorf("the child seen gone: %d missed, want 0", w.missed)
	}
	w.record(reads[2], time.Now())
	if w.missed != 1 {
		t.Errorf("a rise with no child gone: %d missed, want 1", w.missed)
	}
	p := &schema.Process{}
	w.fill(p)
	if len(p.Children) != 1 || !p.Children[0].Exited || p.Children[0].Command[0] != "cc1" || p.TreePeakRSSBytes != 65<<20 || p.DescendantsMissed != 1 {
		t.Errorf("children %+v, tree peak %d, missed %d", p.Children, p.TreePeakRSSBytes, p.DescendantsMissed)
	}
}

// TestSchedulerDueAlone: the walk scheduler's decisions, by hand. The
// first read is walked, a regular walk; after one at 10 MiB, with the
// next regular walk a second away, half a MiB more is no new high and 12
// MiB is (walked at once), unless the walks at new highs are off or
// their budget puts them off; at the SmapsEvery spacing, a move is.
func TestSchedulerDueAlone(t *testing.T) {
	now := time.Now()
	w := &walkScheduler{opts: Options{SmapsEvery: time.Second}, start: now}
	if regular, high := w.due(10<<20, 0, now); !regular || high {
		t.Errorf("the first read: regular %v, high %v; want a regular walk", regular, high)
	}
	w.walks, w.lastRSS, w.nextWalk = 1, 10<<20, now.Add(time.Second)
	w.peak = &schema.Snapshot{Reconciliation: schema.Reconciliation{RSSBytes: 10 << 20}}
	for _, c := range []struct {
		what      string
		rss, prev uint64
		at        time.Time
		off       bool
		nextHigh  time.Time
		reg, high bool
	}{
		{"half a MiB more", 10<<20 + 512<<10, 10 << 20, now, false, time.Time{}, false, false},
		{"a new high", 12 << 20, 11 << 20, now, false, time.Time{}, false, true},
		{"a new high, the walks at new highs off", 12 << 20, 11 << 20, now, true, time.Time{}, false, false},
		{"a new high within the budget's wait", 12 << 20, 11 << 20, now, false, now.Add(time.Millisecond), false, false},
		{"a move at the SmapsEvery spacing", 12 << 20, 11 << 20, now.Add(time.Second), false, time.Time{}, true, false},
	} {
		w.opts.noHighWalks, w.nextHigh = c.off, c.nextHigh
		if reg, high := w.due(c.rss, c.prev, c.at); reg != c.reg || high != c.high {
			t.Errorf("%s: regular %v, high %v; want %v, %v", c.what, reg, high, c.reg, c.high)
		}
	}
}
