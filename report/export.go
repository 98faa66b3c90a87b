package report

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"memprobe/schema"
)

// benchUnits are the metrics WriteBench writes on each line, with their
// units in the Go benchmark format (no spaces; "B" for bytes as benchstat
// scales it). ns/op is the step's median time: an op is one training
// step.
var benchUnits = []struct {
	unit string
	get  func(r *schema.Result, o *schema.Outside) (float64, bool)
}{
	{"ns/op", func(r *schema.Result, _ *schema.Outside) (float64, bool) { return float64(r.StepNsMedian), true }},
	{"tokens/s", func(r *schema.Result, _ *schema.Outside) (float64, bool) { return r.TokensPerSec, true }},
	{"peak-rss-B", func(r *schema.Result, _ *schema.Outside) (float64, bool) { return float64(r.PeakRSSBytes), true }},
	{"max-rss-B", func(_ *schema.Result, o *schema.Outside) (float64, bool) {
		if o == nil {
			return 0, false
		}
		return float64(o.MaxRSSBytes), true
	}},
	{"final-vsz-B", func(r *schema.Result, _ *schema.Outside) (float64, bool) { return float64(r.FinalVSZBytes), true }},
	{"heap-B/step", func(r *schema.Result, _ *schema.Outside) (float64, bool) { return r.HeapAllocBytesPerStep, true }},
	{"heap-allocs/step", func(r *schema.Result, _ *schema.Outside) (float64, bool) { return r.HeapAllocsPerStep, true }},
	{"ledger-B", func(r *schema.Result, _ *schema.Outside) (float64, bool) { return float64(r.LedgerTotalBytes), true }},
}

// BenchUnits lists the units WriteBench writes, in order (max-rss-B only
// where the parent measured the repetition).
func BenchUnits() []string {
	var out []string
	for _, u := range benchUnits {
		out = append(out, u.unit)
	}
	return out
}

// WriteBench writes a run report in the Go benchmark format
// (golang.org/design/14313-benchmark-format), for benchstat and the perf
// dashboard: the environment as configuration lines (commit, goos, goarch,
// cpu, go, ...), then for each configuration its preset as a
// configuration line and one line per repetition,
//
//	BenchmarkThreads/phase=P6/threads=7 1 66743690 ns/op 37347 tokens/s 27230208 peak-rss-B ...
//
// named after the plan, with the phase and sweep values as sub-benchmark
// keys. Configurations with no finished repetition write no line.
func WriteBench(w io.Writer, rep *schema.Report) error {
	bw := bufio.NewWriter(w)
	e := rep.Environment
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
	config("start-time", rep.StartTime)
	preset := ""
	for i := range rep.Runs {
		run := &rep.Runs[i]
		if len(run.Repetitions) == 0 {
			continue
		}
		if p := run.Config.Preset; p != preset {
			preset = p
			fmt.Fprintf(bw, "preset: %s\n", oneLine(p))
		}
		name := benchName(run)
		var outside []*schema.Outside
		for k := range run.Outside {
			if run.Outside[k].Status == schema.StatusOK {
				outside = append(outside, &run.Outside[k])
			}
		}
		for k := range run.Repetitions {
			var o *schema.Outside
			if k < len(outside) {
				o = outside[k]
			}
			bw.WriteString(name + " 1")
			for _, u := range benchUnits {
				if x, ok := u.get(&run.Repetitions[k], o); ok {
					fmt.Fprintf(bw, " %s %s", strconv.FormatFloat(x, 'g', -1, 64), u.unit)
				}
			}
			bw.WriteString("\n")
		}
	}
	return bw.Flush()
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
