package report

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

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
		if err := WriteBench(&b, rep); err != nil {
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
