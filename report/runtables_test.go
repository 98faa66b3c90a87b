package report

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"memprobe/internal/golden"
	"memprobe/internal/table"
	"memprobe/schema"
)

// TestRunTables renders the fixture report in every format; the golden
// files are named after the format.
func TestRunTables(t *testing.T) {
	rep := readFixtureReport(t)
	for _, f := range table.Formats() {
		var buf bytes.Buffer
		if err := WriteRunTables(&buf, rep, f); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, "run-tables."+string(f)+".golden", buf.Bytes())
	}
}

// TestJudge: the verdicts of each kind of claim, and the claims that
// cannot be checked.
func TestJudge(t *testing.T) {
	run := func(phase string, status schema.Status, rss, tokens float64) *runView {
		// Three repetitions 0.1 % apart: a claimed change is confirmed
		// only where the runs establish it (ranges apart by more than
		// their spread at 3+3).
		r := &schema.Run{Phase: phase, Status: status, Repetitions: make([]schema.Result, 3)}
		if status != schema.StatusOK {
			r.Repetitions = nil
		}
		for _, m := range []struct {
			name string
			x    float64
		}{{metricPeakRSS, rss}, {metricTokens, tokens}} {
			r.Summary.Metrics = append(r.Summary.Metrics, schema.Metric{Name: m.name, Values: []float64{m.x * 0.999, m.x, m.x * 1.001}, N: 3, Median: m.x, Min: m.x * 0.999, Max: m.x * 1.001})
		}
		return newRunView(r)
	}
	g := &group{runs: []*runView{
		run("before", schema.StatusOK, 1000e6, 100),
		run("P1", schema.StatusOK, 600e6, 100),
		run("P2", schema.StatusFailed, 0, 0),
		run("P3", schema.StatusOK, 590e6, 0),
		run("P4", schema.StatusOK, 590e6, 50),
	}}
	delta := func(versus string, d float64) schema.Expectation {
		return schema.Expectation{Metric: metricPeakRSS, Versus: versus, Delta: d}
	}
	ratio := func(metric, versus string, r float64) schema.Expectation {
		return schema.Expectation{Metric: metric, Versus: versus, Ratio: r}
	}
	for _, c := range []struct {
		phase string
		e     schema.Expectation
		want  string
		note  string
	}{
		{"P1", delta("previous", -455e6), AgreeYes, ""},
		{"P1", delta("previous", -150e6), AgreeDirection, "P1, direction only: peak RSS changed by -381.5 MiB from before; the note claims -143.1 MiB (-150 MB)"},
		{"P1", delta("previous", +100e6), AgreeNo, "P1, no: peak RSS changed by -381.5 MiB from before; the note claims +95.4 MiB (+100 MB)"},
		{"P1", ratio(metricPeakRSS, "before", 0.5), AgreeYes, ""},
		{"P1", ratio(metricPeakRSS, "before", 0.1), AgreeDirection, "P1, direction only: peak RSS 0.6x of before; the note claims 0.1x"},
		{"P1", ratio(metricTokens, "previous", 63), AgreeNo, "P1, no: tokens/s 1x of before; the note claims 63x"},
		{"P4", ratio(metricTokens, "previous", 2), AgreeUnchecked, "P4: tokens/s not checked: tokens/s of P3 is 0: no ratio"},
		{"P3", delta("previous", -15e6), AgreeUnchecked, "P3: peak RSS not checked: P2 failed"},
		{"P2", delta("previous", -15e6), AgreeUnchecked, "P2: peak RSS not checked: P2 failed"},
		{"P1", schema.Expectation{Metric: metricPeakRSS, Versus: "absolute", Delta: 1e9}, AgreeYes, ""},
		{"P1", schema.Expectation{Metric: metricPeakRSS, Versus: "absolute", Delta: 1.32e10}, AgreeNo, "P1, no: peak RSS 572.2 MiB; the note claims 12.3 GiB (13.2 GB)"},
		{"P1", schema.Expectation{Metric: "step_ns_median", Versus: "absolute", Delta: 45e9}, AgreeNo, "P1, no: step time 0 ns; the note claims 45.0 s"},
		{"P1", schema.Expectation{Metric: "no_such_bytes", Versus: "absolute", Delta: 1}, AgreeUnchecked, "P1: no_such_bytes not checked: no no_such_bytes in P1's results"},
		{"P1", delta("sideways", -1), AgreeUnchecked, `P1: peak RSS not checked: versus "sideways" is not previous, before or absolute`},
	} {
		v := g.phase(phaseIndex(c.phase))
		got := judge(g, v, c.e)
		if got.verdict != c.want || got.footnote(c.phase) != c.note {
			t.Errorf("%s %+v: %q, footnote %q; want %q, %q", c.phase, c.e, got.verdict, got.footnote(c.phase), c.want, c.note)
		}
	}
	for _, c := range []struct {
		verdicts []string
		want     string
	}{
		{nil, AgreeUnchecked},
		{[]string{AgreeUnchecked, AgreeYes}, AgreeYes},
		{[]string{AgreeYes, AgreeDirection}, AgreeDirection},
		{[]string{AgreeDirection, AgreeNo, AgreeYes}, AgreeNo},
	} {
		var cs []check
		for _, v := range c.verdicts {
			cs = append(cs, check{verdict: v})
		}
		if got := combine(cs); got != c.want {
			t.Errorf("combine(%q) = %q, want %q", c.verdicts, got, c.want)
		}
	}
}

