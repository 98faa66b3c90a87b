package report

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"memprobe/metric"
	"memprobe/schema"
)

// TestWriteBench reads WriteBench's output back with benchfmt's reader:
// every record is a result (no syntax error), one per finished repetition,
// named after its plan, phase and sweep, with the environment and preset
// as configuration and every unit present with its value.
func TestWriteBench(t *testing.T) {
	for _, path := range []string{reportFixture, diffBase} {
		rep, err := schema.ReadReport(path)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := WriteBench(&b, ReportRows(rep)); err != nil {
			t.Fatal(err)
		}
		type want struct {
			name   string
			peak   float64
			tokens float64
		}
		var wants []want
		for _, run := range rep.Runs {
			for _, r := range run.Repetitions {
				name := "Threads/phase=" + run.Phase + "/threads=" + run.Sweep["threads"]
				wants = append(wants, want{name, float64(r.PeakRSSBytes), r.TokensPerSec})
			}
		}
		if !strings.HasPrefix(b.String(), "commit: ") {
			t.Errorf("output starts %.40q", b.String())
		}
		rd := benchfmt.NewReader(&b, path)
		i := 0
		for rd.Scan() {
			switch rec := rd.Result().(type) {
			case *benchfmt.SyntaxError:
				t.Fatalf("%s: %v", path, rec)
			case *benchfmt.Result:
				if i >= len(wants) {
					t.Fatalf("%s: more results than repetitions", path)
				}
				w := wants[i]
				i++
				if got := string(rec.Name.Full()); got != w.name || rec.Iters != 1 {
					t.Errorf("%s: result %d is %s (%d iterations), want %s", path, i, got, rec.Iters, w.name)
				}
				for k, v := range map[string]string{"commit": rep.Environment.VCSRevision + "-modified", "goos": "linux",
					"goarch": "amd64", "cpu": rep.Environment.CPUModel, "go": rep.Environment.GoVersion, "preset": "tiny"} {
					if got := rec.GetConfig(k); got != v {
						t.Errorf("%s: %s: config %s = %q, want %q", path, w.name, k, got, v)
					}
				}
				units := map[string]float64{}
				for _, v := range rec.Values {
					if v.OrigUnit != "" { // the reader tidies ns/op into sec/op
						units[v.OrigUnit] = v.OrigValue
						continue
					}
					units[v.Unit] = v.Value
				}
				for _, u := range BenchUnits() {
					if _, ok := units[u]; !ok {
						t.Errorf("%s: %s has no %s", path, w.name, u)
					}
				}
				if len(units) != len(BenchUnits()) || units["peak-rss-B"] != w.peak || units["tokens/s"] != w.tokens {
					t.Errorf("%s: %s: values %v, want peak %v, tokens %v", path, w.name, units, w.peak, w.tokens)
				}
			}
		}
		if err := rd.Err(); err != nil {
			t.Fatal(err)
		}
		if i != len(wants) {
			t.Errorf("%s: %d results, want %d", path, i, len(wants))
		}
	}
}

// TestWriteBenchDecode reads WriteBench's output of decode rows back with
// benchfmt's reader: one result per timed pass of each record (one from
// the totals where a record has no passes), named after the mode, device
// and shape, ns/op the inverse of the pass's tokens/s, the counts on every
// line, device-busy-% only where the device was timed.
func TestWriteBenchDecode(t *testing.T) {
	recs := fakeDecodeRecords(true)
	for i := range recs {
		recs[i].Environment = schema.Environment{VCSRevision: "abc", GOOS: "linux", GOARCH: "amd64", CPUModel: "AMD EPYC", GoVersion: "go1.26.8"}
		recs[i].TokensPerSecPasses = []float64{recs[i].TokensPerSec, recs[i].TokensPerSec * 2}
		recs[i].HostWaitNsPerTokenPasses = []float64{recs[i].HostWaitNsPerToken, recs[i].HostWaitNsPerToken / 2}
		recs[i].DeviceBusyPctPasses = []float64{*recs[i].DeviceBusyPct, *recs[i].DeviceBusyPct}
	}
	recs[3].TokensPerSecPasses, recs[3].HostWaitNsPerTokenPasses, recs[3].DeviceBusyPctPasses = nil, nil, nil
	recs[3].DeviceBusyPct = nil
	var b bytes.Buffer
	if err := WriteBench(&b, DecodeRows(recs)); err != nil {
		t.Fatal(err)
	}
	rd := benchfmt.NewReader(&b, "decode.bench")
	var n int
	for rd.Scan() {
		switch rec := rd.Result().(type) {
		case *benchfmt.SyntaxError:
			t.Fatal(rec)
		case *benchfmt.Result:
			k := min(n/2, 3)
			r := recs[k]
			wantTPS := r.TokensPerSec
			if k < 3 && n%2 == 1 {
				wantTPS *= 2
			}
			n++
			name := "Decode/mode=" + r.Decode + "/device=cpu/B=32/T=128/C=256/V=788/probs=true"
			if got := string(rec.Name.Full()); got != name || rec.GetConfig("cpu") != "AMD EPYC" || rec.GetConfig("commit") != "abc" {
				t.Errorf("result %d: %s, cpu %q, commit %q; want %s", n, got, rec.GetConfig("cpu"), rec.GetConfig("commit"), name)
			}
			units := map[string]float64{}
			for _, v := range rec.Values {
				units[v.Unit] = v.Value
			}
			_, busy := units["device-busy-%"]
			if units["tokens/s"] != wantTPS || math.Abs(units["sec/op"]-1/wantTPS) > 1e-15 || units["syncs/op"] != r.SyncsPerToken ||
				units["host-allocs/op"] != r.HostAllocsPerToken || busy != (k < 3) {
				t.Errorf("result %d (%s): %v; want %v tokens/s, its inverse as sec/op, the counts, device-busy-%% %v", n, r.Decode, units, wantTPS, k < 3)
			}
		}
	}
	if err := rd.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 3*2+1 {
		t.Errorf("%d results, want two passes of three modes and one line of the fourth", n)
	}
	if err := WriteBench(new(bytes.Buffer), DecodeRows(nil)); err == nil {
		t.Error("no records: no error")
	}
	// A record whose host buffers were page-locked is another benchmark.
	recs[0].Config.PinnedHost = true
	b.Reset()
	if err := WriteBench(&b, DecodeRows(recs[:1])); err != nil {
		t.Fatal(err)
	}
	if want := "BenchmarkDecode/mode=" + recs[0].Decode + "/device=cpu/B=32/T=128/C=256/V=788/probs=true/pinned_host=true 1 "; !strings.Contains(b.String(), want) {
		t.Errorf("pinned host record: %q lacks %q", b.String(), want)
	}
}

