package outside

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"memprobe/instrument/procfs"
	"memprobe/instrument/sampler"
	"memprobe/schema"
)

// The tests of this file come from a new user's first runs of probe exec
// and probe attach (issue 28): each is a fault they met.

// finding is the diagnosis line of a topic; nil when there is none.
func finding(p *schema.Process, topic string) *schema.Finding {
	i := slices.IndexFunc(p.Diagnosis, func(d schema.Finding) bool { return d.Topic == topic })
	if i < 0 {
		return nil
	}
	return &p.Diagnosis[i]
}

// peakWalkRun runs testdata/cprogs/peak.c (256 MiB, keeping 16 MiB)
// under Exec: it grows only once the first walk is taken, and frees most
// of its peak once the test lets it. With the walks at new highs, the
// test waits for one at the peak (the 20 s of waitFor bound a failure
// only); without them (planted), the program is let go after five loop
// ticks at its peak, and no walk of the session's own sees the peak
// (SmapsEvery is an hour). Then the end walk, at 16 MiB. "At the peak"
// is the rule's promise: within 10 % (a walk at 235 MiB of a 256 MiB
// peak is the last one it takes).
func peakWalkRun(t *testing.T, planted bool) *schema.Result {
	t.Helper()
	o := Options{SmapsEvery: time.Hour, noHighWalks: planted}
	h := execHeld(t, o, nil, cprog(t, "peak"), "256", "16")
	h.waitLine(t, "ready")
	walks := func() int { h.s.sched.mu.Lock(); defer h.s.sched.mu.Unlock(); return h.s.sched.walks }
	waitFor(t, "the first walk", func() bool { return walks() >= 1 })
	io.WriteString(h.stdin, "grow\n")
	h.waitLine(t, "peak")
	waitFor(t, "the sampler to see the peak", func() bool { return h.s.smp.Peek().Peaks.RSSBytes >= 256<<20 })
	if planted {
		time.Sleep(5 * h.s.tick())
	} else {
		// Against VmHWM, final once the program says "peak": the
		// samples' largest RSS may still rise past the one read now (a
		// walk at 231.1 MiB passed against 256 MiB, and the timeline's
		// peak became 257.3).
		waitFor(t, "a walk at the peak", func() bool {
			pk := h.s.smp.Peek().Peaks
			h.s.sched.mu.Lock()
			defer h.s.sched.mu.Unlock()
			return h.s.sched.peak != nil && float64(h.s.sched.peak.Reconciliation.RSSBytes) >= 0.9*float64(max(pk.VmHWMBytes, pk.RSSBytes))
		})
	}
	io.WriteString(h.stdin, "free\n")
	h.waitLine(t, "freed")
	waitFor(t, "the sampler to see the release", func() bool {
		r := h.s.smp.Peek()
		n := len(r.Timeline)
		return n > 0 && r.Timeline[n-1].RSSBytes < 64<<20
	})
	return h.release(t)
}

// TestWalkAtPeak: a short program's breakdown was taken at 1.50 s during
// its teardown (RSS 193.8 MiB, 95 % unexplained) while it had peaked at
// 314.4 MiB at 0.50 s. With the walks at new highs, the breakdown's RSS
// is within 10 % of the peak and the diagnosis says nothing of a gap;
// without them (the old behaviour, planted), the breakdown is the first
// walk's, far below the peak, and the diagnosis says by how much.
func TestWalkAtPeak(t *testing.T) {
	r := peakWalkRun(t, false)
	p := r.Process
	peak := float64(p.Timeline.PeakRSSBytes)
	walked := float64(p.AtPeak.Reconciliation.RSSBytes)
	if walked < 0.9*peak {
		t.Errorf("breakdown at RSS %.0f MiB, peak %.0f MiB: want within 10 %%\n%s", walked/(1<<20), peak/(1<<20), render(t, r))
	}
	if f := finding(p, "peak-walk"); f != nil {
		t.Errorf("a walk at the peak, yet the diagnosis says %q", f.Text)
	}

	r = peakWalkRun(t, true)
	p = r.Process
	walked = float64(p.AtPeak.Reconciliation.RSSBytes)
	if walked > 0.5*float64(p.Timeline.PeakRSSBytes) {
		t.Errorf("planted (no walks at new highs): breakdown at RSS %.0f MiB of a %.0f MiB peak, want the early walk's, below half",
			walked/(1<<20), float64(p.Timeline.PeakRSSBytes)/(1<<20))
	}
	f := finding(p, "peak-walk")
	if f == nil {
		t.Fatalf("planted: the breakdown is far from the peak and the diagnosis says nothing\n%s", render(t, r))
	}
	gap := float64(max(p.VmHWMBytes, p.Timeline.PeakRSSBytes)) - walked
	if f.Metric != "peak_walk_gap_bytes" || f.Value != gap || f.Value < 200<<20 {
		t.Errorf("planted: finding %+v, want peak_walk_gap_bytes = %.0f (over 200 MiB)", f, gap)
	}
	t.Logf("planted: %s", f.Text)
}

