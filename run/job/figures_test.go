package job

import (
	"context"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"syscall"
	"testing"
	"time"

	"memprobe/schema"
	"memprobe/trainer"
)

// TestThroughputFigures: tokens_per_sec and achieved_gflops are work over
// the steady steps' wall time, the first step left out. Planted: one
// steady step twice as slow moves both by the same factor, and a slow
// first step moves neither. (The step times are set, not measured: no
// timed assertion.)
func TestThroughputFigures(t *testing.T) {
	stats := func(first, rest time.Duration, slow int) []trainer.StepStats {
		s := []trainer.StepStats{{Duration: first}}
		for i := 1; i <= 4; i++ {
			d := rest
			if i == slow {
				d *= 2
			}
			s = append(s, trainer.StepStats{Step: i, Duration: d})
		}
		return s
	}
	run := func(s []trainer.StepStats) *schema.Result {
		r := &schema.Result{TokensPerStep: 4096, GFLOPPerStep: 2}
		summarize(r, s)
		return r
	}
	clean := run(stats(time.Second, 100*time.Millisecond, 0))
	if clean.TokensPerSec != 4*4096/0.4 || clean.AchievedGFLOPS != 4*2/0.4 {
		t.Errorf("clean: %v tokens/s, %v GFLOPS; want %v and %v", clean.TokensPerSec, clean.AchievedGFLOPS, 4*4096/0.4, 4*2/0.4)
	}
	slow := run(stats(time.Second, 100*time.Millisecond, 2))
	if want := clean.TokensPerSec * 0.4 / 0.5; slow.TokensPerSec != want || slow.AchievedGFLOPS != clean.AchievedGFLOPS*0.4/0.5 {
		t.Errorf("one step 2x slower: %v tokens/s, %v GFLOPS; want %v and %v", slow.TokensPerSec, slow.AchievedGFLOPS, want, clean.AchievedGFLOPS*0.8)
	}
	// The median of an even count is the mean of the middle two: one
	// slow step of four leaves it, and the first step is not in it.
	if clean.StepNsMedian != int64(100*time.Millisecond) || slow.StepNsMedian != int64(100*time.Millisecond) {
		t.Errorf("step_ns_median %d and %d, want 100 ms both", clean.StepNsMedian, slow.StepNsMedian)
	}
	if startup := run(stats(10*time.Second, 100*time.Millisecond, 0)); startup.TokensPerSec != clean.TokensPerSec {
		t.Errorf("a slow first step moved tokens/s: %v, want %v", startup.TokensPerSec, clean.TokensPerSec)
	}
}

// TestMemoryFiguresMove: a job run beside a planted 64 MiB buffer (made
// and written before the job, held through it) against one without:
// the sampler's peak RSS and VmHWM (peak_rss_bytes) see it, and a 1 GiB
// PROT_NONE reservation held through the job moves final_vsz_bytes and
// not RSS. VmHWM is the process's whole life: each run starts with it
// reset to the current RSS (clear_refs 5), as a fresh process's would be.
func TestMemoryFiguresMove(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the instruments read /proc")
	}
	if testing.Short() {
		t.Skip("three instrumented training runs")
	}
	run := func() *schema.Result {
		t.Helper()
		if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
			t.Skipf("cannot reset VmHWM: %v", err)
		}
		r, err := Run(context.Background(), tinyJob(3), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	clean := run()

	// The reservation first: its run must not follow one whose 64 MiB
	// the runtime keeps resident (the race detector's shadow of it is
	// never returned).
	resv, err := syscall.Mmap(-1, 0, 1<<30, syscall.PROT_NONE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		t.Fatal(err)
	}
	vsz := run()
	syscall.Munmap(resv)

	const planted = 64 << 20
	buf := make([]byte, planted)
	for i := range buf {
		buf[i] = byte(i)
	}
	rss := run()
	runtime.KeepAlive(buf)
	buf = nil
	debug.FreeOSMemory() // the plant's pages go back, for the tests after this one

	t.Logf("clean:   sampler peak %d, peak_rss_bytes %d, final VSZ %d", clean.RSSAgreement.SamplerPeakRSSBytes, clean.PeakRSSBytes, clean.FinalVSZBytes)
	t.Logf("+64 MiB: sampler peak %d, peak_rss_bytes %d", rss.RSSAgreement.SamplerPeakRSSBytes, rss.PeakRSSBytes)
	t.Logf("+1 GiB reserved: final VSZ %d, final RSS %d (clean %d)", vsz.FinalVSZBytes, vsz.FinalRSSBytes, clean.FinalRSSBytes)
	if d := int64(rss.RSSAgreement.SamplerPeakRSSBytes) - int64(clean.RSSAgreement.SamplerPeakRSSBytes); d < planted*8/10 {
		t.Errorf("sampler peak moved %d B with %d B planted", d, planted)
	}
	if d := int64(rss.PeakRSSBytes) - int64(clean.PeakRSSBytes); d < planted*8/10 {
		t.Errorf("peak_rss_bytes moved %d B with %d B planted", d, planted)
	}
	if d := int64(vsz.FinalVSZBytes) - int64(clean.FinalVSZBytes); d < 1<<30*9/10 {
		t.Errorf("final_vsz_bytes moved %d B with 1 GiB reserved", d)
	}
	if d := int64(vsz.FinalRSSBytes) - int64(clean.FinalRSSBytes); d > 16<<20 {
		t.Errorf("final_rss_bytes moved %d B with 1 GiB reserved and nothing touched", d)
	}
}
