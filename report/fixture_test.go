package report

import (
	"encoding/json"
	"slices"
	"strconv"
	"testing"

	"memprobe/internal/golden"
	"memprobe/schema"
)

// reportFixture is the run report the run-table tests render,
// testdata/run-report.json. buildReport makes it from the two recorded
// results (threads-before.json, threads-P6.json); TestReportFixture checks
// the file is what buildReport makes, and `go test -update` rewrites it.
const reportFixture = "testdata/run-report.json"

// readFixtureReport reads testdata/run-report.json through the schema's
// reader, as `probe report` does.
func readFixtureReport(t *testing.T) *schema.Report {
	t.Helper()
	rep, err := schema.ReadReport(reportFixture)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestReportFixture(t *testing.T) {
	b, err := schema.Marshal(buildReport(t))
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "run-report.json", b)
}

// buildReport is a run of the threads plan on the tiny preset, seven
// threads, every phase, and a sweep of before and P6 over 1, 2 and 7
// threads; P2 failed; the arena plan's runs were skipped and timed out.
// Only before and P6 (at 7 threads) are recorded results: the other
// phases and thread counts are those results with their figures moved by
// hand, so that every verdict of the phase table appears (P4 agrees, P1
// agrees in direction only, P5 and the absolute claim of before do not,
// P3 cannot be checked against the failed P2). The figures are a test's,
// not measurements; the recorded results are trimmed of their timelines,
// thread stacks, mapped files and step counters, and the made-up ones of
// their detail, to keep the file small.
func buildReport(t *testing.T) *schema.Report {
	t.Helper()
	before, err := ReadResult("testdata/threads-before.json")
	if err != nil {
		t.Fatal(err)
	}
	after, err := ReadResult("testdata/threads-P6.json")
	if err != nil {
		t.Fatal(err)
	}
	trim(before)
	trim(after)
	runs := fixtureThreadsRuns(t, before, after)
	arena := func(phase string, status schema.Status, reason, claim string, expect []schema.Expectation) schema.Run {
		cfg := before.Config
		cfg.Plan, cfg.Phase, cfg.Engine, cfg.GEMM = "arena", phase, "tape", "naive"
		return schema.Run{Name: "arena-" + phase, Plan: "arena", Phase: phase, Config: cfg, Status: status, Reason: reason,
			Repetitions: []schema.Result{}, Outside: []schema.Outside{}, Summary: summarise(nil, 3),
			Claim: claim, Expect: expect}
	}
	runs = append(runs,
		arena("before", schema.StatusSkipped, "the naive GEMM takes about 40 s a step at the seed preset; run it with --preset tiny",
			"60 GB, 30-60 s per iteration (--small)", []schema.Expectation{{Metric: "peak_rss_bytes", Versus: "absolute", Delta: 60e9}}),
		arena("P1", schema.StatusTimeout, "ran past its limit of 10m0s and was stopped", "60 GB -> 1.9 GB (97 %) with P2", nil))
	runs[len(runs)-1].Outside = append(runs[len(runs)-1].Outside, schema.Outside{Repetition: 0, ExitCode: -1, Signal: "killed",
		Status: schema.StatusTimeout, Reason: "ran past its limit of 10m0s", WallSeconds: 600, Timeline: []schema.SamplerPoint{}})
	return &schema.Report{
		Schema:      schema.ReportVersion,
		Environment: before.Environment,
		CommandLine: []string{"bin/probe", "run", "--plan", "threads,arena", "--preset", "tiny", "--steps", "3", "--sweep", "threads=1,2,7"},
		StartTime:   "2026-11-26T02:00:00Z",
		EndTime:     "2026-11-26T02:12:41Z",
		Runs:        runs,
		Warnings:    []string{"load average 4.1 at the start: tokens/s are noisy"},
	}
}

// fixtureScale is the scale note of the fixture's threads runs.
const fixtureScale = "tiny preset, 3 steps (the note's figures are for the seed preset with 63 threads)"