// TestWalkBudgetIsCPU: the walks' budgets are of their CPU. A walk made
// to wait 300 ms (as one waits for a CPU on a loaded machine: node on 2
// cores, 3.0 ms of CPU over 13.6 ms) puts the next walk at a new high
// off by its CPU over the budget (25 % in the first second), tens of
// milliseconds; planted, by its wall time, 1.2 s and more in the first
// second (6 s after it), and node's breakdown was of 123 MiB against a
// 373 MiB peak.
func TestWalkBudgetIsCPU(t *testing.T) {
	for _, planted := range []bool{false, true} {
		walkBudgetByWall = planted
		h := execHeld(t, Options{SmapsEvery: time.Hour}, nil, cprog(t, "peak"), "16", "16")
		h.waitLine(t, "ready")
		waitFor(t, "the first walk", func() bool { h.s.sched.mu.Lock(); defer h.s.sched.mu.Unlock(); return h.s.sched.walks >= 1 })
		testHookInWalk = func() { time.Sleep(300 * time.Millisecond) }
		err := h.s.Walk()
		testHookInWalk = nil
		after := time.Now()
		if err != nil {
			t.Fatal(err)
		}
		h.s.sched.mu.Lock()
		wait := h.s.sched.nextHigh.Sub(after)
		h.s.sched.mu.Unlock()
		io.WriteString(h.stdin, "grow\n")
		h.waitLine(t, "peak")
		io.WriteString(h.stdin, "free\n")
		h.waitLine(t, "freed")
		h.release(t)
		walkBudgetByWall = false
		t.Logf("planted %v: the next walk at a new high waits %v", planted, wait)
		if !planted && wait > time.Second {
			t.Errorf("after a walk of 300 ms spent waiting, the next at a new high waits %v: want its CPU over the budget (under 1 s)", wait)
		}
		if planted && wait < time.Second {
			t.Errorf("planted (the wall time's budget): the next walk at a new high waits %v, want 300 ms over the budget, 1.2 s or more", wait)
		}
	}
}

// TestSampleWalksNewHigh: a new high that a sample reads is walked at
// once (onSample), where the loop would see it at its next tick, 50 ms
// on: java's 0.17 s run had one walk, at 45.7 MiB of a 140.7 MiB peak,
// and then walks up to 140.3 MiB. The sample here is one the test makes:
// a read far above the highest walk, which the program's own RSS (the
// loop's reads) is not, so only onSample can walk for it. A read that is
// no new high, and one after the watch ends (planted: the hook off), are
// not walked.
func TestSampleWalksNewHigh(t *testing.T) {
	h := execHeld(t, Options{SmapsEvery: time.Hour}, nil, cprog(t, "peak"), "16", "16")
	h.waitLine(t, "ready")
	walks := func() int { h.s.sched.mu.Lock(); defer h.s.sched.mu.Unlock(); return h.s.sched.walks }
	waitFor(t, "the first walk", func() bool { return walks() >= 1 })
	h.s.sched.hookWalk.wait()
	h.s.sched.mu.Lock()
	top := uint64(h.s.sched.peak.Reconciliation.RSSBytes)
	h.s.sched.mu.Unlock()
	for _, tc := range []struct {
		what  string
		rss   uint64
		off   bool // the hook off (hooksOn false): the planted case
		walks bool
	}{
		{"a new high", 4 * top, false, true},
		{"no new high", top, false, false},
		{"a new high, the hook off", 8 * top, true, false},
	} {
		w := h.s.sched
		w.mu.Lock()
		w.nextHigh = time.Time{} // the budget allows one now
		w.sampleRSS = tc.rss
		w.hooksOn = !tc.off
		before := w.walks
		w.mu.Unlock()
		w.onSample(sampler.Point{RSSBytes: tc.rss})
		w.hookWalk.wait()
		w.mu.Lock()
		got := w.walks - before
		w.hooksOn = true
		w.mu.Unlock()
		if (got > 0) != tc.walks {
			t.Errorf("%s (RSS %d against the highest walk's %d): %d walks, want a walk: %v", tc.what, tc.rss, top, got, tc.walks)
		}
	}
	io.WriteString(h.stdin, "grow\n")
	h.waitLine(t, "peak")
	io.WriteString(h.stdin, "free\n")
	h.waitLine(t, "freed")
	h.release(t)
}

