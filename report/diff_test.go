package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"memprobe/internal/golden"
	"memprobe/metric"
	"memprobe/schema"
)

// The diff fixtures are testdata/run-report.json at five repetitions a
// configuration, its figures resampled around the recorded ones with a
// seeded generator (noise of 0.4 % on memory, 3 % on time); each
// TestDiffFixtures checks the file is what the helper makes, and `go test
// -update` rewrites it:
//
//   - diff-base.json: the base;
//   - diff-regressed.json: a later commit whose P6 peak RSS grew by 20 %
//     (every sweep point), whose P3 makes 2 more heap allocations a step,
//     which no longer runs arena/P1, and which sweeps threads=4 instead of
//     threads=2;
//   - diff-same.json: the base's commit run again, resampled within the
//     noise: no memory metric changes significantly.
const (
	diffBase      = "testdata/diff-base.json"
	diffRegressed = "testdata/diff-regressed.json"
	diffSame      = "testdata/diff-same.json"
)

// fixtureMetrics are run/runner's summary metrics, in its order.
var fixtureMetrics = []string{"peak_rss_bytes", "max_rss_bytes", "final_vsz_bytes", "go_heap_allocs_per_step",
	"go_heap_alloc_bytes_per_step", "tokens_per_sec", "step_ns_median"}

// resampled is the fixture report with five repetitions a configuration
// that ran, drawn around its first repetition with the generator seeded
// by seed; edit, when not nil, changes each new repetition.
func resampled(t *testing.T, seed uint64, edit func(run *schema.Run, r *schema.Result)) *schema.Report {
	t.Helper()
	rep := readFixtureReport(t)
	rng := rand.New(rand.NewPCG(seed, 0x6d656d70))
	noise := func(x float64, rel float64) float64 { return x * (1 + rel*rng.NormFloat64()) }
	const count = 5
	for i := range rep.Runs {
		run := &rep.Runs[i]
		if len(run.Repetitions) == 0 {
			continue
		}
		tmpl := run.Repetitions[0]
		// Keep the files small: the detail the diff does not read goes.
		tmpl.Ledger, tmpl.RSSReconciliation, tmpl.Runtime, tmpl.Sampler = nil, nil, nil, nil
		tmpl.AllocsBySite, tmpl.Profiles, tmpl.RSSAgreement = nil, nil, nil
		tmpl.StepNs, tmpl.Losses, tmpl.CommandLine = nil, nil, nil
		tmpl.Environment = schema.Environment{GoVersion: tmpl.Environment.GoVersion, GOOS: tmpl.Environment.GOOS, GOARCH: tmpl.Environment.GOARCH}
		out0 := run.Outside[0]
		run.Repetitions, run.Outside = nil, nil
		for k := range count {
			r := tmpl
			r.PeakRSSBytes = uint64(math.Round(noise(float64(tmpl.PeakRSSBytes), 0.004)))
			r.FinalVSZBytes = uint64(math.Round(noise(float64(tmpl.FinalVSZBytes), 0.002)))
			r.HeapAllocBytesPerStep = math.Round(noise(tmpl.HeapAllocBytesPerStep, 0.004))
			r.TokensPerSec = noise(tmpl.TokensPerSec, 0.03)
			r.StepNsMedian = int64(math.Round(noise(float64(tmpl.StepNsMedian), 0.03)))
			if edit != nil {
				edit(run, &r)
			}
			run.Repetitions = append(run.Repetitions, r)
			o := out0
			o.Repetition, o.Timeline = k, []schema.SamplerPoint{}
			o.PeakRSSBytes = int64(r.PeakRSSBytes)
			o.MaxRSSBytes = int64(math.Round(noise(float64(r.PeakRSSBytes)*1.01, 0.002)))
			run.Outside = append(run.Outside, o)
		}
		run.Summary = schema.Summary{Repetitions: count, Completed: count, Metrics: []schema.Metric{}, Warnings: []string{}}
		for _, name := range fixtureMetrics {
			var vals []float64
			for k := range run.Repetitions {
				if name == "max_rss_bytes" {
					vals = append(vals, float64(run.Outside[k].MaxRSSBytes))
					continue
				}
				d, err := metric.Lookup(name)
				if err != nil {
					t.Fatal(err)
				}
				x, _ := d.Run(&run.Repetitions[k])
				vals = append(vals, x)
			}
			// The fixtures hold each metric's values sorted: sideOf
			// sorted its argument in place when they were written.
			slices.Sort(vals)
			s := sideOf(vals)
			run.Summary.Metrics = append(run.Summary.Metrics, schema.Metric{Name: name, Values: vals, N: s.N, Median: s.Median,
				Min: slices.Min(vals), Max: slices.Max(vals), CILow: s.Lo, CIHigh: s.Hi, Confidence: 0.95})
		}
	}
	return rep
}

