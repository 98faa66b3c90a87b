package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"memprobe/internal/goroutines"
	"memprobe/schema"
)

// TestFaults: each kind of child fault is recorded per configuration
// with its reason, the run goes on, no process and no goroutine is left
// behind, and every child was given the run's --mem-limit.
func TestFaults(t *testing.T) {
	before := runtime.NumGoroutine()
	o := fakeOptions(t, "signal:decode-before;garbage:decode-P1;memstop:decode-P2")
	o.Plans, o.Count = []string{"decode"}, 2
	rep, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	noChildrenLeft(t)
	goroutines.Settle(t, before)
	for _, c := range []struct {
		status schema.Status
		reason string
	}{
		{schema.StatusKilled, "repetition 1 of 2: killed by SIGKILL (the kernel's OOM killer sends SIGKILL)"},
		{schema.StatusFailed, "repetition 1 of 2: exit status 0 but no readable result: "},
		{schema.StatusKilled, "repetition 1 of 2: exit status 1: probe: stopped after 1 of 3 steps: RSS 1.2 GiB passed --mem-limit 1GiB"},
		{schema.StatusOK, ""},
	} {
		r := rep.Runs[0]
		rep.Runs = rep.Runs[1:]
		if r.Status != c.status || !strings.HasPrefix(r.Reason, c.reason) {
			t.Errorf("%s: status %s, reason %q; want %s, %q", r.Name, r.Status, r.Reason, c.status, c.reason)
		}
	}
}

// TestInterruptNoLeak: an interrupted run leaves no child process and no
// goroutine behind.
func TestInterruptNoLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	o := fakeOptions(t, "sleep:decode-before")
	o.Plans = []string{"decode"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o.Stderr = writerFunc(func(p []byte) {
		if strings.Contains(string(p), "decode-before rep 1") {
			cancel() // the child is being started: Run must kill it
		}
	})
	rep, err := Run(ctx, o)
	if !errors.Is(err, ErrInterrupted) || len(rep.Runs) != 1 || rep.Runs[0].Status != schema.StatusKilled {
		t.Fatalf("Run: %v, %d runs", err, len(rep.Runs))
	}
	noChildrenLeft(t)
	goroutines.Settle(t, before)
}

// TestResume: a run resumed from a report copies the configurations it
// finished with enough repetitions (they would crash if run again), runs
// the others, and says so; a report with fewer repetitions than asked
// is run again; a file that is not a report is an error naming it.
func TestResume(t *testing.T) {
	o := fakeOptions(t, "crash:decode-P2")
	o.Plans = []string{"decode"}
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	first := o.Out

	o2 := fakeOptions(t, "crash:decode-before;crash:decode-P1;crash:decode-P3")
	o2.Plans, o2.Resume = []string{"decode"}, first
	rep, err := Run(context.Background(), o2)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rep.Runs {
		got = append(got, r.Name+":"+string(r.Status))
	}
	if strings.Join(got, " ") != "decode-before:ok decode-P1:ok decode-P2:ok decode-P3:ok" {
		t.Errorf("resumed runs %v", got)
	}
	if !strings.Contains(rep.Warnings[0], "resumed from "+first+": 3 of 4 configurations measured there") {
		t.Errorf("warnings %q", rep.Warnings)
	}
	if w, err := schema.ReadReport(o2.Out); err != nil || len(w.Runs) != 4 {
		t.Errorf("merged report written: %v", err)
	}

	// Three repetitions asked, one measured: it is kept, two more run.
	firstRep, err := schema.ReadReport(first)
	if err != nil {
		t.Fatal(err)
	}
	o3 := fakeOptions(t, "")
	o3.Plans, o3.Phases, o3.Resume, o3.Count = []string{"decode"}, []string{"before"}, first, 3
	rep, err = Run(context.Background(), o3)
	if err != nil || !strings.Contains(rep.Warnings[0], "0 of 1 configurations") || !strings.Contains(rep.Warnings[0], "1 measured in part") {
		t.Errorf("resume with more repetitions: %v, %+v", err, rep.Warnings)
	}
	if run := rep.Runs[0]; len(run.Repetitions) != 3 || len(run.Outside) != 3 || run.Summary.Completed != 3 || run.Status != schema.StatusOK {
		t.Errorf("resumed run: %d repetitions, %d outside, %d completed, status %s; want 3, 3, 3, ok", len(run.Repetitions), len(run.Outside), run.Summary.Completed, run.Status)
	} else {
		// The child's command line names its result file in the run's
		// own temporary directory: another run's differs.
		kept, was := strings.Join(run.Repetitions[0].CommandLine, " "), strings.Join(firstRep.Runs[0].Repetitions[0].CommandLine, " ")
		if kept != was || run.Outside[0].WallSeconds != firstRep.Runs[0].Outside[0].WallSeconds {
			t.Errorf("the measured repetition was not kept: %q, want %q", kept, was)
		}
		if again := strings.Join(run.Repetitions[1].CommandLine, " "); again == was {
			t.Errorf("repetition 2 has the first run's command line %q", again)
		}
		for i, o := range run.Outside {
			if o.Repetition != i+1 {
				t.Errorf("outside[%d] is repetition %d, want %d", i, o.Repetition, i+1)
			}
		}
	}

	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte("\x00\x01 not json"), 0o644)
	o4 := fakeOptions(t, "")
	o4.Plans, o4.Resume = []string{"decode"}, bad
	if _, err := Run(context.Background(), o4); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("resume from garbage: %v", err)
	}
}
