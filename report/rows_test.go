package report

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"memprobe/internal/table"
	"memprobe/metric"
	"memprobe/schema"
)

// TestOneComparePlanted: a copy of an input compares clean against it,
// and the same copy with one figure planted is flagged by the one
// Compare and its --fail-on gate, for both kinds of rows: a run report
// (ledger_total_bytes of one finished configuration +1 MiB in every
// repetition)
// and decode records (host_allocs_per_token of one mode +1 a token).
func TestOneComparePlanted(t *testing.T) {
	readRep := func() *schema.Report {
		rep, err := schema.ReadReport(diffBase)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	cases := []struct {
		name       string
		base, copy func() *Rows
		plant      func(*Rows) string // returns the planted row's key
		limit      string
	}{{
		name: "run report",
		base: func() *Rows { return ReportRows(readRep()) },
		copy: func() *Rows { return ReportRows(readRep()) },
		plant: func(rs *Rows) string {
			i := slices.IndexFunc(rs.Report.Runs, func(r schema.Run) bool { return r.Status == schema.StatusOK && len(r.Repetitions) >= 2 })
			run := &rs.Report.Runs[i]
			for i := range run.Repetitions {
				run.Repetitions[i].LedgerTotalBytes += 1 << 20
			}
			return ConfigKey(run)
		},
		limit: "ledger_total_bytes:+0",
	}, {
		name: "decode records",
		base: func() *Rows { return DecodeRows(decodeSide(false, decodeBaseSpeeds)) },
		copy: func() *Rows { return DecodeRows(decodeSide(false, decodeBaseSpeeds)) },
		plant: func(rs *Rows) string {
			rs.Decode[3].HostAllocsPerToken++
			return rs.Decode[3].Key()
		},
		limit: "host_allocs_per_token:+0",
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ths, err := ParseThresholds(c.limit)
			if err != nil {
				t.Fatal(err)
			}
			opt := DiffOptions{Extra: []string{ths[0].Metric}, BaseName: "base.json", HeadName: "copy.json"}
			d, err := Compare(c.base(), c.copy(), opt)
			if err != nil {
				t.Fatal(err)
			}
			if b := d.Breaches(ths); len(b) != 0 {
				t.Fatalf("an unchanged copy breaches %s: %v", c.limit, b)
			}
			head := c.copy()
			key := c.plant(head)
			d, err = Compare(c.base(), head, opt)
			if err != nil {
				t.Fatal(err)
			}
			b := d.Breaches(ths)
			if len(b) != 1 || b[0].Config != key || b[0].Row.Metric != ths[0].Metric || !b[0].Row.Exact || b[0].Reason != "" {
				t.Fatalf("planted in %s: breaches %v, want one exact regression of %s there", key, b, ths[0].Metric)
			}
		})
	}
}

// TestCompareKinds: a run report against decode records is refused in
// one line naming both inputs, whichever side each is.
func TestCompareKinds(t *testing.T) {
	rep, err := schema.ReadReport(diffBase)
	if err != nil {
		t.Fatal(err)
	}
	runs, recs := ReportRows(rep), DecodeRows(decodeSide(false, decodeBaseSpeeds))
	for _, p := range [][2]*Rows{{runs, recs}, {recs, runs}} {
		_, err := Compare(p[0], p[1], DiffOptions{BaseName: "a.json", HeadName: "b.json"})
		if err == nil || !strings.Contains(err.Error(), "a.json") || !strings.Contains(err.Error(), "b.json") || !strings.Contains(err.Error(), "like with like") {
			t.Errorf("%s against %s: got %v", p[0].Kind, p[1].Kind, err)
		}
	}
}