// TestBenchValuePlain: large values are written in plain decimals, as the
// format's examples and benchstat's inputs have them (66743690 ns/op, not
// 6.674369e+07), integral ones rounded out of float noise; small ones in
// the shortest form; each reads back as a float, as benchfmt reads values.
func TestBenchValuePlain(t *testing.T) {
	for _, c := range []struct {
		x    float64
		want string
	}{
		{66743690, "66743690"},
		{68662077.00000001, "68662077"},
		{27230208, "27230208"},
		{1e6, "1000000"},
		{1234567.25, "1234567.25"},
		{37347.5, "37347.5"},
		{0.2, "0.2"},
		{0, "0"},
		{-2e7, "-20000000"},
	} {
		got := benchValue(c.x)
		if got != c.want {
			t.Errorf("benchValue(%v) = %q, want %q", c.x, got, c.want)
		}
		if back, err := strconv.ParseFloat(got, 64); err != nil || math.Abs(back-c.x) > 1e-6*math.Abs(c.x) {
			t.Errorf("%q reads back as %v, %v", got, back, err)
		}
	}
	rep, err := schema.ReadReport(reportFixture)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteBench(&b, ReportRows(rep)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "e+") {
		t.Errorf("WriteBench writes an exponent:\n%s", b.String())
	}
}

// TestWriteBenchProcess: a process result (probe exec, probe attach) has
// no training figures: its line carries the memory it measured and no
// ns/op, tokens/s, allocations or ledger, which benchstat would compare as
// zeros. Before, it wrote "0 ns/op 0 tokens/s ... 0 ledger-B".
func TestWriteBenchProcess(t *testing.T) {
	rep, err := schema.ReadReport(reportFixture)
	if err != nil {
		t.Fatal(err)
	}
	rep.Runs = rep.Runs[:1]
	rep.Runs[0].Repetitions = rep.Runs[0].Repetitions[:1]
	r := &rep.Runs[0].Repetitions[0]
	r.Kind = schema.KindProcess
	var b bytes.Buffer
	if err := WriteBench(&b, ReportRows(rep)); err != nil {
		t.Fatal(err)
	}
	var line string
	for l := range strings.Lines(b.String()) {
		if strings.HasPrefix(l, "Benchmark") {
			line = l
		}
	}
	for _, u := range []string{" ns/op", " tokens/s", " heap-B/step", " heap-allocs/step", " ledger-B"} {
		if strings.Contains(line, u) {
			t.Errorf("process line has %s: %q", u, line)
		}
	}
	if want := " " + strconv.FormatUint(r.PeakRSSBytes, 10) + " peak-rss-B"; !strings.Contains(line, want) || !strings.Contains(line, " final-vsz-B") {
		t.Errorf("process line %q lacks%s or final-vsz-B", line, want)
	}
}

// TestBenchUnitsFromRegistry: every metric a bench line writes is
// registered for its kind with a unit of the benchmark format
// (metric.Def.Bench), which is what the line writes beside its value.
func TestBenchUnitsFromRegistry(t *testing.T) {
	for _, c := range []struct {
		kind  metric.Kind
		names []string
	}{{metric.Run, benchMetrics}, {metric.Decode, decodeBenchMetrics}} {
		for _, m := range c.names {
			d, err := metric.Lookup(m)
			if err != nil || d.Bench == "" || !d.Of(c.kind) || strings.Contains(d.Bench, " ") {
				t.Errorf("%s (%s): registered %v, bench unit %q", m, c.kind, err == nil, d.Bench)
			}
		}
	}
	want := []string{"ns/op", "tokens/s", "peak-rss-B", "max-rss-B", "final-vsz-B", "heap-B/step", "heap-allocs/step", "ledger-B"}
	if got := BenchUnits(); !slices.Equal(got, want) {
		t.Errorf("BenchUnits() = %v, want %v", got, want)
	}
}