// TestHighBudgetEarly: the walks at new highs may take a quarter of the
// first second (a JVM's walks cost 7 ms of CPU each), 5 % after.
func TestHighBudgetEarly(t *testing.T) {
	now := time.Now()
	s := &walkScheduler{start: now.Add(-100 * time.Millisecond)}
	if b := s.highBudget(now); b != earlyHighWalkBudget || b <= highWalkBudget {
		t.Errorf("at 0.1 s: budget %v, want %v, above the later %v", b, earlyHighWalkBudget, highWalkBudget)
	}
	s.start = now.Add(-2 * time.Second)
	if b := s.highBudget(now); b != highWalkBudget {
		t.Errorf("at 2 s: budget %v, want %v", b, highWalkBudget)
	}
}

// TestEndIsLastBegun: of two walks that overlap, the end snapshot is the
// one that began last. The first here is held inside the walk until the
// second has finished; kept as the end because it finished last, it put
// an earlier state in the end walk's figures (the sites' fragmentation
// by heap read a thread's heap in the middle of its frees in CI).
func TestEndIsLastBegun(t *testing.T) {
	h := execHeld(t, slowWalks, nil, cprog(t, "peak"), "16", "16")
	h.waitLine(t, "ready")
	waitFor(t, "the first walk", func() bool { h.s.sched.mu.Lock(); defer h.s.sched.mu.Unlock(); return h.s.sched.walks >= 1 })
	var calls atomic.Int32
	gate := make(chan struct{})
	testHookInWalk = func() {
		if calls.Add(1) == 1 {
			<-gate
		}
	}
	first := make(chan error, 1)
	go func() { first <- h.s.Walk() }()
	waitFor(t, "the first walk to begin", func() bool { return calls.Load() >= 1 })
	time.Sleep(20 * time.Millisecond) // the second begins later by the walks' millisecond clock
	if err := h.s.Walk(); err != nil {
		t.Fatal(err)
	}
	second := h.s.sched.endWalk().TMs
	close(gate)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	testHookInWalk = nil
	end := h.s.sched.endWalk().TMs
	h.release(t)
	if end != second {
		t.Errorf("the end walk began at %.1f ms; want the second's, %.1f ms: the first began before it and finished after", end, second)
	}
}

// execFaults runs testdata/cprogs/faults.c under Exec to its end.
func execFaults(t *testing.T, pages, sleeps int) *schema.Process {
	t.Helper()
	r := execWait(t, ExecOptions{Options: slowWalks, Args: []string{cprog(t, "faults"), strconv.Itoa(pages), strconv.Itoa(sleeps)},
		Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: os.Stderr})
	if p := r.Process; p.ExitCode == nil || *p.ExitCode != 0 {
		t.Fatalf("faults %d %d exited with %v", pages, sleeps, p.ExitCode)
	}
	return r.Process
}

// plantedPages is the pages faults.c touches in the planted runs (100
// MiB of 4 KiB pages).
const plantedPages = 25600

