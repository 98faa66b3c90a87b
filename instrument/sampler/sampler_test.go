package sampler

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"memprobe/instrument/procfs"
)

func TestIntervalBelowMinimum(t *testing.T) {
	_, err := New(Options{Interval: 500 * time.Microsecond})
	if err == nil || !strings.Contains(err.Error(), "500µs") {
		t.Errorf("err = %v, want an error naming 500µs", err)
	}
	if _, err := New(Options{Interval: time.Millisecond}); err != nil {
		t.Errorf("1ms: %v", err)
	}
	if _, err := New(Options{MaxPoints: 1}); err == nil {
		t.Error("MaxPoints 1: no error")
	}
}

func TestBadPID(t *testing.T) {
	s, err := New(Options{PID: 1 << 30}) // above any pid_max
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err == nil {
		s.Stop()
		t.Fatal("Start on a missing pid: no error")
	}
	if _, err := s.Stop(); err == nil {
		t.Error("Stop after failed Start: no error")
	}
}

// checkResult checks the invariants every Result has.
func checkResult(t *testing.T, r Result, maxPoints int) {
	t.Helper()
	if r.Samples < 2 {
		t.Errorf("%d samples, want >= 2 (Start and Stop each take one)", r.Samples)
	}
	if r.Peaks.RSSBytes == 0 || r.Peaks.VSZBytes < r.Peaks.RSSBytes {
		t.Errorf("peaks RSS %d, VSZ %d", r.Peaks.RSSBytes, r.Peaks.VSZBytes)
	}
	if len(r.Timeline) == 0 || len(r.Timeline) > maxPoints {
		t.Errorf("timeline has %d points, want 1..%d", len(r.Timeline), maxPoints)
	}
	total, status, smaps := 0, 0, 0
	for i, p := range r.Timeline {
		total += p.Samples
		status += p.StatusSamples
		smaps += p.SmapsSamples
		if MaxPoint(r.Peaks, p) != withTime(r.Peaks, p) {
			t.Errorf("point %d %+v exceeds peaks %+v", i, p, r.Peaks)
		}
		if i > 0 && p.TMs < r.Timeline[i-1].TMs {
			t.Errorf("point %d at %v ms is before point %d", i, p.TMs, i-1)
		}
		checkPoint(t, fmt.Sprintf("point %d", i), p)
	}
	if total != r.Samples || r.Peaks.Samples != r.Samples {
		t.Errorf("timeline covers %d samples, peaks %d, result says %d", total, r.Peaks.Samples, r.Samples)
	}
	if status != r.StatusSamples || smaps != r.SmapsSamples || r.Peaks.StatusSamples != status || r.Peaks.SmapsSamples != smaps {
		t.Errorf("points read status %d and smaps_rollup %d times, peaks %d and %d, result says %d and %d",
			status, smaps, r.Peaks.StatusSamples, r.Peaks.SmapsSamples, r.StatusSamples, r.SmapsSamples)
	}
	if r.First == nil || r.Last == nil {
		t.Fatalf("first %v, last %v: want both", r.First, r.Last)
	}
	if r.First.Samples != 1 || r.Last.Samples != 1 || r.First.TMs != r.Timeline[0].TMs || r.Last.TMs < r.Timeline[len(r.Timeline)-1].TMs ||
		MaxPoint(r.Peaks, *r.Last) != withTime(r.Peaks, *r.Last) {
		t.Errorf("first %+v, last %+v: want single samples, the first at the timeline's start, the last in its last bucket", r.First, r.Last)
	}
	checkPoint(t, "first", *r.First)
	checkPoint(t, "last", *r.Last)
	if runtime.GOOS == "linux" {
		if r.Peaks.Threads < 1 || r.Peaks.VmHWMBytes == 0 || r.Peaks.PssBytes == 0 || r.SmapsSamples < 1 {
			t.Errorf("Linux fields missing: %+v, %d smaps samples", r.Peaks, r.SmapsSamples)
		}
	}
}

