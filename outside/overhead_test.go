package outside

import (
	"context"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"memprobe/outside/sites"
	"memprobe/outside/sites/sitestest"
)

var (
	overheadIters    = flag.Int64("overhead.iters", 300_000_000, "BenchmarkExecOverhead: iterations of testdata/cprogs/spin.c")
	overheadInterval = flag.Duration("overhead.interval", DefaultInterval, "BenchmarkExecOverhead: the sampler's interval")

	sitesN       = flag.Int("overhead.stress-n", 2_500_000, "BenchmarkSitesOverhead: allocations per thread of outside/sites/testdata/stress.c")
	sitesThreads = flag.Int("overhead.stress-threads", 4, "BenchmarkSitesOverhead: its threads")
	overheadProg = flag.String("overhead.prog", "", "BenchmarkSitesOverhead: a built stress program (else built with gcc)")
	sitesRate    = flag.Int64("overhead.sites-rate", sites.DefaultRate, "BenchmarkSitesOverhead: --sites-rate")
)

// BenchmarkExecOverhead runs a CPU-bound C program (testdata/cprogs/spin.c)
// alone and under Exec, alternating which goes first, and reports the
// medians: wall time watched ÷ alone (wall-ratio), the program's user CPU
// time watched ÷ alone (cpu-ratio, from wait4), and the probe's own CPU
// as a share of one core (probe-cpu-%). One iteration is one pair.
//
//	go test -run '^$' -bench ExecOverhead -benchtime 10x ./outside -args -overhead.interval=10ms
func BenchmarkExecOverhead(b *testing.B) {
	prog := cprog(b, "spin")
	arg := strconv.FormatInt(*overheadIters, 10)
	alone := func() (wall, user time.Duration) {
		cmd := exec.Command(prog, arg)
		t0 := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0), cmd.ProcessState.UserTime()
	}
	var probeCPU []float64
	watched := func() (wall, user time.Duration) {
		t0 := time.Now()
		r := execWait(b, ExecOptions{Options: Options{Interval: *overheadInterval}, Args: []string{prog, arg}, Stdout: io.Discard})
		probeCPU = append(probeCPU, r.Process.Overhead.ProbeCPUPct)
		return time.Since(t0), time.Duration(r.Process.RusageUserMs * float64(time.Millisecond))
	}
	var wallR, cpuR []float64
	var wallA, wallW []float64
	for i := 0; i < b.N; i++ {
		var wa, ua, ww, uw time.Duration
		if i%2 == 0 {
			wa, ua = alone()
			ww, uw = watched()
		} else {
			ww, uw = watched()
			wa, ua = alone()
		}
		wallA, wallW = append(wallA, wa.Seconds()), append(wallW, ww.Seconds())
		wallR = append(wallR, ww.Seconds()/wa.Seconds())
		cpuR = append(cpuR, uw.Seconds()/ua.Seconds())
		b.Logf("pair %d: alone %.3f s (user %.3f s), watched %.3f s (user %.3f s)", i, wa.Seconds(), ua.Seconds(), ww.Seconds(), uw.Seconds())
	}
	b.ReportMetric(median(wallA), "alone-s")
	b.ReportMetric(median(wallW), "watched-s")
	b.ReportMetric(median(wallR), "wall-ratio")
	b.ReportMetric(median(cpuR), "cpu-ratio")
	b.ReportMetric(median(probeCPU), "probe-cpu-%")
}

