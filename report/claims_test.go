package report

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"memprobe/schema"
)

// TestJudgeNoiseFloor plants the threads plan's P1 as measured: peak RSS
// moved -256 KiB of 4.53 GiB, within the spread of three repetitions
// (2 MiB) and under 1 %, against a claimed -455 MB. That is no
// measurable change, and it refutes the claim ("no"), where the
// direction alone once made it "direction only"; a change of the claimed
// size still agrees. A change past 1 % counts only where the runs
// establish it (issue 42): -5 MiB with every repetition apart by more than
// their spread gives the direction; -3 MiB, apart by less, is no
// measurable change.
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
		{"-5 MiB, apart by more than the spread", []float64{before - 5*mib - mib, before - 5*mib, before - 5*mib + mib}, AgreeDirection,
			"P1, direction only: peak RSS changed by -5 MiB from before; the note claims -433.9 MiB (-455 MB)"},
		{"-3 MiB, apart by less than the spread", []float64{before - 3*mib - mib, before - 3*mib, before - 3*mib + mib}, AgreeNo,
			"P1, no: peak RSS changed by -3 MiB from before, no measurable change (the runs do not establish it: at 3+3 the ranges are 1 MiB apart, within their spread of 2 MiB); the note claims -433.9 MiB (-455 MB)"},
	} {
		g := &group{runs: []*runView{run("before", before-mib, before, before+mib), run("P1", c.p1...)}}
		got := judge(g, g.phase(1), claim)
		if got.verdict != c.want || got.footnote("P1") != c.suffix {
			t.Errorf("%s: %q, footnote %q; want %q, %q", c.name, got.verdict, got.footnote("P1"), c.want, c.suffix)
		}
	}
}

// TestJudgeIdenticalPhases: a plan whose phases all run one identical
// program (issue 42: a ~1.2 MiB program gave "direction only" to three of
// seven claims, on ranges that overlapped) confirms no claim, in size or
// in direction. Every phase has 3 repetitions drawn from one distribution
// (peak RSS 1.2 MiB ± 3 %, tokens/s 10,000 ± 20 %); seven claims of
// either direction, as changes and as ratios, against the previous phase
// and the first; ten seeds, ten of ten without a "yes" or a "direction
// only".
func TestJudgeIdenticalPhases(t *testing.T) {
	claims := []schema.Expectation{
		{Metric: metricPeakRSS, Versus: "previous", Delta: -70 << 10},
		{Metric: metricPeakRSS, Versus: "previous", Delta: 50 << 10},
		{Metric: metricPeakRSS, Versus: "before", Ratio: 0.98},
		{Metric: metricPeakRSS, Versus: "before", Ratio: 1.05},
		{Metric: metricTokens, Versus: "previous", Ratio: 1.2},
		{Metric: metricTokens, Versus: "before", Ratio: 0.9},
		{Metric: metricPeakRSS, Versus: "previous", Delta: -20 << 10},
	}
	for seed := range uint64(10) {
		rng := rand.New(rand.NewPCG(seed, 42))
		g := &group{}
		for i := range len(claims) + 1 {
			r := &schema.Run{Phase: fmt.Sprintf("P%d", i), Status: schema.StatusOK, Repetitions: make([]schema.Result, 3)}
			for _, m := range []struct {
				name      string
				mean, rel float64
			}{{metricPeakRSS, 1.2 * (1 << 20), 0.03}, {metricTokens, 10000, 0.2}} {
				vals := make([]float64, 3)
				for k := range vals {
					vals[k] = m.mean * (1 + m.rel*rng.NormFloat64())
				}
				r.Summary.Metrics = append(r.Summary.Metrics, schema.Metric{Name: m.name, Values: vals, N: 3,
					Median: sideOf(vals).Median, Min: slices.Min(vals), Max: slices.Max(vals)})
			}
			idx := i
			r.PhaseIndex = &idx // a plan file's phase, at its place in the file
			g.runs = append(g.runs, newRunView(r))
		}
		for i, e := range claims {
			c := judge(g, g.phase(i+1), e)
			if c.verdict == AgreeYes || c.verdict == AgreeDirection {
				t.Errorf("seed %d, P%d %+v: %q (%s); one program in every phase confirms nothing", seed, i+1, e, c.verdict, c.footnote(fmt.Sprintf("P%d", i+1)))
			}
		}
	}
}