// checkPoint checks that p presents only what its samples read: a file's
// fields are 0 where no sample read it; where every sample of p read
// status, RSS is the sum of its parts (a single sample) or at most the
// largest VmHWM.
func checkPoint(t *testing.T, what string, p Point) {
	t.Helper()
	if p.StatusSamples > p.Samples || p.SmapsSamples > p.Samples {
		t.Errorf("%s: %d status and %d smaps_rollup reads in %d samples", what, p.StatusSamples, p.SmapsSamples, p.Samples)
	}
	if p.StatusSamples == 0 && (p.VmHWMBytes|p.VmPeakBytes|p.RssAnonBytes|p.RssFileBytes|p.RssShmemBytes|p.VmStkBytes != 0 || p.Threads != 0) {
		t.Errorf("%s: status fields without a status read: %+v", what, p)
	}
	if p.SmapsSamples == 0 && p.PssBytes|p.PrivateDirtyBytes|p.PrivateCleanBytes|p.SharedDirtyBytes|p.SharedCleanBytes|p.AnonymousBytes|p.SwapBytes != 0 {
		t.Errorf("%s: smaps_rollup fields without a smaps_rollup read: %+v", what, p)
	}
	if runtime.GOOS != "linux" || p.StatusSamples != p.Samples {
		return
	}
	if p.Samples == 1 && p.RSSBytes != p.RssAnonBytes+p.RssFileBytes+p.RssShmemBytes {
		t.Errorf("%s: RSS %d is not RssAnon + RssFile + RssShmem %d", what, p.RSSBytes, p.RssAnonBytes+p.RssFileBytes+p.RssShmemBytes)
	}
	if p.VmHWMBytes < p.RSSBytes {
		t.Errorf("%s: VmHWM %d below RSS %d", what, p.VmHWMBytes, p.RSSBytes)
	}
}

// withTime is peaks with p's time and sample counts, what MaxPoint(peaks,
// p) is when p exceeds peaks nowhere.
func withTime(peaks, p Point) Point {
	peaks.TMs = min(peaks.TMs, p.TMs)
	peaks.Samples += p.Samples
	peaks.StatusSamples += p.StatusSamples
	peaks.SmapsSamples += p.SmapsSamples
	return peaks
}

func TestSampleSelf(t *testing.T) {
	const maxPoints = 4
	s, err := New(Options{Interval: time.Millisecond, SmapsEvery: 3, MaxPoints: maxPoints})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Wait for samples by count, not by time.
	for s.Peek().Samples < 20 {
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
	r, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, r, maxPoints)
	if len(r.Warnings) != 0 {
		t.Errorf("warnings: %q", r.Warnings)
	}
}

func TestStopRightAway(t *testing.T) {
	s, err := New(Options{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	r, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, r, DefaultMaxPoints)
	if r.Samples != 2 {
		t.Errorf("%d samples, want 2", r.Samples)
	}
}

func TestSampleChild(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("uses sleep(1)")
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	s, err := New(Options{PID: cmd.Process.Pid, Interval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	r, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, r, DefaultMaxPoints)
	if r.PID != cmd.Process.Pid || r.Peaks.Threads != 1 {
		t.Errorf("pid %d threads %d, want pid %d, 1 thread", r.PID, r.Peaks.Threads, cmd.Process.Pid)
	}
}

// fixtureAsSelf copies the fixture files of testdata/proc/<dir> into a
// temporary proc tree under this process's pid, so that gopsutil reads the
// live process while the Linux fields come from the fixture.
func fixtureAsSelf(t *testing.T, dir string) procfs.FS {
	t.Helper()
	root := t.TempDir()
	dst := filepath.Join(root, strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"status", "smaps_rollup"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "proc", dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return procfs.NewFS(root)
}

func TestFixtureFS(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux fields only")
	}
	s, err := New(Options{Interval: time.Hour, FS: fixtureAsSelf(t, "4242")})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	r, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	// Values from testdata/proc/4242, times 1024.
	p := r.Peaks
	if p.VmHWMBytes != 1744*1024 || p.RssAnonBytes != 112*1024 || p.Threads != 1 ||
		p.PssBytes != 381*1024 || p.PrivateDirtyBytes != 112*1024 || r.SmapsSamples != 1 {
		t.Errorf("fixture fields: %+v, %d smaps samples", p, r.SmapsSamples)
	}
}

func TestFixtureMalformed(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux fields only")
	}
	s, err := New(Options{FS: fixtureAsSelf(t, "666")})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "status: line 3: VmRSS") {
		t.Errorf("err = %v, want a parse error at status line 3", err)
	}
}

