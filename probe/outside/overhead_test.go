package outside

import (
	"context"
	"flag"
	"io"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"
)

var (
	overheadIters    = flag.Int64("overhead.iters", 300_000_000, "BenchmarkExecOverhead: iterations of testdata/cprogs/spin.c")
	overheadInterval = flag.Duration("overhead.interval", DefaultInterval, "BenchmarkExecOverhead: the sampler's interval")
)

// BenchmarkExecOverhead runs a CPU-bound C program (testdata/cprogs/spin.c)
// alone and under Exec, alternating which goes first, and reports the
// medians: wall time watched ÷ alone (wall-ratio), the program's user CPU
// time watched ÷ alone (cpu-ratio, from wait4), and the probe's own CPU
// as a share of one core (probe-cpu-%). One iteration is one pair.
//
//	go test -run '^$' -bench ExecOverhead -benchtime 10x ./probe/outside -args -overhead.interval=10ms
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
		s, err := Exec(ExecOptions{Options: Options{Interval: *overheadInterval}, Args: []string{prog, arg}, Stdout: io.Discard})
		if err != nil {
			b.Fatal(err)
		}
		r, err := s.Wait(context.Background())
		if err != nil {
			b.Fatal(err)
		}
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
