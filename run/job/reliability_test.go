package job

import (
	"context"
	"errors"
	"io"
	"math"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"memprobe/instrument/procfs"
	"memprobe/internal/goroutines"
	"memprobe/trainer"
	"memprobe/trainer/model"
	"memprobe/trainer/phase"
)

// TestRunStopped: a job whose context ends after its second step returns
// the result of the two steps, marked interrupted with a warning, and a
// *StoppedError whose cause is the context's; the checkpoint is written;
// no goroutine is left behind.
func TestRunStopped(t *testing.T) {
	before := runtime.NumGoroutine()
	cause := errors.New("test stop")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	o := tinyJob(50)
	o.Checkpoint = filepath.Join(t.TempDir(), "ck.bin")
	o.Generate = 5
	o.AfterStep = func(step int) {
		if step == 2 {
			cancel(cause)
		}
	}
	r, err := Run(ctx, o, io.Discard)
	var st *StoppedError
	if !errors.As(err, &st) || !errors.Is(err, cause) || st.Steps != 2 || st.Of != 50 {
		t.Fatalf("Run: %v, want a StoppedError after 2 of 50 steps caused by %v", err, cause)
	}
	if r == nil || !r.Interrupted || r.Steps != 2 || len(r.Losses) != 2 || r.Runtime == nil || len(r.Runtime.Steps) != 2 {
		t.Fatalf("result %+v", r)
	}
	if len(r.GeneratedIDs) != 0 {
		t.Error("an interrupted job generated text")
	}
	if w := r.Warnings; len(w) == 0 || !strings.Contains(w[len(w)-1], "interrupted after 2 of 50 steps (test stop)") {
		t.Errorf("warnings %q", w)
	}
	if _, err := trainer.ReadCheckpointInfo(o.Checkpoint); err != nil {
		t.Errorf("checkpoint of the interrupted job: %v", err)
	}
	goroutines.Settle(t, before)

	// Stopped before the first step: no result.
	ctx, cancel2 := context.WithCancelCause(context.Background())
	cancel2(cause)
	r, err = Run(ctx, tinyJob(3), io.Discard)
	if r != nil || !errors.As(err, &st) || st.Steps != 0 || !strings.Contains(err.Error(), "before the first step") {
		t.Errorf("stopped at once: result %v, %v", r != nil, err)
	}
	goroutines.Settle(t, before)

	// Stopped while the first step runs (the stop lands in AfterStep(1),
	// as a signal during that step is seen at the next step's check): the
	// step counts, and its result is written (docs/reliability.md).
	ctx, cancel3 := context.WithCancelCause(context.Background())
	defer cancel3(nil)
	o = tinyJob(3)
	o.AfterStep = func(step int) {
		if step == 1 {
			cancel3(cause)
		}
	}
	r, err = Run(ctx, o, io.Discard)
	if !errors.As(err, &st) || st.Steps != 1 || st.Of != 3 || r == nil || !r.Interrupted || r.Steps != 1 {
		t.Errorf("stopped during the first step: result %+v, %v; want a 1-step result", r != nil, err)
	}
	goroutines.Settle(t, before)
}

// TestMemoryRefusal: a configuration predicted above --mem-limit or the
// memory available is refused before anything is built, with the figure.
func TestMemoryRefusal(t *testing.T) {
	o := tinyJob(1)
	p, err := Predict(configOf(&o, ""), nil)
	if err != nil || p.PeakRSSBytes < MarginBytes {
		t.Fatalf("prediction %+v, %v", p, err)
	}
	o.MemLimit = p.PeakRSSBytes - 1
	_, err = Run(context.Background(), o, io.Discard)
	var me *MemoryError
	if !errors.As(err, &me) || me.Predicted != p.PeakRSSBytes || !strings.Contains(err.Error(), "is above --mem-limit") || !strings.Contains(err.Error(), iec(p.PeakRSSBytes)) {
		t.Errorf("Run with --mem-limit below the prediction: %v", err)
	}

	old := memAvailable
	defer func() { memAvailable = old }()
	memAvailable = func() (int64, error) { return p.PeakRSSBytes / 2, nil }
	o.MemLimit = 0
	_, err = Run(context.Background(), o, io.Discard)
	if !errors.As(err, &me) || me.Limit != p.PeakRSSBytes/2 || !strings.Contains(err.Error(), "memory available (MemAvailable)") {
		t.Errorf("Run above the memory available: %v", err)
	}
}