// TestCountersPlanted: the figures of /usr/bin/time -v, planted. A
// program that writes N more pages has N more minor faults (within 5 %:
// the loader's and libc's own faults move a little from run to run); one
// that sleeps K times more has at least 0.9 K more voluntary context
// switches; one that computes has more user time. exec reads them from
// wait4; attach from /proc, the same planted difference in faults.
func TestCountersPlanted(t *testing.T) {
	base := execFaults(t, 0, 0)
	if base.RusageSource != rusageWait4 || base.RusageMinorFaults == 0 {
		t.Fatalf("exec: source %q, %d minor faults; want wait4's, some", base.RusageSource, base.RusageMinorFaults)
	}
	paged := execFaults(t, plantedPages, 0)
	d := int64(paged.RusageMinorFaults) - int64(base.RusageMinorFaults)
	if d < plantedPages*95/100 || d > plantedPages*105/100 {
		t.Errorf("exec: %d pages more moved minor faults by %d (%d → %d), want %d ± 5 %%",
			plantedPages, d, base.RusageMinorFaults, paged.RusageMinorFaults, plantedPages)
	}
	const sleeps = 200
	slept := execFaults(t, 0, sleeps)
	if v := int64(slept.RusageVoluntaryContextSwitches) - int64(base.RusageVoluntaryContextSwitches); v < sleeps*9/10 {
		t.Errorf("exec: %d sleeps more moved voluntary context switches by %d (%d → %d), want at least %d",
			sleeps, v, base.RusageVoluntaryContextSwitches, slept.RusageVoluntaryContextSwitches, sleeps*9/10)
	}

	// CPU: 100 million steps of spin.c cost at least 50 ms of user
	// time on any machine (about 0.4 s here); the program that only
	// starts, a few ms. Not a timed assertion: CPU time, not wall time,
	// and a margin of an order of magnitude.
	r := execWait(t, ExecOptions{Options: slowWalks, Args: []string{cprog(t, "spin"), "100000000"}, Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: os.Stderr})
	if u := r.Process.RusageUserMs; u < base.RusageUserMs+50 {
		t.Errorf("exec: 100 million steps moved user time from %.1f ms to %.1f ms, want at least 50 ms more", base.RusageUserMs, u)
	}

	attach := func(pages int) *schema.Process {
		cmd, _ := startHeld(t, "ready", cprog(t, "faults"), strconv.Itoa(pages), "0", "hold")
		r := attachOnce(t, cmd.Process.Pid, slowWalks)
		return r.Process
	}
	a0, a1 := attach(0), attach(plantedPages)
	if a0.RusageSource != rusageProc {
		t.Fatalf("attach: source %q, want %q", a0.RusageSource, rusageProc)
	}
	d = int64(a1.RusageMinorFaults) - int64(a0.RusageMinorFaults)
	if d < plantedPages*95/100 || d > plantedPages*105/100 {
		t.Errorf("attach: %d pages more moved minor faults by %d (%d → %d), want %d ± 5 %%",
			plantedPages, d, a0.RusageMinorFaults, a1.RusageMinorFaults, plantedPages)
	}
}

// timeV reads the figures of /usr/bin/time -v's report.
func timeV(t *testing.T, out string) map[string]int64 {
	t.Helper()
	m := map[string]int64{}
	for _, line := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ": ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
			m[k] = n
		}
	}
	return m
}

// TestCountersAgainstTime: probe exec's faults and context switches
// against /usr/bin/time -v's of the same program (two runs, so within a
// tolerance): minor faults within 5 % and 300 (the program's own 25,600
// dominate; time and the probe start it differently), major faults
// within 20, voluntary context switches (200 sleeps) within 20 % and
// 30. CPU times and involuntary switches depend on the machine's load
// and are not compared.
func TestCountersAgainstTime(t *testing.T) {
	if _, err := os.Stat("/usr/bin/time"); err != nil {
		t.Skip("no /usr/bin/time (Debian's time; scripts/install-deps.sh installs it as root)")
	}
	prog := cprog(t, "faults")
	out, err := exec.Command("/usr/bin/time", "-v", prog, strconv.Itoa(plantedPages), "200").CombinedOutput()
	if err != nil {
		t.Fatalf("time -v: %v\n%s", err, out)
	}
	tv := timeV(t, string(out))
	p := execFaults(t, plantedPages, 200)
	within := func(what string, got uint64, key string, pct, abs float64) {
		want, ok := tv[key]
		if !ok {
			t.Fatalf("time -v printed no %q:\n%s", key, out)
		}
		if d := math.Abs(float64(got) - float64(want)); d > abs+pct/100*float64(want) {
			t.Errorf("%s: probe exec %d, time -v %d: want within %.0f %% and %.0f", what, got, want, pct, abs)
		}
	}
	within("minor faults", p.RusageMinorFaults, "Minor (reclaiming a frame) page faults", 5, 300)
	within("major faults", p.RusageMajorFaults, "Major (requiring I/O) page faults", 0, 20)
	within("voluntary context switches", p.RusageVoluntaryContextSwitches, "Voluntary context switches", 20, 30)
	t.Logf("probe exec: user %.2f s, system %.2f s; page faults: %d major, %d minor", p.RusageUserMs/1000, p.RusageSystemMs/1000, p.RusageMajorFaults, p.RusageMinorFaults)
	t.Logf("time -v: minor %d, major %d, voluntary %d, involuntary %d", tv["Minor (reclaiming a frame) page faults"],
		tv["Major (requiring I/O) page faults"], tv["Voluntary context switches"], tv["Involuntary context switches"])
}