// TestDefaultsByKind: with no metric named, Compare compares the
// registry's defaults of the inputs' kind (metric.Def.Default), in
// registry order: a metric marked default appears, one not marked does
// not, whatever the inputs measure.
func TestDefaultsByKind(t *testing.T) {
	rep, err := schema.ReadReport(diffBase)
	if err != nil {
		t.Fatal(err)
	}
	recs := decodeSide(false, decodeBaseSpeeds)
	for _, c := range []struct {
		rows func() *Rows
		kind metric.Kind
	}{{func() *Rows { return ReportRows(rep) }, metric.Run}, {func() *Rows { return DecodeRows(recs) }, metric.Decode}} {
		d, err := Compare(c.rows(), c.rows(), DiffOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, cd := range d.Configs {
			for _, r := range cd.Rows {
				if !slices.Contains(got, r.Metric) {
					got = append(got, r.Metric)
				}
			}
		}
		want := metric.Defaults(c.kind)
		// A default the inputs do not measure is left out silently.
		want = slices.DeleteFunc(want, func(m string) bool { return !slices.Contains(got, m) })
		if !slices.Equal(got, want) || len(got) < 5 {
			t.Errorf("%s: compared %v, want the registry's defaults %v", c.kind, got, metric.Defaults(c.kind))
		}
		for _, m := range got {
			if d, _ := metric.Lookup(m); !d.Default {
				t.Errorf("%s: compared %s, not a default", c.kind, m)
			}
		}
	}
}

// TestRunMedianRepresentative: a run's median is its summary's where the
// summary holds the metric, else the repetitions' median read through the
// registry; the representative repetition is the one nearest the median
// peak RSS (the HTML page draws and profiles that one).
func TestRunMedianRepresentative(t *testing.T) {
	run := &schema.Run{Status: schema.StatusOK, Repetitions: []schema.Result{{PeakRSSBytes: 10 << 20}, {PeakRSSBytes: 31 << 20}, {PeakRSSBytes: 19 << 20}}}
	if m, ok := RunMedian(run, "peak_rss_bytes"); !ok || m != 19<<20 {
		t.Errorf("median of the repetitions: %v %v, want 19 MiB", m, ok)
	}
	if k := Representative(run); k != 2 {
		t.Errorf("representative %d, want 2 (19 MiB, the median)", k)
	}
	run.Summary.Metrics = []schema.Metric{{Name: "peak_rss_bytes", N: 3, Median: 30 << 20}}
	if m, _ := RunMedian(run, "peak_rss_bytes"); m != 30<<20 {
		t.Errorf("median with a summary: %v, want the summary's 30 MiB", m)
	}
	if k := Representative(run); k != 1 {
		t.Errorf("representative with a summary median of 30 MiB: %d, want 1 (31 MiB)", k)
	}
	if _, ok := RunMedian(run, "process.vm_hwm_bytes"); ok {
		t.Error("a training run has a process.vm_hwm_bytes median")
	}
	if k := Representative(&schema.Run{}); k != -1 {
		t.Errorf("no repetition: %d, want -1", k)
	}
}

// TestHistoryAsDiff: a history's arrow is what probe diff says of the two
// entries (compareMetric): a count that moves between single runs (one
// draw a side, 2,085 then 2,086 allocations a step) is no arrow, as diff
// calls it unjudged, while the same move between two agreeing
// repetitions a side is ↑.
func TestHistoryAsDiff(t *testing.T) {
	const m = "go_heap_allocs_per_step"
	for _, c := range []struct {
		base, head []float64
		want       string
	}{
		{[]float64{2085}, []float64{2086}, ",2086,~\n"},
		{[]float64{2085, 2085}, []float64{2086, 2086}, ",2086,↑\n"},
	} {
		head := oneRunReport(m, c.head...)
		head.StartTime = "2026-11-26T03:00:00Z"
		es := []HistoryEntry{{Name: "a.json", Report: oneRunReport(m, c.base...)}, {Name: "b.json", Report: head}}
		var buf bytes.Buffer
		if err := WriteHistory(&buf, es, m, "", table.CSV); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), c.want) {
			t.Errorf("%v then %v: no %q in\n%s", c.base, c.head, c.want, buf.String())
		}
		d, err := Compare(ReportRows(es[0].Report), ReportRows(es[1].Report), DiffOptions{Metrics: []string{m}})
		if err != nil {
			t.Fatal(err)
		}
		if sig := d.Configs[0].Rows[0].Significant; sig != strings.Contains(c.want, "↑") {
			t.Errorf("%v then %v: diff says significant %v, the history %q", c.base, c.head, sig, c.want)
		}
	}
}