func TestPhaseIndex(t *testing.T) {
	for phase, want := range map[string]int{"before": 0, "P1": 1, "P12": 12, "P0": -1, "P": -1, "after": -1, "1": -1, "P-1": -1} {
		if got := phaseIndex(phase); got != want {
			t.Errorf("phaseIndex(%q) = %d, want %d", phase, got, want)
		}
	}
}

// TestLedgerTableOutsideModel: a component the ledger holds and the model
// has no formula for (the tape engine's buffers) is marked in its row and
// kept out of the total; summed in, it would make the total's diff a
// measure of the model's blind spot, not of a wrong buffer.
func TestLedgerTableOutsideModel(t *testing.T) {
	totalRow := func(rep *schema.Report) (string, string) {
		var buf bytes.Buffer
		if err := WriteRunTables(&buf, rep, table.Markdown); err != nil {
			t.Fatal(err)
		}
		var total, tape string
		inLedger := false
		for _, l := range strings.Split(buf.String(), "\n") {
			switch {
			case strings.Contains(l, "expected vs measured by component"):
				inLedger = true
			case inLedger && strings.HasPrefix(l, "| total"):
				total, inLedger = l, false
			case inLedger && strings.HasPrefix(l, "| tape "):
				tape = l
			}
		}
		return total, tape
	}
	clean, _ := totalRow(readFixtureReport(t))
	rep := readFixtureReport(t)
	planted := 0
	for i := range rep.Runs {
		for j := range rep.Runs[i].Repetitions {
			r := &rep.Runs[i].Repetitions[j]
			if len(r.Ledger) > 0 {
				r.Ledger = append(r.Ledger, schema.LedgerRow{Component: "tape", MeasuredBytes: 90 << 20, PeakBytes: 90 << 20})
				planted++
			}
		}
	}
	if planted == 0 {
		t.Fatal("the fixture has no ledger to plant in")
	}
	got, tape := totalRow(rep)
	t.Logf("clean:   %s\nplanted: %s\ntape:    %s", clean, got, tape)
	if !strings.Contains(tape, "outside the model") {
		t.Errorf("the planted tape row is not marked outside the model: %q", tape)
	}
	// The total's figures are those of the clean table: only the label
	// says that a component was left out.
	// The figures past the label and, where there is one, the model
	// column (only a table with a row outside the model has it).
	cells := func(row string, skip int) []string {
		f := strings.Split(row, "|")
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		return f[min(skip, len(f)):]
	}
	if !strings.HasPrefix(got, "| total in both") || !slices.Equal(cells(got, 3), cells(clean, 2)) {
		t.Errorf("total moved with a component outside the model:\nclean   %s\nplanted %s", clean, got)
	}
}