// BenchmarkSitesOverhead is the overhead goal for --sites: the
// multithreaded allocator stress (outside/sites/testdata/stress.c, 10
// million allocations by default) alone, under Exec with Sites at
// -overhead.sites-rate (the library preloaded, the sampler reading /proc
// and the records analysed after the exit), and under Exec without Sites
// (the sampler alone), rotating which goes first. It reports the medians
// of the program's wall time (alone-s; sites-s: Process.DurationMs) and
// of each iteration's ratios to alone: wall (sites-wall-ratio,
// exec-wall-ratio) and CPU, user + system from wait4 (sites-cpu-ratio,
// exec-cpu-ratio). The goal is sites-wall-ratio at most 1.10. One
// iteration is one triple. MEMPROBE_SITES_LIB names a built library
// (else it is built, which needs gcc), and the stress program is built
// with gcc unless -overhead.prog names it.
//
//	go test -run '^$' -bench SitesOverhead -benchtime 9x ./outside
func BenchmarkSitesOverhead(b *testing.B) {
	if os.Getenv(sites.EnvLib) == "" {
		sitestest.Lib(b)
	}
	prog := *overheadProg
	if prog == "" {
		prog = filepath.Join(buildDir, "stress")
		if out, err := exec.Command("gcc", "-O2", "-g", "-pthread", "-o", prog, "sites/testdata/stress.c").CombinedOutput(); err != nil {
			b.Skipf("gcc: %v\n%s", err, out)
		}
	}
	args := []string{prog, strconv.Itoa(*sitesN), strconv.Itoa(*sitesThreads)}
	type run struct{ wall, cpu float64 }
	alone := func() run {
		cmd := exec.Command(args[0], args[1:]...)
		t0 := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		st := cmd.ProcessState
		return run{time.Since(t0).Seconds(), (st.UserTime() + st.SystemTime()).Seconds()}
	}
	watched := func(withSites bool) run {
		o := ExecOptions{Options: Options{OutDir: b.TempDir()}, Args: args, Stdout: io.Discard}
		if withSites {
			o.Sites = SitesOptions{Enabled: true, Rate: *sitesRate}
		}
		r := execWait(b, o)
		p := r.Process
		if withSites && (p.Sites == nil || p.Sites.AllocObjects == 0) {
			b.Fatalf("no sites recorded: %+v", p.Sites)
		}
		return run{p.DurationMs / 1e3, (p.RusageUserMs + p.RusageSystemMs) / 1e3}
	}
	var aloneW, sitesW, sw, sc, ew, ec []float64
	for i := 0; i < b.N; i++ {
		var a, st, ex run
		steps := []func(){func() { a = alone() }, func() { st = watched(true) }, func() { ex = watched(false) }}
		for j := range steps {
			steps[(i+j)%len(steps)]()
		}
		aloneW, sitesW = append(aloneW, a.wall), append(sitesW, st.wall)
		sw, sc = append(sw, st.wall/a.wall), append(sc, st.cpu/a.cpu)
		ew, ec = append(ew, ex.wall/a.wall), append(ec, ex.cpu/a.cpu)
		b.Logf("triple %d: alone %.3f s (CPU %.3f s), --sites %.3f s (CPU %.3f s), exec %.3f s (CPU %.3f s)", i, a.wall, a.cpu, st.wall, st.cpu, ex.wall, ex.cpu)
	}
	b.ReportMetric(median(aloneW), "alone-s")
	b.ReportMetric(median(sitesW), "sites-s")
	b.ReportMetric(median(sw), "sites-wall-ratio")
	b.ReportMetric(median(sc), "sites-cpu-ratio")
	b.ReportMetric(median(ew), "exec-wall-ratio")
	b.ReportMetric(median(ec), "exec-cpu-ratio")
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// TestProbeCPUWhileWatching plants CPU in the analysis after the watch,
// 800 ms of it: probe_cpu_ms, the probe's cost to the program while it
// ran, must not take it in, and analysis_cpu_ms must. Before the two were
// told apart, probe_cpu_ms held the analysis of --sites' records: 255 ms
// "over 1.50 s (16.97 % of one core)" on the stress program, of which
// about 80 ms was spent while it ran.
func TestProbeCPUWhileWatching(t *testing.T) {
	const burn = 800 * time.Millisecond
	testHookAfterWatch = func() {
		for c0 := selfCPU(); selfCPU()-c0 < burn; {
		}
	}
	defer func() { testHookAfterWatch = nil }()
	r := execWait(t, ExecOptions{Args: []string{"sleep", "0.2"}, Stdout: io.Discard})
	o := r.Process.Overhead
	t.Logf("probe_cpu_ms %.1f (%.2f %%), analysis_cpu_ms %.1f", o.ProbeCPUMs, o.ProbeCPUPct, o.AnalysisCPUMs)
	if o.AnalysisCPUMs < ms64(burn) {
		t.Errorf("analysis_cpu_ms %.1f: below the %v planted after the watch", o.AnalysisCPUMs, burn)
	}
	if o.ProbeCPUMs >= ms64(burn) {
		t.Errorf("probe_cpu_ms %.1f: holds the %v planted after the watch", o.ProbeCPUMs, burn)
	}
	if o.ProbeCPUMs <= 0 || o.ProbeCPUPct <= 0 {
		t.Errorf("probe_cpu_ms %.1f, probe_cpu_pct %.2f: watching 0.2 s took no CPU", o.ProbeCPUMs, o.ProbeCPUPct)
	}
}

// TestDurationEndsAtExit plants a walk that takes 2 s while a program
// runs that sleeps 0.2 s once the walk has begun: the watch winds down
// after it, and duration_ms, the program's lifetime, must not take the
// wait in (it read 2.0 s when it ended with the watch), nor leave out
// its start (it ran from the session's start, taken after the execve, by
// 0.2 ms to 8.6 ms on a loaded machine: sleep 0.2 read 197.5 ms). The
// program waits for the walk (the end of its standard input): left to
// run at once, a machine at load 15 took no walk in its 0.2 s.
func TestDurationEndsAtExit(t *testing.T) {
	const stall = 2 * time.Second
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var once sync.Once
	testHookInWalk = func() {
		once.Do(func() {
			w.Close()
			time.Sleep(stall)
		})
	}
	defer func() { testHookInWalk = nil }()
	t0 := time.Now()
	s, err := Exec(ExecOptions{Args: []string{"sh", "-c", "read x; sleep 0.2"}, Stdin: r, Stdout: io.Discard})
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Wait(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p := res.Process
	if since := time.Since(t0); since < stall {
		t.Fatalf("the watch took %v: the planted %v walk did not hold it", since, stall)
	}
	if p.DurationMs < 200 || p.DurationMs >= ms64(stall) {
		t.Errorf("duration_ms %.1f: the program's lifetime is 200 ms and more (its sleep 0.2), and less than the %v the watch waited for the walk", p.DurationMs, stall)
	}
}
