package htmlreport

import (
	"strings"
	"testing"

	"memprobe/schema"
)

// TestReconcileCaptionKind: the RSS-in-parts chart's caption follows the
// plan's kind: a plan file's program, watched from outside, is walked at
// its peak, not at a step boundary, whichever of its phases finished
// (here the first failed and has no result at all).
func TestReconcileCaptionKind(t *testing.T) {
	parts := []schema.ReconciliationPart{{Name: "stacks.main", Bytes: 4 << 20}, {Name: "file.mapped", Bytes: 8 << 20}}
	idx := func(i int) *int { return &i }
	failed := &schema.Run{Name: "p-a", Plan: "p", Phase: "a", Status: schema.StatusFailed, Command: []string{"./prog"}, PhaseIndex: idx(0)}
	last := partsRun("b", parts)
	last.Command, last.PhaseIndex = []string{"./prog"}, idx(1)
	last.Repetitions[0].Kind = schema.KindProcess
	p := &planRuns{name: "p", runs: []*schema.Run{failed, last}, groups: [][]*schema.Run{{failed, last}}}
	c, note := reconcileChart(p)
	if c == nil {
		t.Fatalf("no chart: %s", note)
	}
	if strings.Contains(c.Caption, "step boundary") || !strings.Contains(c.Caption, "peak walk") {
		t.Errorf("a plan file's caption: %q", c.Caption)
	}
	// A kind told by the run alone: a plan file's result that does not
	// say it is a process (an older report) is still captioned as one.
	last.Repetitions[0].Kind = ""
	if c, _ := reconcileChart(p); c == nil || strings.Contains(c.Caption, "step boundary") {
		t.Errorf("a plan file's run without the process kind: %+v", c)
	}
	trainer := &planRuns{name: "t", runs: []*schema.Run{partsRun("before", parts), partsRun("P1", parts)}}
	trainer.groups = [][]*schema.Run{trainer.runs}
	if c, _ := reconcileChart(trainer); c == nil || !strings.Contains(c.Caption, "step boundary") {
		t.Errorf("the trainer's caption: %+v", c)
	}
}