// fixtureThreadsRuns are buildReport's threads plan: every phase at seven
// threads (P2 failed), then before and P6 at 1 and 2 threads, made from
// the recorded results before and after.
func fixtureThreadsRuns(t *testing.T, before, after *schema.Result) []schema.Run {
	t.Helper()
	threads := fixtureThreadsRun
	vary := func(r *schema.Result, dRSS int64, speed float64) *schema.Result { return varyResult(t, r, dRSS, speed) }
	const mib = 1 << 20
	p1 := vary(before, -180<<10, 1.01)
	p1.Config.Pathology.WorkerStackBytes = 1 << 20
	p1.FinalVSZBytes -= 7 * 7 * mib
	p3 := vary(p1, -20*mib, 1.05)
	p3.Config.Pathology.SphereHierarchy = false
	p3.Config.Pathology.CacheScale, p3.Config.Pathology.ClearCaches, p3.Config.Pathology.EmbeddingCache = 0, false, false
	p4 := vary(p3, -2_300_000, 1)
	p4.Config.Pathology.EagerBatches = false
	p5 := vary(p4, 150<<10, 0.93)
	p5.Config.Pathology.ModelLock = false
	failed := schema.Run{
		Name: "threads-P2", Plan: "threads", Phase: "P2", Description: "contexts only for active workers",
		Config: p1.Config, Status: schema.StatusFailed,
		Reason:      "exit status 1: probe: train: worker thread: pthread_create: Resource temporarily unavailable",
		Repetitions: []schema.Result{},
		Outside: []schema.Outside{{Repetition: 0, ExitCode: 1, Status: schema.StatusFailed,
			Reason: "exit status 1", WallSeconds: 0.2, Timeline: []schema.SamplerPoint{}}},
		Summary: summarise(nil, 3),
		Claim:   "save 376 MB (28 %): ~4 MB per unused sphere x 94",
		Expect:  []schema.Expectation{{Metric: "peak_rss_bytes", Versus: "previous", Delta: -376e6}},
		Scale:   fixtureScale, Sweep: map[string]string{"threads": "7"},
	}
	failed.Config.Phase = "P2"
	failed.Config.Pathology.SphereHierarchy = false

	save := func(mb float64) []schema.Expectation {
		return []schema.Expectation{{Metric: "peak_rss_bytes", Versus: "previous", Delta: -mb * 1e6}}
	}
	beforeClaim := "1.32 GB peak for a 24 MB dataset with 63 threads (55x the data)"
	beforeExpect := []schema.Expectation{{Metric: "peak_rss_bytes", Versus: "absolute", Delta: 1.32e9}}
	const beforeDesc, afterDesc = "8 MiB stacks, sphere tree, big caches, eager, lock", "workers decoupled from workspaces (fixed trainer)"
	runs := []schema.Run{
		threads(7, "before", beforeDesc, beforeClaim, beforeExpect,
			before, vary(before, 300<<10, 0.97), vary(before, -200<<10, 1.02)),
		threads(7, "P1", "worker stacks 8 MiB -> 1 MiB", "save 455 MB (35 %): 65 threads x 8 MB = 520 MB", save(455), p1),
		failed,
		threads(7, "P3", "right-size caches; embedding cache is a view of wte", "save 15 MB (1 %)", save(15), p3),
		threads(7, "P4", "batches filled lazily, one at a time", "save 2 MB (0.4 %)", save(2), p4),
		threads(7, "P5", "remove model_lock", "63x speedup",
			[]schema.Expectation{{Metric: "tokens_per_sec", Versus: "previous", Ratio: 63}}, p5),
		threads(7, "P6", afterDesc, "", nil, after, vary(after, 100<<10, 0.99)),
	}
	// The sweep: before grows by about 2.6 MB a thread, P6 by 0.1 MB.
	for _, n := range []int{1, 2} {
		runs = append(runs,
			threads(n, "before", beforeDesc, beforeClaim, beforeExpect, vary(before, int64(n-7)*2_600_000+int64(n)*40_000, 1)),
			threads(n, "P6", afterDesc, "", nil, vary(after, int64(n-7)*100_000-int64(n)*20_000, 1)))
	}
	runs[0].Summary.Warnings = append(runs[0].Summary.Warnings, "3 repetitions: the 95 % interval of the median is [min, max]")
	return runs
}