// TestPredictThreads1024: the threads plan's before state at 1024
// threads is predicted at tens of GB (the figure the refusal gives); its
// fixed state stays small.
func TestPredictThreads1024(t *testing.T) {
	pl, err := phase.Lookup("threads")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		phase    string
		min, max int64
	}{{"before", 20 << 30, 200 << 30}, {"P6", 0, 1 << 30}} {
		o := Options{Trainer: trainer.Options{Config: model.Presets["seed"], Threads: 1024}, Data: "synthetic:24MB", Steps: 3, Plan: "threads", Phase: c.phase}
		if err := pl.Configure(&o.Trainer, c.phase); err != nil {
			t.Fatal(err)
		}
		p, err := Predict(configOf(&o, ""), nil)
		if err != nil || p.PeakRSSBytes < c.min || p.PeakRSSBytes > c.max {
			t.Errorf("threads-%s at 1024 threads: predicted %s (%v), want in [%s, %s]", c.phase, iec(p.PeakRSSBytes), err, iec(c.min), iec(c.max))
		}
	}
}

// TestWatchMemory: past MemLimit the watchdog cancels the job's context
// with a *MemLimitError, and past the hard margin calls MemHardStop; stop
// restores the Go memory limit and ends the watchdog.
func TestWatchMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the watchdog reads /proc")
	}
	before := runtime.NumGoroutine()
	st, err := procfs.ReadStatus(procfs.Self)
	if err != nil {
		t.Skip(err)
	}
	oldLimit := debug.SetMemoryLimit(-1)
	limit := int64(st.VmRSSBytes) + 64<<20
	hard := make(chan *MemLimitError, 1)
	o := &Options{MemLimit: limit, MemHardStop: func(e *MemLimitError) { hard <- e }}
	ctx, stop := watchMemory(context.Background(), o)
	if got := debug.SetMemoryLimit(-1); got != int64(0.9*float64(limit)) {
		t.Errorf("Go memory limit %d, want %d", got, int64(0.9*float64(limit)))
	}
	// Touch more than the limit and the hard margin above the current RSS.
	ballast := make([]byte, 64<<20+HardMargin(limit)+32<<20)
	for i := 0; i < len(ballast); i += 4096 {
		ballast[i] = 1
	}
	<-ctx.Done()
	var ml *MemLimitError
	if !errors.As(context.Cause(ctx), &ml) || ml.Limit != limit || ml.RSS <= limit || ml.Hard {
		t.Errorf("cause %v, want a soft MemLimitError", context.Cause(ctx))
	}
	e := <-hard
	if !e.Hard || !strings.Contains(e.Error(), "before the job could stop") {
		t.Errorf("hard stop: %v", e)
	}
	runtime.KeepAlive(ballast)
	stop()
	if got := debug.SetMemoryLimit(-1); got != oldLimit {
		t.Errorf("Go memory limit after stop %d, want %d restored", got, oldLimit)
	}
	if oldLimit == math.MaxInt64 {
		debug.SetMemoryLimit(math.MaxInt64)
	}
	goroutines.Settle(t, before)
}

// TestMemLimitValidate: a negative limit is an options error.
func TestMemLimitValidate(t *testing.T) {
	o := tinyJob(1)
	o.MemLimit = -1
	_, err := Run(context.Background(), o, io.Discard)
	var oe *OptionsError
	if !errors.As(err, &oe) || !strings.Contains(err.Error(), "mem-limit") {
		t.Errorf("negative --mem-limit: %v", err)
	}
}