func baseReport(t *testing.T) *schema.Report { return resampled(t, 1, nil) }

func regressedReport(t *testing.T) *schema.Report {
	rep := resampled(t, 2, func(run *schema.Run, r *schema.Result) {
		switch run.Phase {
		case "P6":
			r.PeakRSSBytes = uint64(float64(r.PeakRSSBytes) * 1.2)
		case "P3":
			r.HeapAllocsPerStep += 2
		}
	})
	rep.Environment.VCSRevision = "d1ff5eed0000000000000000000000000000c0de"
	rep.Environment.VCSTime = "2026-11-26T03:10:00Z"
	rep.Environment.VCSModified = false
	rep.StartTime, rep.EndTime = "2026-11-26T03:30:00Z", "2026-11-26T03:40:00Z"
	var runs []schema.Run
	for _, run := range rep.Runs {
		if run.Plan == "arena" && run.Phase == "P1" {
			continue
		}
		if run.Sweep["threads"] == "2" {
			run.Sweep = map[string]string{"threads": "4"}
			run.Config.Threads = 4
		}
		runs = append(runs, run)
	}
	rep.Runs = runs
	return rep
}

// sameReport is drawn with its own seed; at alpha 0.05 one comparison in
// twenty of equal distributions is a false positive, and seed 5 draws none
// among the memory metrics (TestDiffSame), as a CI gate needs.
func sameReport(t *testing.T) *schema.Report {
	rep := resampled(t, 5, nil)
	rep.StartTime, rep.EndTime = "2026-11-26T02:30:00Z", "2026-11-26T02:40:00Z"
	return rep
}

func TestDiffFixtures(t *testing.T) {
	for name, rep := range map[string]*schema.Report{
		"diff-base.json": baseReport(t), "diff-regressed.json": regressedReport(t), "diff-same.json": sameReport(t),
	} {
		// Compact JSON: the files are generated, and a third of the size.
		b, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, '\n')
		if _, err := schema.DecodeReport(b, name); err != nil {
			t.Fatalf("the fixture does not read back: %v", err)
		}
		golden.Check(t, name, b)
	}
}