// TestOnSample: the hook sees each periodic sample once, in order, and
// neither the first (Start's) nor the final (Stop's).
func TestOnSample(t *testing.T) {
	var calls []Point
	s, err := New(Options{Interval: time.Millisecond, OnSample: func(p Point) { calls = append(calls, p) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for s.Peek().Samples < 10 {
		time.Sleep(time.Millisecond)
	}
	r, err := s.Stop() // the loop is done: calls is ours to read
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != r.Samples-2 {
		t.Errorf("the hook saw %d samples of %d, want all but the first and the final", len(calls), r.Samples)
	}
	for i, p := range calls {
		if p.RSSBytes == 0 || i > 0 && p.TMs <= calls[i-1].TMs {
			t.Errorf("call %d: %+v after %+v: want a read RSS, later than the last", i, p, calls[max(i-1, 0)])
		}
	}
}

// TestBackOff: the period doubles while RSS and VmHWM stand still (within
// 1 MiB or 1 % of the sample before), up to MaxInterval; a move halves
// it, and one of a tenth brings it back to Interval at once; without
// MaxInterval it stays.
func TestBackOff(t *testing.T) {
	const ms = time.Millisecond
	s, err := New(Options{PID: 1, Interval: 10 * ms, MaxInterval: 100 * ms})
	if err != nil {
		t.Fatal(err)
	}
	const mib = 1 << 20
	d := 10 * ms
	for i, c := range []struct {
		rss, hwm uint64
		want     time.Duration
	}{
		{100 * mib, 100 * mib, 10 * ms}, // the first: a jump from nothing
		{100 * mib, 100 * mib, 20 * ms},
		{100*mib + 512<<10, 100*mib + 512<<10, 40 * ms}, // within 1 MiB: still
		{100*mib + 900<<10, 100*mib + 900<<10, 80 * ms},
		{100 * mib, 101 * mib, 100 * ms},
		{100 * mib, 101 * mib, 100 * ms},
		{103 * mib, 103 * mib, 50 * ms}, // RSS moved 3 %: half
		{106 * mib, 106 * mib, 25 * ms},
		{106 * mib, 106 * mib, 50 * ms},
		{106 * mib, 120 * mib, 10 * ms}, // a spike between samples: VmHWM jumped
		{50 * mib, 120 * mib, 10 * ms},  // a fall is a move too
		{50 * mib, 120 * mib, 20 * ms},
	} {
		s.latest = Point{RSSBytes: c.rss, VmHWMBytes: c.hwm}
		if d = s.next(d); d != c.want {
			t.Errorf("sample %d (RSS %d KiB, VmHWM %d KiB): next period %v, want %v", i, c.rss>>10, c.hwm>>10, d, c.want)
		}
	}
	s, _ = New(Options{PID: 1, Interval: 10 * ms})
	s.latest = Point{RSSBytes: mib, VmHWMBytes: mib}
	s.next(d)
	if d = s.next(10 * ms); d != 10*ms {
		t.Errorf("without MaxInterval: next period %v, want the interval", d)
	}
}