// masked is a diagnosis line with its figures and addresses masked: what
// two runs of one program share.
func masked(s string) string {
	return regexp.MustCompile(`0x[0-9a-f]+|[0-9]+(\.[0-9]+)?`).ReplaceAllString(s, "#")
}

// TestAttachSameDiagnosis: attach on a Python process that was 98.5 %
// unexplained gave no diagnosis line where exec on a similar program
// did. A program holding 128 MiB in one anonymous mapping, watched by
// exec and by attach: the same unexplained line (figures within 2 %),
// and attach has a peak line too.
func TestAttachSameDiagnosis(t *testing.T) {
	const pages = 32768 // 128 MiB
	h := execHeld(t, slowWalks, nil, cprog(t, "faults"), strconv.Itoa(pages), "0", "hold")
	h.waitLine(t, "ready")
	ex := h.release(t).Process

	cmd, _ := startHeld(t, "ready", cprog(t, "faults"), strconv.Itoa(pages), "0", "hold")
	r := attachOnce(t, cmd.Process.Pid, slowWalks)
	at := r.Process
	fe, fa := finding(ex, "unexplained"), finding(at, "unexplained")
	if fe == nil {
		t.Fatalf("exec: no unexplained line: %+v", ex.Diagnosis)
	}
	if fa == nil {
		t.Fatalf("attach: no unexplained line where exec has %q\n%s", fe.Text, render(t, r))
	}
	if masked(fe.Text) != masked(fa.Text) || fe.Metric != fa.Metric || math.Abs(fe.Value-fa.Value) > 0.02*fe.Value {
		t.Errorf("exec and attach differ:\nexec   %s (%s %.0f)\nattach %s (%s %.0f)", fe.Text, fe.Metric, fe.Value, fa.Text, fa.Metric, fa.Value)
	}
	if fa.Value < pages*4096 {
		t.Errorf("attach: unexplained %.0f bytes, want at least the 128 MiB mapping", fa.Value)
	}
	if finding(at, "peak") == nil {
		t.Errorf("attach: no peak line: %+v", at.Diagnosis)
	}
}

// TestAttachPeakBefore: the likely cause of the 98.5 % above: a process
// that peaked before the attach (VmHWM 256 MiB) and holds 16 MiB when
// watched. Its breakdown, of 16 MiB, explains almost none of the peak
// (the residual against VmHWM is what read as 98.5 % unexplained): the
// diagnosis says that the peak came before the attach, by how much.
func TestAttachPeakBefore(t *testing.T) {
	cmd := exec.Command(cprog(t, "peak"), "256", "16")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	out := bufio.NewReader(stdout)
	expect := func(want string) {
		t.Helper()
		if line, err := out.ReadString('\n'); err != nil || strings.TrimSpace(line) != want {
			t.Fatalf("peak printed %q, %v; want %q", line, err, want)
		}
	}
	expect("ready")
	io.WriteString(stdin, "grow\n")
	expect("peak")
	io.WriteString(stdin, "free\n")
	expect("freed")
	r := attachOnce(t, cmd.Process.Pid, slowWalks)
	p := r.Process
	f := finding(p, "peak-walk")
	if f == nil || !strings.Contains(f.Text, "before the attach") || f.Value < 200<<20 {
		t.Fatalf("peak-walk finding %+v: want one saying the peak came before the attach, over 200 MiB above the walk\n%s", f, render(t, r))
	}
	if pk := finding(p, "peak"); pk == nil || pk.Value < 256<<20 {
		t.Errorf("peak finding %+v: want VmHWM, at least 256 MiB", pk)
	}
	t.Logf("%s", f.Text)
}

