package runner

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"memprobe/internal/table"
	"memprobe/report"
	"memprobe/schema"
	"memprobe/schema/schematest"
)

// runOf is one process's record of mode at speed tps, its host wait and
// busy figures set from tps so that each run's are told apart.
func runOf(mode string, tps float64, start string) schema.DecodeRecord {
	r := decodeRec(mode, speeds(tps, 0))
	r.TokensPerSec = tps
	r.HostWaitNsPerToken = 1e9 / tps
	busyNs, busyPct := 0.3e9/tps, 30+tps/1e4
	r.DeviceBusyNsPerToken, r.DeviceBusyPct = &busyNs, &busyPct
	r.DeviceBusyPctPasses = slices.Repeat([]float64{busyPct}, len(r.TokensPerSecPasses))
	r.HostWaitNsPerTokenPasses = slices.Repeat([]float64{r.HostWaitNsPerToken}, len(r.TokensPerSecPasses))
	r.StartTime = start
	return r
}

// TestPoolDecode: three runs of two modes pool into one record per mode
// whose figures are the runs' medians, with each run's figure in the _runs
// arrays and every pass kept; a mode only one run measured is kept as it
// is; the pooled records read back as a decode result.
func TestPoolDecode(t *testing.T) {
	sets := [][]schema.DecodeRecord{
		{runOf("per-token-copy", 12000, "2026-11-26T02:00:10Z"), runOf("batch", 70000, "2026-11-26T02:00:10Z")},
		{runOf("per-token-copy", 14000, "2026-11-26T02:00:00Z"), runOf("batch", 90000, "2026-11-26T02:00:00Z")},
		{runOf("per-token-copy", 13000, "2026-11-26T02:00:20Z"), runOf("batch", 60000, "2026-11-26T02:00:20Z"), runOf("per-token-view", 13500, "2026-11-26T02:00:20Z")},
	}
	sets[1][0].HostAllocsPerToken = 4.01 // tiny blocks: the median is kept
	fail := schema.DecodeCheck{Against: "cpu", MaxProbDiff: 1e-3, Pass: false}
	pass := schema.DecodeCheck{Against: "cpu", MaxProbDiff: 1e-6, Pass: true}
	sets[0][0].Check, sets[1][0].Check, sets[2][0].Check = &pass, &fail, &pass
	sets[2][1].DevicePeakBytes = 1 << 30
	cl := []string{"probe", "decode", "--runs", "3"}
	got, err := PoolDecode([]string{"a", "b", "c"}, sets, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Decode != "per-token-copy" || got[1].Decode != "batch" || got[2].Decode != "per-token-view" {
		t.Fatalf("pooled modes %v, want per-token-copy, batch, per-token-view in first-seen order", modesOf(got))
	}
	c := got[0]
	if c.Runs != 3 || !slices.Equal(c.TokensPerSecRuns, []float64{12000, 14000, 13000}) || c.TokensPerSec != 13000 {
		t.Errorf("per-token-copy: runs %d %v, tokens/s %v; want 3 [12000 14000 13000], the median 13000", c.Runs, c.TokensPerSecRuns, c.TokensPerSec)
	}
	if c.HostWaitNsPerToken != 1e9/13000 || len(c.HostWaitNsPerTokenRuns) != 3 {
		t.Errorf("host wait %v over runs %v, want the median %v", c.HostWaitNsPerToken, c.HostWaitNsPerTokenRuns, 1e9/13000)
	}
	if c.DeviceBusyPct == nil || *c.DeviceBusyPct != 31.3 || len(c.DeviceBusyPctRuns) != 3 || len(c.DeviceBusyNsPerTokenRuns) != 3 {
		t.Errorf("busy %v over runs %v", c.DeviceBusyPct, c.DeviceBusyPctRuns)
	}
	if len(c.TokensPerSecPasses) != 30 || len(c.DeviceBusyPctPasses) != 30 || len(c.HostWaitNsPerTokenPasses) != 30 {
		t.Errorf("passes %d/%d/%d, want every run's 10", len(c.TokensPerSecPasses), len(c.DeviceBusyPctPasses), len(c.HostWaitNsPerTokenPasses))
	}
	if c.HostAllocsPerToken != 4 || c.Check == nil || c.Check.Pass || c.StartTime != "2026-11-26T02:00:00Z" || !slices.Equal(c.CommandLine, cl) {
		t.Errorf("allocs %v (want the median 4), check %+v (want the failed one), start %s (want the earliest), command line %v",
			c.HostAllocsPerToken, c.Check, c.StartTime, c.CommandLine)
	}
	if got[1].DevicePeakBytes != 1<<30 || got[1].TokensPerSec != 70000 {
		t.Errorf("batch: device peak %d (want the highest run's), tokens/s %v (want 70000)", got[1].DevicePeakBytes, got[1].TokensPerSec)
	}
	if v := got[2]; v.Runs != 0 || v.TokensPerSecRuns != nil || v.TokensPerSec != 13500 {
		t.Errorf("a mode of one run: runs %d %v, tokens/s %v; want it as it was", v.Runs, v.TokensPerSecRuns, v.TokensPerSec)
	}
	b, err := schema.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := schema.DecodeDecode(b, "pooled"); err != nil {
		t.Errorf("the pooled records do not read back: %v", err)
	}

	// Pooling a pool contributes each of its runs.
	again, err := PoolDecode([]string{"pooled", "d"}, [][]schema.DecodeRecord{got[:1], {runOf("per-token-copy", 11000, "2026-11-26T02:01:00Z")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a := again[0]; a.Runs != 4 || a.TokensPerSec != 12500 || len(a.TokensPerSecPasses) != 40 || !slices.Equal(a.CommandLine, cl) {
		t.Errorf("a pool and a run: runs %d, tokens/s %v (want 4, 12500), %d passes, command line %v", a.Runs, a.TokensPerSec, len(a.TokensPerSecPasses), a.CommandLine)
	}
}

func modesOf(recs []schema.DecodeRecord) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Decode)
	}
	return out
}

// TestPoolDecodeUntimed: a run whose device could not time its work
// leaves the pooled record without busy figures (not a median of some of
// them) and without per-pass busy samples.
func TestPoolDecodeUntimed(t *testing.T) {
	a, b := runOf("batch", 70000, "2026-11-26T02:00:00Z"), runOf("batch", 80000, "2026-11-26T02:00:00Z")
	b.DeviceBusyNsPerToken, b.DeviceBusyPct, b.DeviceBusyPctPasses = nil, nil, nil
	got, err := PoolDecode([]string{"a", "b"}, [][]schema.DecodeRecord{{a}, {b}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := got[0]
	if p.DeviceBusyPct != nil || p.DeviceBusyNsPerToken != nil || p.DeviceBusyPctRuns != nil || p.DeviceBusyPctPasses != nil || p.TokensPerSec != 75000 {
		t.Errorf("busy %v %v runs %v passes %v, tokens/s %v", p.DeviceBusyPct, p.DeviceBusyNsPerToken, p.DeviceBusyPctRuns, p.DeviceBusyPctPasses, p.TokensPerSec)
	}
}

// TestPoolDecodeRefusals: what pooling would mix is refused in one line
// naming both inputs and what differs.
func TestPoolDecodeRefusals(t *testing.T) {
	run := func(edit func(r *schema.DecodeRecord)) []schema.DecodeRecord {
		r := runOf("batch", 70000, "2026-11-26T02:00:00Z")
		if edit != nil {
			edit(&r)
		}
		return []schema.DecodeRecord{r}
	}
	for _, c := range []struct {
		name string
		b    []schema.DecodeRecord
		want string
	}{
		{"commit", run(func(r *schema.DecodeRecord) { r.Environment.VCSRevision = "ffff" }), "pooling decode results: a and b: built from commit"},
		{"machine", run(func(r *schema.DecodeRecord) { r.Environment.CPUModel = "Intel Xeon" }), "pooling decode results: a and b: run on "},
		{"passes", run(func(r *schema.DecodeRecord) { r.Config.Passes = 3 }), "in a and b: measured with passes 10 and 3"},
		{"gemm", run(func(r *schema.DecodeRecord) { r.Config.GEMMUsed = "avx2" }), "measured with gemm_used go and avx2"},
		{"syncs", run(func(r *schema.DecodeRecord) { r.SyncsPerToken = 1 }), "syncs_per_token 0.0078125 and 1, where runs of one decode loop agree"},
		{"duplicate", append(run(nil), run(nil)...), "pooling decode results: b has two records of decode batch on cpu"},
		{"empty", nil, "pooling decode results: b has no record"},
		{"the same run twice", run(nil), "in b holds a run already pooled from a (the same timed passes)"},
	} {
		_, err := PoolDecode([]string{"a", "b"}, [][]schema.DecodeRecord{run(nil), c.b}, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v, want one line with %q", c.name, err, c.want)
		}
	}
	other := run(func(r *schema.DecodeRecord) { r.Schema = "memprobe.decode/v2" })
	if _, err := PoolDecode([]string{"a", "b"}, [][]schema.DecodeRecord{run(nil), other}, nil); !errors.Is(err, schema.ErrSchema) {
		t.Errorf("another version: %v, want ErrSchema", err)
	}
	if _, err := PoolDecode(nil, nil, nil); err == nil {
		t.Error("nothing to pool: no error")
	}
}

// TestCompareDecodeRuns: where both sides pool runs, the measured figures
// are compared over the runs, without the passes' caveat; where one side
// has a single run, both are compared over their passes, never runs
// against passes.
func TestCompareDecodeRuns(t *testing.T) {
	pooled := func(tps ...float64) []schema.DecodeRecord {
		var sets [][]schema.DecodeRecord
		var names []string
		for i, x := range tps {
			sets = append(sets, []schema.DecodeRecord{runOf("batch", x, "2026-11-26T02:00:00Z")})
			names = append(names, string(rune('a'+i)))
		}
		p, err := PoolDecode(names, sets, nil)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := pooled(70000, 71000, 69000, 70500, 69500)
	head := pooled(80000, 81000, 79000, 80500, 79500)
	d, err := report.Compare(report.DecodeRows(base), report.DecodeRows(head), report.DiffOptions{Alpha: report.DefaultAlpha})
	if err != nil {
		t.Fatal(err)
	}
	r := row(d, "batch", "tokens_per_sec")
	if r == nil || r.Base.N != 5 || r.Head.N != 5 || slices.ContainsFunc(r.Warnings, isPassesWarning) || !r.Significant || r.Base.Median != 70000 {
		t.Fatalf("runs against runs: %+v", r)
	}
	if w := row(d, "batch", "host_wait_ns_per_token"); w == nil || w.Base.N != 5 || !w.Significant {
		t.Errorf("host wait over runs: %+v", w)
	}
	one := []schema.DecodeRecord{runOf("batch", 80000, "2026-11-26T02:00:00Z")}
	d, err = report.Compare(report.DecodeRows(base), report.DecodeRows(one), report.DiffOptions{Alpha: report.DefaultAlpha})
	if err != nil {
		t.Fatal(err)
	}
	if r := row(d, "batch", "tokens_per_sec"); r == nil || r.Base.N != 50 || r.Head.N != 10 || !slices.ContainsFunc(r.Warnings, isPassesWarning) {
		t.Errorf("runs against one run: %+v, want passes against passes with the caveat", r)
	}
}

// TestDecodeTablesPooled: a pooled record's row says how many runs and the
// slowest and fastest; the title says the figures are medians of runs.
func TestDecodeTablesPooled(t *testing.T) {
	p, err := PoolDecode([]string{"a", "b", "c"}, [][]schema.DecodeRecord{
		{runOf("batch", 70000, "2026-11-26T02:00:00Z")}, {runOf("batch", 90000, "2026-11-26T02:00:00Z")}, {runOf("batch", 60000, "2026-11-26T02:00:00Z")},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var text, csv bytes.Buffer
	if err := report.WriteDecode(&text, p, table.Text); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteDecode(&csv, p, table.CSV); err != nil {
		t.Fatal(err)
	}
	out := strings.ReplaceAll(text.String(), "\n  ", " ") + csv.String() // titles wrap at 120 columns
	for _, want := range []string{"3 runs of 10 timed passes, each its own process: medians of the runs", "mode,tokens/s,runs,slowest run,fastest run,", "\nbatch,70000,3,60000,90000,"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
}

var (
	decodeRec = schematest.Record
	speeds    = schematest.Speeds
)

// TestPoolDecodePinnedHost: records that differ only in pinned_host are
// different configurations, kept apart and unpooled.
func TestPoolDecodePinnedHost(t *testing.T) {
	base := []schema.DecodeRecord{decodeRec("batch", speeds(1000, 0))}
	head := []schema.DecodeRecord{decodeRec("batch", speeds(1000, 0))}
	head[0].Config.PinnedHost = true
	pooled, err := PoolDecode([]string{"a", "b"}, [][]schema.DecodeRecord{base, head}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(pooled) != 2 || pooled[0].Runs != 0 || pooled[1].Runs != 0 {
		t.Errorf("merge of a staged and a pinned record: %d records; want both kept, unpooled", len(pooled))
	}
}

// row is the named metric's row of the configuration of mode; nil when
// there is none.
func row(d *report.Diff, mode, metric string) *report.MetricDiff {
	for _, c := range d.Configs {
		if c.Phase != mode {
			continue
		}
		for i := range c.Rows {
			if c.Rows[i].Metric == metric {
				return &c.Rows[i]
			}
		}
	}
	return nil
}

// isPassesWarning: report's caveat on a row compared over one process's
// passes, not independent runs.
func isPassesWarning(w string) bool {
	return strings.HasPrefix(w, "samples are the timed passes of one process")
}
