package runner

import (
	"strings"
	"testing"

	"memprobe/schema"
)

func TestFromResults(t *testing.T) {
	exit := 0
	train := func(label string, rss uint64) *schema.Result {
		return &schema.Result{Schema: schema.ResultVersion, Label: label, StartTime: "2026-01-02T03:04:05Z",
			PeakRSSBytes: rss, TokensPerSec: 1000, Steps: 3, StepNs: []int64{1e9, 1e9, 1e9}}
	}
	proc := &schema.Result{Schema: schema.ResultVersion, Kind: schema.KindProcess, StartTime: "2026-01-02T03:05:00Z", PeakRSSBytes: 7 << 20,
		Process: &schema.Process{PID: 42, Command: []string{"/usr/bin/prog", "-x"}, ExitCode: &exit, RusageMaxRSSBytes: 7 << 20, DurationMs: 1500}}
	rep, err := FromResults([]string{"a", "b", "c"}, []*schema.Result{train("threads-P6", 100), train("threads-P6", 110), proc})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 2 {
		t.Fatalf("%d runs, want 2 (two repetitions of threads-P6, one process)", len(rep.Runs))
	}
	p6, pr := rep.Runs[0], rep.Runs[1]
	if p6.Name != "threads-P6" || len(p6.Repetitions) != 2 || p6.Summary.Completed != 2 || len(p6.Outside) != 0 {
		t.Errorf("train run: %s, %d repetitions, summary %d completed, %d outside", p6.Name, len(p6.Repetitions), p6.Summary.Completed, len(p6.Outside))
	}
	if pr.Name != "process prog" || len(pr.Outside) != 1 || pr.Outside[0].MaxRSSBytes != 7<<20 || pr.Outside[0].WallSeconds != 1.5 {
		t.Errorf("process run: %+v", pr)
	}
	has := func(run schema.Run, name string) bool {
		for _, m := range run.Summary.Metrics {
			if m.Name == name {
				return true
			}
		}
		return false
	}
	for _, m := range []string{"peak_rss_bytes", "tokens_per_sec"} {
		if !has(p6, m) {
			t.Errorf("train run's summary lacks %s", m)
		}
	}
	if !has(pr, "peak_rss_bytes") || !has(pr, "max_rss_bytes") {
		t.Errorf("process run's summary lacks its memory: %+v", pr.Summary.Metrics)
	}
	for _, m := range []string{"tokens_per_sec", "go_heap_allocs_per_step", "step_ns_median"} {
		if has(pr, m) {
			t.Errorf("process run's summary has %s, which a process does not measure", m)
		}
	}
	if rep.StartTime != "2026-01-02T03:04:05Z" || rep.EndTime < "2026-01-02T03:05:01Z" {
		t.Errorf("report spans %s to %s", rep.StartTime, rep.EndTime)
	}
	if _, err := FromResults(nil, nil); err == nil {
		t.Error("no results: no error")
	}
}

func TestPool(t *testing.T) {
	rep := func(commit string, rss ...uint64) *schema.Report {
		run := schema.Run{Name: "threads-P6", Plan: "threads", Phase: "P6", Status: schema.StatusOK,
			Config: schema.Config{Preset: "seed", Threads: 63, Steps: 3}, Repetitions: []schema.Result{}, Outside: []schema.Outside{}}
		for i, b := range rss {
			run.Repetitions = append(run.Repetitions, schema.Result{Schema: schema.ResultVersion, PeakRSSBytes: b})
			run.Outside = append(run.Outside, schema.Outside{Repetition: i + 1, Status: schema.StatusOK, MaxRSSBytes: int64(b)})
		}
		return &schema.Report{Schema: schema.ReportVersion, Environment: schema.Environment{VCSRevision: commit},
			StartTime: "2026-01-01T00:00:00Z", EndTime: "2026-01-01T00:01:00Z", Runs: []schema.Run{run}}
	}
	out, err := Pool([]string{"a", "b"}, []*schema.Report{rep("c1", 100, 101, 102), rep("c1", 103, 104)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Runs) != 1 {
		t.Fatalf("%d runs, want the one configuration", len(out.Runs))
	}
	r := out.Runs[0]
	if len(r.Repetitions) != 5 || len(r.Outside) != 5 || r.Summary.Completed != 5 || r.Status != schema.StatusOK {
		t.Errorf("pooled run: %d repetitions, %d outside, %d completed, %s", len(r.Repetitions), len(r.Outside), r.Summary.Completed, r.Status)
	}
	for i, o := range r.Outside {
		if o.Repetition != i+1 {
			t.Errorf("outside[%d] is repetition %d", i, o.Repetition)
		}
	}
	if len(out.Warnings) != 0 {
		t.Errorf("warnings for one commit: %q", out.Warnings)
	}
	out, _ = Pool([]string{"a", "b"}, []*schema.Report{rep("c1", 100), rep("c2", 100)})
	if len(out.Warnings) != 1 || !strings.Contains(out.Warnings[0], `commit "c2"`) {
		t.Errorf("two commits pooled without a warning: %q", out.Warnings)
	}
}