// execChildren runs args under Exec with --children to their end.
func execChildren(t *testing.T, o Options, args ...string) *schema.Result {
	t.Helper()
	o.Children = true
	r := execWait(t, ExecOptions{Options: o, Args: args, Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: os.Stderr})
	if c := r.Process.ExitCode; c == nil || *c != 0 {
		t.Fatalf("%s exited with %v", args[0], c)
	}
	return r
}

// TestChildren: descendants of known sizes and lifetimes (forks.c: 64,
// 32 and 16 MiB, each living 400 ms, one at a time) are each in the
// table with their peak (within 8 MiB above their mapping), a lifetime
// of at least 200 ms (its start is the kernel's; the last read that saw
// it may come up to ten periods before its end on a busy machine), the
// tree's peak at least the largest one's, and the largest named in the
// diagnosis; none missed. Planted: children of 1 MiB that live a
// millisecond or two, 500 ms apart, read every 100 ms (20 ms in the
// first second), are seen or counted missed, every one.
func TestChildren(t *testing.T) {
	r := execChildren(t, Options{}, cprog(t, "forks"), "50", "64:400", "32:400", "16:400")
	p := r.Process
	if !p.ChildrenWatched || len(p.Children) != 3 {
		t.Fatalf("watched %v, %d children, want 3\n%s", p.ChildrenWatched, len(p.Children), render(t, r))
	}
	for i, mib := range []uint64{64, 32, 16} {
		c := p.Children[i] // by pid: in the order forked
		if pk := max(c.VmHWMBytes, c.PeakRSSBytes); pk < mib<<20 || pk > (mib+8)<<20 {
			t.Errorf("child %d (%d MiB): peak %d MiB", c.PID, mib, pk>>20)
		}
		if c.LifetimeMs < 200 || !c.Exited || c.PPID != p.PID {
			t.Errorf("child %d: lifetime %.0f ms (want at least 200), exited %v, parent %d", c.PID, c.LifetimeMs, c.Exited, c.PPID)
		}
	}
	if p.DescendantsMissed != 0 {
		t.Errorf("%d missed, want 0: every child was seen", p.DescendantsMissed)
	}
	if p.TreePeakRSSBytes < 64<<20 || p.DescendantPeakRSSBytes < 64<<20 {
		t.Errorf("tree peak %d MiB, largest descendant %d MiB: want at least 64", p.TreePeakRSSBytes>>20, p.DescendantPeakRSSBytes>>20)
	}
	f := finding(p, "children")
	if f == nil || f.Metric != "descendant_peak_rss_bytes" || f.Value < 64<<20 || !strings.Contains(f.Text, fmt.Sprintf("(pid %d)", p.Children[0].PID)) {
		t.Errorf("children finding %+v: want the 64 MiB child named", f)
	}
	if out := render(t, r); !strings.Contains(out, "tree peak RSS") || !strings.Contains(out, "Descendants (--children)") {
		t.Errorf("no tree headline or descendants table:\n%s", out)
	}

	// Whether a 1 ms child is caught by a read depends on the machine's
	// load (on a loaded CI machine all three were seen; here some are
	// missed): every one must be accounted for, seen or counted missed
	// (a lower bound, from the parent's cminflt: read 10 s apart it
	// undercounts), and where some were missed the text must say so.
	r = execChildren(t, Options{Interval: 100 * time.Millisecond}, cprog(t, "forks"), "500", "1:0", "1:0", "1:0")
	p = r.Process
	t.Logf("short-lived: %d seen, %d missed", len(p.Children), p.DescendantsMissed)
	if n := len(p.Children) + p.DescendantsMissed; n < 3 {
		t.Errorf("short-lived: %d seen, %d missed; want all 3 accounted for\n%s", len(p.Children), p.DescendantsMissed, render(t, r))
	}
	if p.DescendantsMissed > 0 {
		if f := finding(p, "children"); f == nil || !strings.Contains(render(t, r), "missed") {
			t.Errorf("short-lived: %d missed, and the diagnosis does not say so: %+v", p.DescendantsMissed, p.Diagnosis)
		}
	}
}

