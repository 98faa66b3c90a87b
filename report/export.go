package report

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"memprobe/metric"
	"memprobe/schema"
)

// benchMetrics are the metrics of a run's WriteBench line, in order,
// each written in its registered unit of the Go benchmark format
// (metric.Def.Bench) and read through the registry: from the repetition,
// or the parent's view of it (max_rss_bytes). ns/op is the step's median
// time: an op is one training step.
var benchMetrics = []string{
	"step_ns_median", "tokens_per_sec", "peak_rss_bytes", "max_rss_bytes", "final_vsz_bytes",
	"go_heap_alloc_bytes_per_step", "go_heap_allocs_per_step", "ledger_total_bytes",
}

// benchDef is the registered metric of a bench line (a name of
// benchMetrics or decodeBenchMetrics, registered: a test checks).
func benchDef(name string) metric.Def {
	d, err := metric.Lookup(name)
	if err != nil {
		panic(err)
	}
	return d
}

// benchValueOf reads metric name of a repetition r, or of o, the parent's
// view of it (nil when the parent did not measure it).
func benchValueOf(name string, r *schema.Result, o *schema.Outside) (float64, bool) {
	d, err := metric.Lookup(name)
	switch {
	case err != nil:
		return 0, false
	case d.Run != nil:
		return d.Run(r)
	case d.Outside != nil && o != nil:
		return d.Outside(o)
	}
	return 0, false
}

// BenchUnits lists the units WriteBench writes, in order (max-rss-B only
// where the parent measured the repetition; of a process result, only
// those it measures).
func BenchUnits() []string {
	var out []string
	for _, m := range benchMetrics {
		out = append(out, benchDef(m).Bench)
	}
	return out
}

// WriteBench writes an input's rows in the Go benchmark format
// (golang.org/design/14313-benchmark-format), for benchstat and the perf
// dashboard: the environment as configuration lines (commit, goos, goarch,
// cpu, go, ...; compare two commits' exports with benchstat -ignore
// commit,commit-time), then per row its benchmark lines (benchLines).
//
// A run report's row is a configuration: its preset as a configuration
// line where it changes, and one line per repetition,
//
//	BenchmarkThreads/phase=P6/threads=7 1 66743690 ns/op 37347 tokens/s 27230208 peak-rss-B ...
//
// named after the plan, with the phase and sweep values as sub-benchmark
// keys; configurations with no finished repetition write no line.
//
// A decode record's row is one line per timed pass, an op being one token,
//
//	BenchmarkDecode/mode=batch/device=cpu/B=32/T=128/C=256/V=788/probs=true 1 5587 ns/op 178973 tokens/s 5300 host-wait-ns/op 92.6 device-busy-% ...
//
// (a record whose host buffers were page-locked, config.pinned_host, ends
// its name in /pinned_host=true), so that benchstat compares two decode
// results over their passes (which are passes of one process, not
// independent runs: benchstat's intervals are narrower than run-to-run
// noise). A record without per-pass samples writes one line from its
// totals. Decode rows with no record are an error.
func WriteBench(w io.Writer, rs *Rows) error {
	if rs.Kind == metric.Decode && len(rs.All) == 0 {
		return fmt.Errorf("decode bench: no records")
	}
	bw := bufio.NewWriter(w)
	env, _ := rs.environment()
	writeBenchEnvironment(bw, env)
	preset := ""
	for _, r := range rs.All {
		lines := r.benchLines()
		if len(lines) == 0 {
			continue
		}
		if r.run != nil {
			if p := r.run.Config.Preset; p != preset {
				preset = p
				fmt.Fprintf(bw, "preset: %s\n", oneLine(p))
			}
		}
		name := r.benchName()
		for _, l := range lines {
			bw.WriteString(name + " 1")
			for _, f := range l {
				fmt.Fprintf(bw, " %s %s", benchValue(f.x), f.unit)
			}
			bw.WriteString("\n")
		}
	}
	return bw.Flush()
}

// benchField is one value of a benchmark line and its unit.
type benchField struct {
	x    float64
	unit string
}

// benchName is the row's benchmark name: a run's (benchName), or
// "BenchmarkDecode" and the record's mode, device and shape as keys.
func (r *Row) benchName() string {
	if r.run != nil {
		return benchName(r.run.Run)
	}
	d := r.rec
	m := d.Config.Model
	name := fmt.Sprintf("BenchmarkDecode/mode=%s/device=%s/B=%d/T=%d/C=%d/V=%d/probs=%t", d.Decode, d.Device, m.Batch, m.Context, m.Dim, m.Vocab, d.Config.Probs)
	if d.Config.PinnedHost { // named only where used: other names stay as they were
		name += "/pinned_host=true"
	}
	return benchSafe(name)
}

