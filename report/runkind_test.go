package report

import (
	"bytes"
	"strings"
	"testing"

	"memprobe/internal/table"
	"memprobe/schema"
)

// TestPlanKindColumns: the phase table's figures follow the plan's kind,
// not which phase finished. A plan file's phases are programs watched from
// outside: all failed, they get no trainer columns (peak Go heap,
// tokens/s, the speedup); its first failed and its last finished, no
// ledger table. A built-in plan whose phases all failed keeps the
// trainer's.
func TestPlanKindColumns(t *testing.T) {
	idx := func(i int) *int { return &i }
	planFile := func(phase string, i int, status schema.Status) schema.Run {
		r := schema.Run{Name: "p-" + phase, Plan: "p", Phase: phase, Status: status,
			Command: []string{"/bin/false"}, Index: idx(i), PhaseIndex: idx(i), Repetitions: []schema.Result{}, Outside: []schema.Outside{}}
		if status != schema.StatusOK {
			r.Reason = "repetition 1 of 1: exit status 1"
		}
		return r
	}
	render := func(runs ...schema.Run) string {
		t.Helper()
		var buf bytes.Buffer
		rep := &schema.Report{Schema: schema.ReportVersion, Runs: runs, Warnings: []string{}}
		if err := WriteRunTables(&buf, rep, table.Text); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	trainer := []string{"peak Go heap", "allocs/step", "tokens/s", "vs before"}

	out := render(planFile("a", 0, schema.StatusFailed), planFile("b", 1, schema.StatusFailed))
	for _, col := range trainer {
		if strings.Contains(out, col) {
			t.Errorf("a plan file's failed phases get the trainer's column %q:\n%s", col, out)
		}
	}
	if !strings.Contains(out, "peak RSS") {
		t.Errorf("no peak RSS column:\n%s", out)
	}

	ok := planFile("b", 1, schema.StatusOK)
	ok.Repetitions = []schema.Result{{Schema: schema.ResultVersion, Kind: schema.KindProcess, PeakRSSBytes: 1 << 20}}
	out = render(planFile("a", 0, schema.StatusFailed), ok)
	if strings.Contains(out, "expected vs measured") || strings.Contains(out, "peak Go heap") {
		t.Errorf("a plan file with a failed first phase gets the trainer's tables:\n%s", out)
	}

	builtin := func(phase string) schema.Run {
		return schema.Run{Name: "threads-" + phase, Plan: "threads", Phase: phase, Status: schema.StatusFailed,
			Reason: "exit status 1", Repetitions: []schema.Result{}, Outside: []schema.Outside{}}
	}
	out = render(builtin("before"), builtin("P1"))
	for _, col := range []string{"peak Go heap", "tokens/s"} {
		if !strings.Contains(out, col) {
			t.Errorf("a built-in plan's failed phases lack the trainer's column %q:\n%s", col, out)
		}
	}
}