func readDiff(t *testing.T, base, head string, opt DiffOptions) *Diff {
	t.Helper()
	b, err := schema.ReadReport(base)
	if err != nil {
		t.Fatal(err)
	}
	h, err := schema.ReadReport(head)
	if err != nil {
		t.Fatal(err)
	}
	opt.BaseName, opt.HeadName = base, head
	d, err := Compare(ReportRows(b), ReportRows(h), opt)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestDiffGolden renders the regressed diff in every format (text and
// markdown against golden files; json must read back).
func TestDiffGolden(t *testing.T) {
	d := readDiff(t, diffBase, diffRegressed, DiffOptions{})
	for _, f := range []string{"text", "markdown"} {
		var b bytes.Buffer
		if err := WriteDiff(&b, d, f); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, "diff-regressed."+f+".golden", b.Bytes())
	}
	var b bytes.Buffer
	if err := WriteDiff(&b, d, "json"); err != nil {
		t.Fatal(err)
	}
	var back Diff
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || len(back.Configs) != len(d.Configs) {
		t.Fatalf("json does not read back: %v", err)
	}
	if err := WriteDiff(&b, d, "html"); err == nil {
		t.Error("format html: no error")
	}
}

// TestDiffRegressed: P6's peak RSS is a significant +20 % at every sweep
// point, P3's allocations an exact +2, and both pass their thresholds;
// no other change breaches; the configurations only base ran (the
// threads-2 sweep point is threads=4 in head, arena/P1 is gone) breach as
// unchecked, those only head ran do not; both are listed.
func TestDiffRegressed(t *testing.T) {
	d := readDiff(t, diffBase, diffRegressed, DiffOptions{})
	ths, err := ParseThresholds("peak_rss_bytes:+5%, go_heap_allocs_per_step:+0, tokens_per_sec:-50%")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range d.Breaches(ths) {
		got = append(got, b.Config+" "+b.Row.Metric)
		if b.Row.Metric == "peak_rss_bytes" && (*b.Row.Pct < 15 || *b.Row.Pct > 25 || *b.Row.P >= 0.05) {
			t.Errorf("%s: change %.1f %%, p %.3f; want about +20 %%, significant", b.Config, *b.Row.Pct, *b.Row.P)
		}
	}
	want := []string{"threads/P3 threads=7 go_heap_allocs_per_step", "threads/P6 threads=7 peak_rss_bytes", "threads/P6 threads=1 peak_rss_bytes",
		"threads/before threads=2 ", "threads/P6 threads=2 ", "arena/P1 "}
	if !slices.Equal(got, want) {
		t.Errorf("breaches %q, want %q", got, want)
	}
	if !slices.Equal(d.OnlyBase, []string{"threads/before threads=2", "threads/P6 threads=2", "arena/P1"}) ||
		!slices.Equal(d.OnlyHead, []string{"threads/before threads=4", "threads/P6 threads=4"}) {
		t.Errorf("only base %q, only head %q", d.OnlyBase, d.OnlyHead)
	}
}

// TestDiffSame: the same commit resampled within its noise has no
// significant memory change at five repetitions, and breaches nothing.
func TestDiffSame(t *testing.T) {
	d := readDiff(t, diffBase, diffSame, DiffOptions{})
	if n := d.Significant("peak_rss_bytes", "max_rss_bytes", "final_vsz_bytes", "go_heap_alloc_bytes_per_step",
		"go_heap_allocs_per_step", "ledger_total_bytes"); n != 0 {
		var b bytes.Buffer
		WriteDiff(&b, d, "text")
		t.Errorf("%d significant memory changes between runs of one commit:\n%s", n, b.String())
	}
	ths, _ := ParseThresholds("peak_rss_bytes:+5%,go_heap_allocs_per_step:+0")
	if b := d.Breaches(ths); len(b) != 0 {
		t.Errorf("breaches %v", b)
	}
	if len(d.OnlyBase)+len(d.OnlyHead) != 0 {
		t.Errorf("unmatched configurations %q %q", d.OnlyBase, d.OnlyHead)
	}
}

// TestDiffFewRepetitions: where the U test cannot reach alpha at the
// sizes given, a warning beside the row says so, with the smallest p.
func TestDiffFewRepetitions(t *testing.T) {
	r := diffValues("peak_rss_bytes", []float64{1, 2, 3}, []float64{10, 11, 12}, false, DefaultAlpha, nil)
	if r.Significant || !r.Undecided || r.MinP != 0.1 || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "n=3+3: the U test cannot reach p<0.05 (smallest p 0.100)") {
		t.Errorf("got significant %v, undecided %v, min p %v, warnings %q", r.Significant, r.Undecided, r.MinP, r.Warnings)
	}
	r = diffValues("peak_rss_bytes", []float64{1, 2, 3, 4}, []float64{10, 11, 12, 13}, false, DefaultAlpha, nil)
	if !r.Significant || r.Undecided || len(r.Warnings) != 0 {
		t.Errorf("4+4: got significant %v, undecided %v, warnings %q", r.Significant, r.Undecided, r.Warnings)
	}
	r = diffValues("ledger_total_bytes", []float64{5, 5}, []float64{6, 6}, true, DefaultAlpha, nil)
	if !r.Significant || r.P != nil || len(r.Warnings) != 0 {
		t.Errorf("exact: got significant %v, p %v, warnings %q", r.Significant, r.P, r.Warnings)
	}
}

