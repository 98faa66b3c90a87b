package outside

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"memprobe/instrument/procfs"
	"memprobe/schema"
)

// TestBetterPeak: which walk is the peak view. Each case is a walk taken
// after the peak view's; whole is a walk whose status and smaps agree.
func TestBetterPeak(t *testing.T) {
	whole := func(rss int64) *schema.Reconciliation {
		return &schema.Reconciliation{RSSBytes: rss, SmapsRSSBytes: rss, VSZBytes: 1 << 30, SmapsSizeBytes: 1 << 30}
	}
	// Status read mid-exit, after smaps: pages freed, mappings still there
	// (TestThreads63 under load: VmRSS 56 MiB below smaps).
	exiting := &schema.Reconciliation{RSSBytes: 10 << 20, SmapsRSSBytes: 66 << 20, VSZBytes: 1 << 30, SmapsSizeBytes: 1 << 30}
	// smaps read in pieces as mappings went: a mapping listed twice.
	unmapping := &schema.Reconciliation{RSSBytes: 66 << 20, SmapsRSSBytes: 106 << 20, VSZBytes: 1 << 30, SmapsSizeBytes: 1<<30 + 40<<20}
	// Read while the program still mapped its stacks: smaps saw part,
	// status (after) all.
	growing := &schema.Reconciliation{RSSBytes: 66 << 20, SmapsRSSBytes: 50 << 20, VSZBytes: 1 << 30, SmapsSizeBytes: 1<<30 - 300<<20}
	// Status within the per-CPU batching of smaps: not shrunk.
	batched := &schema.Reconciliation{RSSBytes: 66<<20 - 256<<10, SmapsRSSBytes: 66 << 20, VSZBytes: 1 << 30, SmapsSizeBytes: 1 << 30}
	for _, c := range []struct {
		name    string
		w, peak *schema.Reconciliation
		want    bool
	}{
		{"more seen", whole(70 << 20), whole(66 << 20), true},
		{"less seen", whole(60 << 20), whole(66 << 20), false},
		{"equal: the later", whole(66 << 20), whole(66 << 20), true},
		{"exiting after a whole walk", exiting, whole(66 << 20), false},
		{"unmapping after a whole walk, more seen", unmapping, whole(66 << 20), false},
		{"a whole walk after an exiting one, less seen", whole(60 << 20), exiting, true},
		{"a whole walk after an unmapping one, less seen", whole(66 << 20), unmapping, true},
		{"equal seen: whole over growing", whole(50 << 20), growing, true},
		{"equal seen: growing not over whole", growing, whole(50 << 20), false},
		{"growing, more seen", growing, whole(40 << 20), true},
		{"batched VmRSS is no shrinking", batched, whole(60 << 20), true},
	} {
		if got := betterPeak(c.w, c.peak); got != c.want {
			t.Errorf("%s: betterPeak %v, want %v", c.name, got, c.want)
		}
	}
}

// TestWalkedRSS: the walks at new highs are measured against what the
// highest walk saw where it began as the memory was being written
// (bigblocks' 32 MiB under -race: smaps 19 MiB, VmRSS 33 MiB read
// after): RSS at 34.5 MiB, still rising, is a new high against it, and
// wanted at once. Planted, against its VmRSS: not wanted until 36.3 MiB
// (or a settled 34 MiB), and the breakdown stayed the 19 MiB one. Within the kernel's batching of
// VmRSS, the walk stands for its VmRSS.
func TestWalkedRSS(t *testing.T) {
	straddled := &schema.Reconciliation{RSSBytes: 33 << 20, SmapsRSSBytes: 19 << 20, VSZBytes: 1 << 30, SmapsSizeBytes: 1 << 30}
	batched := &schema.Reconciliation{RSSBytes: 100 << 20, SmapsRSSBytes: 97 << 20, VSZBytes: 1 << 30, SmapsSizeBytes: 1 << 30}
	s := &walkScheduler{walks: 1}
	for _, c := range []struct {
		name      string
		peak      *schema.Reconciliation
		rss, prev uint64
		want      bool
	}{
		{"rising above a straddled walk", straddled, 69 << 19, 68 << 19, true},
		{"settled within 1 MiB of a batched walk's VmRSS", batched, 100<<20 + 512<<10, 100<<20 + 512<<10, false},
		{"rising above a batched walk's smaps, not its VmRSS", batched, 105 << 20, 104 << 20, false},
	} {
		s.peak = &schema.Snapshot{Reconciliation: *c.peak}
		if got := s.highWanted(c.rss, c.prev); got != c.want {
			t.Errorf("%s: highWanted(%d MiB) %v, want %v (walked %d MiB)", c.name, c.rss>>20, got, c.want, walkedRSS(c.peak)>>20)
		}
	}
}

// TestWalkExited: a process that exits during a walk (after its smaps
// was read; here killed and left a zombie) fails the walk with ESRCH.
// Planted (the walk taken as it was), it read VmRSS 0 against smaps'
// pages, a breakdown totalling 0 B, and blamed ptrace for its memory
// (make -j2's cc1 under --children: "RSS 0 B, VSZ 0 B").
func TestWalkExited(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep:", err)
	}
	pid := cmd.Process.Pid
	defer cmd.Wait()
	defer cmd.Process.Kill()
	testHookInWalk = func() {
		cmd.Process.Kill()
		for range 1000 { // until the kernel has made it a zombie
			if f := procfs.StatFields(fmt.Sprintf("/proc/%d/stat", pid)); len(f) > 0 && f[0] == "Z" {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	defer func() { testHookInWalk = nil }()
	snap, _, _, err := newWalker(procfs.FS{}, pid, false).walk()
	if !errors.Is(err, syscall.ESRCH) {
		var rss int64
		if snap != nil {
			rss = snap.Reconciliation.RSSBytes
		}
		t.Fatalf("a walk of pid %d, which exited during it: %v (RSS %d B), want ESRCH", pid, err, rss)
	}
}