// TestChildrenWalked: the largest descendant at a read of the tree is
// walked at its new highs, and the highest walk is kept, on that one
// descendant: forks.c's children of 16, 64 and 32 MiB in turn (a driver's
// passes), each an anonymous mapping of its own that the breakdown
// leaves unexplained. The one walked is the 64 MiB child, not the first
// walked nor the last; its breakdown is printed, and its unexplained
// memory is said of it in the diagnosis. Planted: no walks at new highs,
// no descendant walked.
func TestChildrenWalked(t *testing.T) {
	for _, planted := range []bool{false, true} {
		r := execChildren(t, Options{noHighWalks: planted}, cprog(t, "forks"), "50", "16:300", "64:2000", "32:300")
		p := r.Process
		if len(p.Children) != 3 {
			t.Fatalf("planted %v: %d children, want 3\n%s", planted, len(p.Children), render(t, r))
		}
		var walked []int
		for _, c := range p.Children {
			if c.AtPeak != nil {
				walked = append(walked, c.PID)
			}
		}
		if planted {
			if len(walked) != 0 || p.DescendantWalks != 0 {
				t.Errorf("planted: walks of %v (%d), want none", walked, p.DescendantWalks)
			}
			continue
		}
		big := p.Children[1] // by pid: the 64 MiB child
		if len(walked) != 1 || walked[0] != big.PID || p.DescendantWalks < 2 {
			t.Fatalf("walked %v in %d walks, want the 64 MiB child %d alone, of at least 2 (the 16 MiB child before it)\n%s", walked, p.DescendantWalks, big.PID, render(t, r))
		}
		rec := big.AtPeak.Reconciliation
		t.Logf("64 MiB child walked at %.0f ms: RSS %d MiB, unexplained %d MiB; %d walks", big.AtPeak.TMs, rec.RSSBytes>>20, rec.UnexplainedBytes>>20, p.DescendantWalks)
		if rec.RSSBytes < 40<<20 || rec.UnexplainedBytes < rec.RSSBytes-8<<20 {
			t.Errorf("64 MiB child's walk: RSS %d, unexplained %d; want above 40 MiB (the 32 MiB child's and more), all but 8 MiB unexplained", rec.RSSBytes, rec.UnexplainedBytes)
		}
		name := fmt.Sprintf("forks (pid %d)", big.PID)
		if f := finding(p, "descendant-unexplained"); f == nil || !strings.Contains(f.Text, "in "+name+", the largest descendant walked: ") {
			t.Errorf("diagnosis %+v: want the child's unexplained memory said of it", p.Diagnosis)
		}
		if out := render(t, r); !strings.Contains(out, "Resident and reserved memory of "+name+", the largest descendant walked, at its highest walk") {
			t.Errorf("no breakdown of the child:\n%s", out)
		}
	}
}