// oneRunReport is a report of one configuration, threads/P6, whose
// metric has vals, one a repetition.
func oneRunReport(metric string, vals ...float64) *schema.Report {
	s := sideOf(vals)
	return &schema.Report{Schema: schema.ReportVersion, Runs: []schema.Run{{
		Name: "threads-P6", Plan: "threads", Phase: "P6", Status: schema.StatusOK,
		Config: schema.Config{Preset: "tiny", Data: "synthetic:100KB"}, Repetitions: make([]schema.Result, len(vals)),
		Summary: schema.Summary{Completed: len(vals), Metrics: []schema.Metric{{Name: metric, Values: vals, N: len(vals),
			Median: s.Median, Min: slices.Min(vals), Max: slices.Max(vals), CILow: s.Lo, CIHigh: s.Hi}}},
	}}}
}

// TestGateUndecided plants changes at sizes where the U test cannot reach
// alpha (3+3: smallest p 0.100; 1+1: 1). A regression is what the runs
// establish: +50 % peak RSS at 3+3, every head repetition past every base
// one by more than 5 %, is a regression; +6 % of the medians with ranges
// that overlap (a metric that swings 5 % run to run, as threads/P6's
// peak does) is undecided, with its spread and the repetitions that would
// decide it; so is +50 % at 1+1, which measures no spread, and +6 % at
// 5+5 that the U test does not find (p 0.421). The same build
// (no change, or a change within the spread and under 1 %) passes
// silently, and so does a change short of the limit.
func TestGateUndecided(t *testing.T) {
	ths, err := ParseThresholds("peak_rss_bytes:+5%")
	if err != nil {
		t.Fatal(err)
	}
	const gib = 1 << 30
	for _, c := range []struct {
		name       string
		base, head []float64
		want       string // the breach, "" for none
		undecided  bool
	}{
		{"3+3 +50%", []float64{gib, gib + 4096, gib - 4096}, []float64{1.5 * gib, 1.5*gib + 8192, 1.5*gib - 4096},
			"threads/P6 peak_rss_bytes: 1 GiB -> 1.50 GiB (+50.00%), limit peak_rss_bytes:+5%", false},
		{"3+3 +6% overlapping", []float64{gib, 1.05 * gib, 0.97 * gib}, []float64{1.06 * gib, 1.10 * gib, 1.01 * gib},
			"threads/P6 peak_rss_bytes: 1 GiB -> 1.06 GiB (medians +6.00%), limit peak_rss_bytes:+5%: n=3+3, the U test cannot decide (smallest p 0.100) and the ranges (993.3 MiB to 1.05 GiB, 1.01 GiB to 1.10 GiB) are not apart by the limit; the metric spreads 9.0 % run to run; about 9 repetitions a side would decide it", true},
		{"3+3 +6% apart by less than the limit", []float64{gib, gib + 4096, gib - 4096}, []float64{1.06 * gib, 1.06*gib + 4096, 1.04 * gib},
			"threads/P6 peak_rss_bytes: 1 GiB -> 1.06 GiB (medians +6.00%), limit peak_rss_bytes:+5%: n=3+3, the U test cannot decide (smallest p 0.100) and the ranges (1.00 GiB to 1.00 GiB, 1.04 GiB to 1.06 GiB) are not apart by the limit; the metric spreads 2.0 % run to run; about 4 repetitions a side would decide it", true},
		{"1+1 +50%", []float64{gib}, []float64{1.5 * gib},
			"threads/P6 peak_rss_bytes: 1 GiB -> 1.50 GiB (medians +50.00%), limit peak_rss_bytes:+5%: n=1+1, too few repetitions to measure the noise (the U test cannot decide, and ranges need 2 a side); about 4 repetitions a side would decide it", true},
		{"5+5 +6% not significant", []float64{gib, 1.05 * gib, 0.97 * gib, 1.08 * gib, 0.95 * gib}, []float64{1.06 * gib, 1.10 * gib, 1.01 * gib, 0.96 * gib, 1.07 * gib},
			"threads/P6 peak_rss_bytes: 1 GiB -> 1.06 GiB (medians +6.00%), limit peak_rss_bytes:+5%: n=5+5, the U test does not establish it (p 0.421, not below 0.05); the metric spreads 14.0 % run to run; about 14 repetitions a side would decide it", true},
		{"3+3 same", []float64{gib, gib + 4096, gib - 4096}, []float64{gib, gib + 4096, gib - 4096}, "", false},
		{"3+3 within noise", []float64{gib, gib + 4096, gib - 4096}, []float64{gib + 4096, gib + 8192, gib}, "", false},
		{"1+1 same", []float64{gib}, []float64{gib}, "", false},
		{"3+3 +3%", []float64{gib, gib + 4096, gib - 4096}, []float64{1.03 * gib, 1.03 * gib, 1.03 * gib}, "", false},
	} {
		d, err := Compare(ReportRows(oneRunReport("peak_rss_bytes", c.base...)), ReportRows(oneRunReport("peak_rss_bytes", c.head...)), DiffOptions{Metrics: []string{"peak_rss_bytes"}})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, b := range d.Breaches(ths) {
			got = append(got, b.String())
			if b.Undecided != c.undecided {
				t.Errorf("%s: breach %q: undecided %v, want %v", c.name, b, b.Undecided, c.undecided)
			}
		}
		if want := []string{c.want}; c.want == "" && len(got) != 0 || c.want != "" && !slices.Equal(got, want) {
			t.Errorf("%s: breaches\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// TestExactNeedsRepetitions: a deterministic metric with one repetition
// on a side (2,085 then 2,086 allocations a step, one run each of one
// commit) is a measurement, not an exact change: no "=" row, no exact
// breach; where both sides have 2 agreeing repetitions it is exact.
func TestExactNeedsRepetitions(t *testing.T) {
	for _, c := range []struct {
		base, head []float64
		exact      bool
	}{
		{[]float64{2085}, []float64{2086}, false},
		{[]float64{2085, 2085}, []float64{2086}, false},
		{[]float64{2085, 2085}, []float64{2086, 2086}, true},
	} {
		d, err := Compare(ReportRows(oneRunReport("go_heap_allocs_per_step", c.base...)), ReportRows(oneRunReport("go_heap_allocs_per_step", c.head...)), DiffOptions{Metrics: []string{"go_heap_allocs_per_step"}})
		if err != nil {
			t.Fatal(err)
		}
		r := d.Configs[0].Rows[0]
		if r.Exact != c.exact || r.Significant != c.exact || (r.P == nil) != c.exact {
			t.Errorf("%v -> %v: exact %v, significant %v, p %v; want exact and significant %v", c.base, c.head, r.Exact, r.Significant, r.P, c.exact)
		}
		if !c.exact && !strings.Contains(strings.Join(r.Warnings, "; "), "exact only where 2 or more repetitions a side agree") {
			t.Errorf("%v -> %v: warnings %q", c.base, c.head, r.Warnings)
		}
	}
}

// TestDiffRefuses: different schema versions and matched configurations
// of different presets are errors that say so.
func TestDiffRefuses(t *testing.T) {
	b, h := baseReport(t), baseReport(t)
	h.Schema = "memprobe.report/v2"
	if _, err := Compare(ReportRows(b), ReportRows(h), DiffOptions{}); err == nil || !strings.Contains(err.Error(), "memprobe.report/v2") {
		t.Errorf("schema: got %v", err)
	}
	h = baseReport(t)
	h.Runs[0].Config.Preset = "small"
	if _, err := Compare(ReportRows(b), ReportRows(h), DiffOptions{}); err == nil || !strings.Contains(err.Error(), `threads/before threads=7 (base "tiny", head "small")`) {
		t.Errorf("preset: got %v", err)
	}
}

func TestParseThresholds(t *testing.T) {
	got, err := ParseThresholds(" peak_rss_bytes:+5% ,go_heap_allocs_per_step:+0,tokens_per_sec:-2.5%,ledger_total_bytes:+1e6")
	if err != nil {
		t.Fatal(err)
	}
	want := []Threshold{{"peak_rss_bytes", true, 5, true}, {"go_heap_allocs_per_step", true, 0, false},
		{"tokens_per_sec", false, 2.5, true}, {"ledger_total_bytes", true, 1e6, false}}
	if !slices.Equal(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	for _, bad := range []string{"peak_rss_bytes", "peak_rss_bytes:5%", ":+5%", "x:+", "x:+%", "x:+-5", "x:+NaN", "x:+Inf", "x:+five", "a b:+1", ","} {
		if _, err := ParseThresholds(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	pct := func(x float64) *float64 { return &x }
	for _, c := range []struct {
		th   Threshold
		row  MetricDiff
		want bool
	}{
		{want[0], MetricDiff{Delta: 6, Pct: pct(6)}, true},
		{want[0], MetricDiff{Delta: 5, Pct: pct(5)}, false},
		{want[0], MetricDiff{Delta: -60, Pct: pct(-60)}, false},
		{want[1], MetricDiff{Delta: 1}, true},
		{want[1], MetricDiff{Delta: 0}, false},
		{want[2], MetricDiff{Delta: -3, Pct: pct(-3)}, true},
		{want[2], MetricDiff{Delta: 30, Pct: pct(30)}, false},
		{want[0], MetricDiff{Delta: 1}, true}, // base 0: any increase
	} {
		if got := c.th.Breached(c.row); got != c.want {
			t.Errorf("%s on %+v: %v, want %v", c.th, c.row, got, c.want)
		}
	}
}

// FuzzParseThresholds: the parser never panics, every threshold it
// accepts has a name and a finite non-negative limit, and writing the
// thresholds back reads the same.
func FuzzParseThresholds(f *testing.F) {
	for _, s := range []string{"peak_rss_bytes:+5%", "go_heap_allocs_per_step:+0", "a:-1e3,b:+0.5%", "", "x:+", ",,", "x:+1e400"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ths, err := ParseThresholds(s)
		if err != nil {
			return
		}
		var parts []string
		for _, th := range ths {
			if th.Metric == "" || th.Limit < 0 || math.IsInf(th.Limit, 0) || math.IsNaN(th.Limit) {
				t.Fatalf("%q: accepted %+v", s, th)
			}
			parts = append(parts, th.String())
		}
		back, err := ParseThresholds(strings.Join(parts, ","))
		if err != nil || !slices.Equal(back, ths) {
			t.Fatalf("%q: round trip %q gives %+v, %v; want %+v", s, strings.Join(parts, ","), back, err, ths)
		}
	})
}

// TestBreachesUnchecked: with thresholds, a configuration that finished
// in base and not in head, one head did not run, and a limited metric
// base measured and head did not are breaches that say why the gate could
// not check them; one only head ran, or that failed on both sides, is
// not. Without thresholds nothing breaches.
func TestBreachesUnchecked(t *testing.T) {
	base, head := baseReport(t), sameReport(t)
	head.Runs[1].Status, head.Runs[1].Repetitions, head.Runs[1].Summary.Metrics = schema.StatusFailed, nil, nil // threads/P1 threads=7
	head.Runs[5].Outside = nil                                                                                  // threads/P5 threads=7: no outside measurement
	head.Runs[5].Summary.Metrics = slices.DeleteFunc(head.Runs[5].Summary.Metrics, func(m schema.Metric) bool { return m.Name == "max_rss_bytes" })
	extra := head.Runs[0]
	extra.Sweep = map[string]string{"threads": "9"}
	head.Runs = append(slices.Delete(head.Runs, 3, 4), extra) // P3 threads=7 gone, threads=9 new
	d, err := Compare(ReportRows(base), ReportRows(head), DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if b := d.Breaches(nil); len(b) != 0 {
		t.Errorf("no thresholds: breaches %v", b)
	}
	ths, _ := ParseThresholds("peak_rss_bytes:+5%,max_rss_bytes:+5%")
	var got []string
	for _, b := range d.Breaches(ths) {
		got = append(got, b.String())
	}
	want := []string{
		"threads/P1 threads=7: finished in base, failed in head: --fail-on cannot check it",
		"threads/P5 threads=7: max_rss_bytes measured in base, not in head: --fail-on cannot check it",
		"threads/P3 threads=7: only in base, head did not run it: --fail-on cannot check it",
	}
	if !slices.Equal(got, want) {
		t.Errorf("breaches:\n got %q\nwant %q", got, want)
	}
	if !slices.Equal(d.OnlyHead, []string{"threads/before threads=9"}) {
		t.Errorf("only head %q", d.OnlyHead)
	}
	// A configuration that failed on both sides (P2 threads=7 in the
	// fixtures) is no breach, and neither is one only head ran.
	d, err = Compare(ReportRows(base), ReportRows(sameReport(t)), DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if b := d.Breaches(ths); len(b) != 0 {
		t.Errorf("same configurations: breaches %v", b)
	}
}

// TestCompareUnmeasured: a metric named (--metric, --fail-on) that no
// configuration of either side measured is refused with an
// UnmeasuredError naming it and some metrics the reports do have; one
// that base alone measured (head failed) is compared where it can be; a
// name the registry does not have is a metric.UnknownError listing the
// registered ones.
func TestCompareUnmeasured(t *testing.T) {
	base, head := baseReport(t), sameReport(t)
	_, err := Compare(ReportRows(base), ReportRows(head), DiffOptions{Metrics: []string{"peak_rss_bytes", "syncs_per_token"}, Extra: []string{"bogus"}, BaseName: "a.json", HeadName: "b.json"})
	if ue, ok := errors.AsType[*metric.UnknownError](err); !ok || ue.Name != "bogus" || !strings.Contains(err.Error(), "peak_rss_bytes, max_rss_bytes") {
		t.Errorf("got %v, want a metric.UnknownError of bogus listing the registered metrics", err)
	}
	_, err = Compare(ReportRows(base), ReportRows(head), DiffOptions{Metrics: []string{"peak_rss_bytes", "syncs_per_token"}, BaseName: "a.json", HeadName: "b.json"})
	ue, ok := errors.AsType[*UnmeasuredError](err)
	if !ok || !slices.Equal(ue.Metrics, []string{"syncs_per_token"}) {
		t.Fatalf("got %v, want an UnmeasuredError of syncs_per_token", err)
	}
	want := "metric syncs_per_token: no configuration of base a.json or head b.json (run reports) measured it; syncs_per_token is a metric of decode results, not of run reports; they measure peak_rss_bytes, max_rss_bytes, final_vsz_bytes"
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error:\n got %s\nwant %s...", err, want)
	}
	for i := range head.Runs {
		head.Runs[i].Status, head.Runs[i].Repetitions, head.Runs[i].Summary.Metrics = schema.StatusFailed, nil, nil
	}
	if _, err := Compare(ReportRows(base), ReportRows(head), DiffOptions{Metrics: []string{"counts.workers"}, Extra: []string{"go_heap_allocs_per_step"}}); err != nil {
		t.Errorf("metrics base measured, head failed: %v", err)
	}
}

// TestDiffNotComparedNote: a configuration both sides finished that has
// no row says that no metric asked for was measured on both sides, not
// "base ok, head ok".
func TestDiffNotComparedNote(t *testing.T) {
	base, head := baseReport(t), sameReport(t)
	for i := range head.Runs {
		head.Runs[i].Outside = nil
		head.Runs[i].Summary.Metrics = slices.DeleteFunc(head.Runs[i].Summary.Metrics, func(m schema.Metric) bool { return m.Name == "max_rss_bytes" })
	}
	d, err := Compare(ReportRows(base), ReportRows(head), DiffOptions{Metrics: []string{"max_rss_bytes"}})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteDiff(&b, d, "text"); err != nil {
		t.Fatal(err)
	}
	if s := b.String(); strings.Contains(s, "base ok, head ok") || !strings.Contains(s, "not compared: no metric asked for is measured on both sides") {
		t.Errorf("diff:\n%s", s)
	}
}

// TestKnownMetric: the names a run report or a decode result can have,
// from the metric registry, nested ones included.
func TestKnownMetric(t *testing.T) {
	for _, c := range []struct {
		name        string
		run, decode bool
	}{
		{"peak_rss_bytes", true, false},
		{"max_rss_bytes", true, false},
		{"runtime.peak.heap_live_bytes", true, false},
		{"counts.workers", true, false},
		{"tokens_per_sec", true, true},
		{"tokens_per_sec_passes", false, false}, // per-pass samples of tokens_per_sec, no metric of their own
		{"host_wait_ns_per_token", false, true},
		{"device_busy_ns_per_token", false, true},
		{"device_memory.process_peak_bytes", false, true},
		{"syncs_per_token", false, true},    // a decode record's; a job's is decode_stats.syncs
		{"decode_stats.syncs", true, false}, // a default of run reports
		{"decode", false, false},            // a string
		{"config", false, false},            // an object
		{"bogus", false, false},
		{"", false, false},
	} {
		if run, decode := KnownMetric(c.name); run != c.run || decode != c.decode {
			t.Errorf("%q: run %v, decode %v; want %v, %v", c.name, run, decode, c.run, c.decode)
		}
	}
}

// TestDiffExactVaries: a deterministic metric whose repetitions of one
// build disagree (the arena and decode plans' allocations per step moved
// by a few between runs, tiny allocations sharing heap blocks) is compared
// as a measurement, saying so: three runs a side of one build within that
// noise breach no +0 limit. Where each side's repetitions agree, any
// change is still a change, even with one repetition a side.
func TestDiffExactVaries(t *testing.T) {
	ths, err := ParseThresholds("go_heap_allocs_per_step:+0")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		base, head []float64
		exact, sig bool
		warnPrefix string
	}{
		// Measured: probe-*.json of one commit, arena/before.
		{[]float64{2102.5, 2100.5, 2102.5}, []float64{2103, 2101, 2101}, false, false, "varies between repetitions of one build (2,100.5 to 2,102.5 in base, 2,101 to 2,103 in head)"},
		{[]float64{3072, 3072, 3072}, []float64{3072, 3073, 3072}, false, false, "varies between repetitions of one build (3,072 to 3,073 in head)"},
		{[]float64{0, 0, 0}, []float64{1, 1, 1}, true, true, ""},
		{[]float64{5, 5}, []float64{5, 5}, true, false, ""},
	} {
		r := diffValues("go_heap_allocs_per_step", c.base, c.head, true, DefaultAlpha, nil)
		if r.Exact != c.exact || r.Significant != c.sig || (c.exact != (r.P == nil)) {
			t.Errorf("%v -> %v: exact %v significant %v p %v; want exact %v significant %v", c.base, c.head, r.Exact, r.Significant, r.P, c.exact, c.sig)
		}
		if c.warnPrefix != "" && (len(r.Warnings) == 0 || !strings.HasPrefix(r.Warnings[0], c.warnPrefix)) {
			t.Errorf("%v -> %v: warnings %q, want %q first", c.base, c.head, r.Warnings, c.warnPrefix)
		}
		d := &Diff{Configs: []ConfigDiff{{Key: "arena/before", BaseStatus: schema.StatusOK, HeadStatus: schema.StatusOK, Rows: []MetricDiff{r}}}}
		if n := len(d.Breaches(ths)); n != map[bool]int{true: 1, false: 0}[c.sig && r.Delta > 0] {
			t.Errorf("%v -> %v: %d breaches of +0", c.base, c.head, n)
		}
	}
}

// TestDiffConfigCaveats: matched configurations that differ in a setting
// (the GEMM that ran) or in the tokens of data read (a text file of one
// name, other content) carry a warning each, naming both values; equal
// ones carry none.
func TestDiffConfigCaveats(t *testing.T) {
	base, head := oneRunReport("peak_rss_bytes", 1, 2, 3), oneRunReport("peak_rss_bytes", 1, 2, 3)
	for _, r := range []*schema.Report{base, head} {
		r.Runs[0].Repetitions[0].DataTokens = 200_000
	}
	d, err := Compare(ReportRows(base), ReportRows(head), DiffOptions{})
	if err != nil || len(d.Warnings) != 0 {
		t.Fatalf("equal settings: %v, warnings %q", err, d.Warnings)
	}
	head.Runs[0].Config.GEMMUsed = "naive"
	head.Runs[0].Repetitions[0].DataTokens = 48_000_000
	if d, err = Compare(ReportRows(base), ReportRows(head), DiffOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`data_tokens differs (base 200000, head 48000000) in threads/P6: the figures compare that too, not the commits alone`,
		`gemm_used differs (base "", head "naive") in threads/P6: the figures compare that too, not the commits alone`,
	}
	if !slices.Equal(d.Warnings, want) {
		t.Errorf("warnings\n got %q\nwant %q", d.Warnings, want)
	}
}