// benchLines are the row's benchmark lines, a sample each: a run's
// repetitions (benchUnits, max-rss-B from the parent's view of the
// repetition of the same index among those it saw finish), a decode
// record's passes (decodeBenchUnits).
func (r *Row) benchLines() [][]benchField {
	if r.rec != nil {
		return decodeBenchLines(*r.rec.DecodeRecord)
	}
	run := r.run.Run
	var outside []*schema.Outside
	for k := range run.Outside {
		if run.Outside[k].Status == schema.StatusOK {
			outside = append(outside, &run.Outside[k])
		}
	}
	var out [][]benchField
	for k := range run.Repetitions {
		var o *schema.Outside
		if k < len(outside) {
			o = outside[k]
		}
		rep := &run.Repetitions[k]
		line := []benchField{}
		for _, m := range benchMetrics {
			// A process result (probe exec) has no training figures:
			// left out, not written as zeros for benchstat to compare.
			if !rep.Measures(m) {
				continue
			}
			if x, ok := benchValueOf(m, rep, o); ok {
				line = append(line, benchField{x, benchDef(m).Bench})
			}
		}
		out = append(out, line)
	}
	return out
}

// writeBenchEnvironment writes the machine and build as configuration
// lines (commit, commit-time, goos, goarch, cpu, go, kernel), each where
// known. Not the start time: benchstat splits its tables by every
// configuration value, and one that differs on every run would keep two
// runs of one commit from ever being compared.
func writeBenchEnvironment(bw *bufio.Writer, e schema.Environment) {
	config := func(key, val string) {
		if val != "" {
			fmt.Fprintf(bw, "%s: %s\n", key, oneLine(val))
		}
	}
	commit := e.VCSRevision
	if commit != "" && e.VCSModified {
		commit += "-modified"
	}
	config("commit", commit)
	config("commit-time", e.VCSTime)
	config("goos", e.GOOS)
	config("goarch", e.GOARCH)
	config("cpu", e.CPUModel)
	config("go", e.GoVersion)
	config("kernel", e.KernelRelease)
}

// decodeBenchMetrics are the metrics of a decode record's WriteBench
// line after its ns/op, in order, each in its registered unit of the Go
// benchmark format (metric.Def.Bench) and read through the registry: a
// pass's sample where the metric has them (Def.Passes), else the record's
// figure. An op is one token; ns/op, first, is 1e9 over the pass's
// tokens/s.
var decodeBenchMetrics = []string{
	"tokens_per_sec", "host_wait_ns_per_token", "device_busy_pct",
	"syncs_per_token", "launches_per_token", "host_allocs_per_token", "device_peak_bytes",
}

// decodeBenchValue is metric d's value on the line of pass i of r.
func decodeBenchValue(d metric.Def, r *schema.DecodeRecord, i int) (float64, bool) {
	if d.Passes == nil {
		return d.Decode(r)
	}
	if vals := d.Passes(r); i < len(vals) {
		return vals[i], true
	}
	return 0, false
}

// decodeBenchLines are a record's lines, one per timed pass; a record
// (a copy: r is the caller's value) without per-pass samples has one,
// from its totals.
func decodeBenchLines(r schema.DecodeRecord) [][]benchField {
	if len(r.TokensPerSecPasses) == 0 {
		r.TokensPerSecPasses = []float64{r.TokensPerSec}
		r.HostWaitNsPerTokenPasses = []float64{r.HostWaitNsPerToken}
		r.DeviceBusyPctPasses = nil
		if r.DeviceBusyPct != nil {
			r.DeviceBusyPctPasses = []float64{*r.DeviceBusyPct}
		}
	}
	var out [][]benchField
	for i := range r.TokensPerSecPasses {
		line := []benchField{}
		if tps, ok := decodeBenchValue(benchDef("tokens_per_sec"), &r, i); ok {
			line = append(line, benchField{1e9 / tps, "ns/op"})
		}
		for _, m := range decodeBenchMetrics {
			d := benchDef(m)
			if x, ok := decodeBenchValue(d, &r, i); ok {
				line = append(line, benchField{x, d.Bench})
			}
		}
		out = append(out, line)
	}
	return out
}

// benchValue writes a value as the Go benchmark format's lines usually
// carry it: a large value in plain decimals (68662077, not 6.8662077e+07),
// rounded to an integer when it is one but for float noise (a part in
// 10⁹); a small one in
// the shortest form that reads back (0.2, 5587.5). Both parse as floats,
// as benchfmt reads values.
func benchValue(x float64) string {
	if math.Abs(x) < 1e6 || math.IsInf(x, 0) || math.IsNaN(x) {
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	if r := math.Round(x); math.Abs(x-r) <= 1e-9*math.Abs(x) {
		x = r
	}
	return strconv.FormatFloat(x, 'f', -1, 64)
}

// benchName is "Benchmark" and the plan (or the run's name) capitalised,
// then "/phase=P" and the sweep values "/axis=value", axes in order;
// characters the format does not allow in a name become "_".
func benchName(run *schema.Run) string {
	base := run.Plan
	if base == "" {
		base = run.Name
	}
	if base == "" {
		base = "Run"
	}
	r, n := utf8.DecodeRuneInString(base)
	name := "Benchmark" + string(unicode.ToUpper(r)) + base[n:]
	if run.Phase != "" {
		name += "/phase=" + run.Phase
	}
	for _, k := range sortedKeys(run.Sweep) {
		name += "/" + k + "=" + run.Sweep[k]
	}
	return benchSafe(name)
}

// benchSafe replaces the characters the format does not allow in a
// benchmark's name by "_".
func benchSafe(name string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return '_'
		}
		return r
	}, name)
}

// oneLine keeps a configuration value on its line.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s)
}