// fixtureThreadsRun is the threads plan's phase at n threads, ok, with
// the repetitions reps (relabelled for it) and what the parent saw of
// each.
func fixtureThreadsRun(n int, phase, desc, claim string, expect []schema.Expectation, reps ...*schema.Result) schema.Run {
	run := schema.Run{
		Name: "threads-" + phase, Plan: "threads", Phase: phase, Description: desc,
		Status: schema.StatusOK, Reason: "", Repetitions: []schema.Result{}, Outside: []schema.Outside{},
		Claim: claim, Expect: expect, Scale: fixtureScale,
		Sweep:                 map[string]string{"threads": itoa(n)},
		PredictedPeakRSSBytes: 0,
	}
	for i, r := range reps {
		r.Label = "threads-" + phase
		r.Config.Phase, r.Threads, r.Config.Threads = phase, n, n
		run.Config = r.Config
		run.Repetitions = append(run.Repetitions, *r)
		run.Outside = append(run.Outside, schema.Outside{
			Repetition: i, ExitCode: 0, Status: schema.StatusOK, WallSeconds: 1.5, UserSeconds: 2.1, SystemSeconds: 0.4,
			MaxRSSBytes: int64(r.PeakRSSBytes), PeakRSSBytes: int64(r.PeakRSSBytes), PeakVSZBytes: int64(r.FinalVSZBytes),
			Timeline: []schema.SamplerPoint{},
		})
	}
	run.Summary = summarise(run.Repetitions, len(reps))
	return run
}

// varyResult copies r with its peak RSS moved by dRSS bytes and its
// tokens/s scaled by speed, without the detail only the recorded results
// need (the ledger, the reconciliation, allocations by site, the
// sampler): the before and P6 tables show the recorded ones, the
// repetitions nearest the median.
func varyResult(t *testing.T, r *schema.Result, dRSS int64, speed float64) *schema.Result {
	c := clone(t, r)
	c.Ledger, c.RSSReconciliation, c.AllocsBySite, c.Sampler, c.RSSAgreement = []schema.LedgerRow{}, nil, nil, nil, nil
	c.PeakRSSBytes = uint64(int64(c.PeakRSSBytes) + dRSS)
	c.TokensPerSec *= speed
	return c
}

// summarise is what the runner's statistics stage writes for peak RSS and
// tokens/s (the tables read the other metrics from the repetitions).
func summarise(reps []schema.Result, asked int) schema.Summary {
	s := schema.Summary{Repetitions: asked, Completed: len(reps), Metrics: []schema.Metric{}, Warnings: []string{}}
	if len(reps) == 0 {
		return s
	}
	for _, m := range []struct {
		name string
		get  func(r *schema.Result) float64
	}{
		{"peak_rss_bytes", func(r *schema.Result) float64 { return float64(r.PeakRSSBytes) }},
		{"tokens_per_sec", func(r *schema.Result) float64 { return r.TokensPerSec }},
	} {
		var vals []float64
		for i := range reps {
			vals = append(vals, m.get(&reps[i]))
		}
		sorted := slices.Sorted(slices.Values(vals))
		med := sorted[len(sorted)/2]
		if len(sorted)%2 == 0 {
			med = (med + sorted[len(sorted)/2-1]) / 2
		}
		s.Metrics = append(s.Metrics, schema.Metric{Name: m.name, Values: vals, N: len(vals),
			Median: med, Min: sorted[0], Max: sorted[len(sorted)-1],
			CILow: sorted[0], CIHigh: sorted[len(sorted)-1], Confidence: 0.95})
	}
	return s
}

// trim drops the parts of a result that the run tables do not read and
// that make it large.
func trim(r *schema.Result) {
	if r.Sampler != nil {
		r.Sampler.Timeline = []schema.SamplerPoint{}
	}
	if r.AllocsBySite != nil {
		r.AllocsBySite.SitesOmitted += len(r.AllocsBySite.Sites)
		r.AllocsBySite.Sites = r.AllocsBySite.Sites[:0]
	}
	if r.Runtime != nil {
		r.Runtime.Steps = []schema.StepCounters{}
		r.Runtime.Start, r.Runtime.End = schema.RuntimeSnapshot{}, schema.RuntimeSnapshot{}
	}
	if rec := r.RSSReconciliation; rec != nil {
		rec.AtPeak.ThreadStacks = []schema.ThreadStack{}
		rec.AtPeak.Files = []schema.FileShare{}
		rec.End = schema.Reconciliation{Parts: []schema.ReconciliationPart{}, UnexplainedMappings: []schema.MappingPiece{},
			ThreadStacks: []schema.ThreadStack{}, Files: []schema.FileShare{}, Warnings: []string{}}
	}
}

func clone(t *testing.T, r *schema.Result) *schema.Result {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var c schema.Result
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

func itoa(n int) string { return strconv.Itoa(n) }
