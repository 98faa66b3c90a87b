package report

import (
	"slices"
	"testing"

	"memprobe/schema"
)

// TestJudgeNoiseFloor plants the threads plan's P1 as measured: peak RSS
// moved -256 KiB of 4.53 GiB, within the spread of three repetitions
// (2 MiB) and under 1 %, against a claimed -455 MB. That is no
// measurable change, and it refutes the claim ("no"), where the
// direction alone once made it "direction only"; a change of the claimed
// size still agrees, and one past the spread or 1 % is still measured.
func TestJudgeNoiseFloor(t *testing.T) {
	const mib = 1 << 20
	before := 4.53 * (1 << 30)
	run := func(phase string, rss ...float64) *runView {
		r := &schema.Run{Phase: phase, Status: schema.StatusOK, Repetitions: make([]schema.Result, len(rss))}
		r.Summary.Metrics = []schema.Metric{{Name: metricPeakRSS, Values: rss, N: len(rss),
			Median: sideOf(rss).Median, Min: slices.Min(rss), Max: slices.Max(rss)}}
		return newRunView(r)
	}
	claim := schema.Expectation{Metric: metricPeakRSS, Versus: "previous", Delta: -455e6}
	for _, c := range []struct {
		name   string
		p1     []float64
		want   string
		suffix string
	}{
		{"-256 KiB, within spread and 1 %", []float64{before - 256<<10 - mib, before - 256<<10, before - 256<<10 + mib}, AgreeNo,
			"P1, no: peak RSS changed by -256 KiB from before, no measurable change (within the repetitions' spread and under 1 %); the note claims -433.9 MiB (-455 MB)"},
		{"-430 MiB", []float64{before - 430*mib - mib, before - 430*mib, before - 430*mib + mib}, AgreeYes, ""},
		{"-4 MiB, past the spread", []float64{before - 4*mib - mib, before - 4*mib, before - 4*mib + mib}, AgreeDirection,
			"P1, direction only: peak RSS changed by -4 MiB from before; the note claims -433.9 MiB (-455 MB)"},
	} {
		g := &group{runs: []*runView{run("before", before-mib, before, before+mib), run("P1", c.p1...)}}
		got := judge(g, g.phase(1), claim)
		if got.verdict != c.want || got.footnote("P1") != c.suffix {
			t.Errorf("%s: %q, footnote %q; want %q, %q", c.name, got.verdict, got.footnote("P1"), c.want, c.suffix)
		}
	}
}