// TestWalkAreaOnce: the smaps of a program whose brk heap grows all the
// time, read by walks, never holds an area twice. The kernel resumes each read of smaps at
// the address the last one ended, so os.ReadFile's reads of 512 bytes
// and up printed the [heap] twice (from one start, 49 of 300 reads on
// the development machine), and sqlite3's brk part read 229 MiB of an
// RSS of 150 MiB: one read of the whole text (procfs.ReadWhole) prints
// it once, and procfs.ParseSmaps keeps the later of two anyway.
func TestWalkAreaOnce(t *testing.T) {
	cmd := exec.Command(cprog(t, "brkloop"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	w := newWalker(procfs.FS{}, cmd.Process.Pid, false)
	const walks = 100
	twice := 0
	for range walks {
		snap, raw, _, err := w.walk()
		if err != nil {
			t.Fatal(err)
		}
		if heapTwice(raw) {
			twice++
		}
		// Not against VmRSS: status is read after smaps, and the heap may
		// have shrunk by 80 MiB in between.
		r := snap.Reconciliation
		if brk := recPart(r, "c.malloc.brk"); brk.Bytes > r.SmapsRSSBytes {
			t.Fatalf("brk part %d above smaps' Σ Rss %d", brk.Bytes, r.SmapsRSSBytes)
		}
	}
	if twice > 0 {
		t.Errorf("[heap] twice in %d of %d walks' smaps", twice, walks)
	}
}

// heapTwice says whether an smaps text has two [heap] areas.
func heapTwice(raw []byte) bool {
	return bytes.Count(raw, []byte("[heap]\n")) > 1
}

// TestChildrenGCC: a real compiler driver, gcc -c of a small file, runs
// cc1 and as for some milliseconds each (the run: about 25 ms). A 60 ms
// gcc had no children recorded and no word said. Now at least one is
// seen or counted missed, one seen is named in the diagnosis, and where
// wait4's maxrss (the largest peak of gcc and the children it waited
// for) is above every peak read, a line says so.
func TestChildrenGCC(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc on PATH")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "small.c")
	if err := os.WriteFile(src, []byte("int add(int a, int b) { return a + b; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := execChildren(t, Options{}, gcc, "-c", src, "-o", filepath.Join(dir, "small.o"))
	p := r.Process
	if n := len(p.Children) + p.DescendantsMissed; n < 1 {
		t.Errorf("gcc -c: no descendant seen or counted missed\n%s", render(t, r))
	}
	if len(p.Children) > 0 && finding(p, "children") == nil {
		t.Errorf("gcc -c: descendants seen but none named: %+v", p.Diagnosis)
	}
	// Unless maxrss is the probe's own image (forkImage: a probe larger
	// than gcc's children, as under -race).
	if top := max(p.VmHWMBytes, p.DescendantPeakRSSBytes); p.RusageMaxRSSBytes > top+top/20 && !p.ForkImage() &&
		!slices.ContainsFunc(p.Diagnosis, func(d schema.Finding) bool {
			return strings.Contains(d.Text, "wait4's maxrss") && d.Topic == "children"
		}) {
		t.Errorf("gcc -c: wait4's maxrss %d above every peak read (%d), and no children line says so: %+v", p.RusageMaxRSSBytes, top, p.Diagnosis)
	}
	t.Logf("tree peak RSS %s, %d descendants seen, %d missed", iec(int64(p.TreePeakRSSBytes)), len(p.Children), p.DescendantsMissed)
	for _, d := range p.Diagnosis {
		t.Logf("%s", d.Text)
	}
}

// TestMajorFaultsPlanted: a program that reads 4,096 pages of a file
// dropped from the page cache, with readahead off, has 4,096 more major
// faults (within 10 %) than one that reads none. Skipped where the test's
// temporary directory is tmpfs, whose pages never leave memory.
func TestMajorFaultsPlanted(t *testing.T) {
	dir := t.TempDir()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err == nil && st.Type == unix.TMPFS_MAGIC {
		t.Skipf("%s is tmpfs: its pages are never read back from a disk, so no major faults to plant", dir)
	}
	run := func(pages int) *schema.Process {
		r := execWait(t, ExecOptions{Options: slowWalks, Args: []string{cprog(t, "majfaults"), filepath.Join(dir, "f"), strconv.Itoa(pages)},
			Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: os.Stderr})
		if c := r.Process.ExitCode; c == nil || *c != 0 {
			t.Fatalf("majfaults %d exited with %v", pages, c)
		}
		return r.Process
	}
	const pages = 4096
	a, b := run(0), run(pages)
	if d := int64(b.RusageMajorFaults) - int64(a.RusageMajorFaults); d < pages*9/10 || d > pages*11/10 {
		t.Errorf("%d pages read from the disk moved major faults by %d (%d → %d), want %d ± 10 %%", pages, d, a.RusageMajorFaults, b.RusageMajorFaults, pages)
	}
}

// TestChildrenReadDuringWalk: a walk of the largest descendant does not
// hold up the reads of the tree. Every walk is made to take 800 ms (as
// one can on a loaded machine); sh runs two forks.c side by side, one
// whose 64 MiB child lives 3 s (the one walked), one whose three
// children of 8 MiB live 200 ms each, one after another: every one is
// seen, none missed. Planted (the walk taken in the reads' goroutine):
// the children born behind a walk were missed (TestChildren read "1
// missed" on a loaded CI machine).
func TestChildrenReadDuringWalk(t *testing.T) {
	var walking atomic.Int32
	testHookInWalk = func() {
		walking.Add(1)
		time.Sleep(800 * time.Millisecond)
	}
	defer func() { testHookInWalk = nil }()
	forks := cprog(t, "forks")
	r := execChildren(t, Options{SmapsEvery: time.Hour}, "sh", "-c", forks+" 0 64:3000 & "+forks+" 20 8:200 8:200 8:200; wait")
	p := r.Process
	if p.DescendantWalks == 0 {
		t.Fatalf("no descendant walked (%d walks in all): the planted walk did not run", walking.Load())
	}
	if len(p.Children) != 6 || p.DescendantsMissed != 0 {
		t.Errorf("%d descendants seen, %d missed; want all 6 seen behind walks of 800 ms\n%s", len(p.Children), p.DescendantsMissed, render(t, r))
	}
}
