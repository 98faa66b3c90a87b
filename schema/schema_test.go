package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

func readFixture(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/result.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestResultRoundTrip: the fixture (a recorded result of the tiny preset's
// threads plan, phase P6) reads,
// its configuration sits where the model shape was, and what WriteResult
// writes reads back equal.
func TestResultRoundTrip(t *testing.T) {
	r, err := ReadResult("testdata/result.json")
	if err != nil {
		t.Fatal(err)
	}
	c := r.Config
	if c.Model != (Model{Vocab: 788, Dim: 64, Layers: 2, Heads: 4, FF: 256, Context: 64, Batch: 32}) ||
		c.Threads != 7 || c.Plan != "threads" || c.Phase != "P6" || c.GEMM != "auto" || c.GEMMUsed != "avx2" ||
		c.Optimizer != r.Optimizer || c.SampleIntervalMs != 10 || !c.Instruments {
		t.Errorf("config %+v", c)
	}
	if r.Environment.GOMAXPROCS != 2 || r.StartTime == "" || len(r.CommandLine) == 0 || len(r.Ledger) == 0 {
		t.Errorf("environment %+v, start %q, command line %q, %d ledger rows", r.Environment, r.StartTime, r.CommandLine, len(r.Ledger))
	}
	path := filepath.Join(t.TempDir(), "r.json")
	if err := WriteResult(path, r); err != nil {
		t.Fatal(err)
	}
	back, err := ReadResult(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r, back) {
		t.Errorf("round trip changed the result")
	}
	r.Schema = "memprobe.train/v2"
	if err := WriteResult(path, r); !errors.Is(err, ErrSchema) {
		t.Errorf("writing a v2 result: %v, want ErrSchema", err)
	}
}

// TestResultErrors: every refusal is one line naming the file; a refusal
// for the version says which version it found and which it reads.
func TestResultErrors(t *testing.T) {
	valid := string(readFixture(t))
	swap := func(old, new string) string {
		if !strings.Contains(valid, old) {
			t.Fatalf("fixture lacks %q", old)
		}
		return strings.Replace(valid, old, new, 1)
	}
	for _, c := range []struct {
		name, data, want string
		schema           bool
	}{
		{"v2.json", swap(ResultVersion, "memprobe.train/v2"), `unsupported schema: schema "memprobe.train/v2", this build reads "memprobe.train/v3"`, true},
		{"v4.json", swap(ResultVersion, "memprobe.train/v4"), `schema "memprobe.train/v4", this build reads "memprobe.train/v3"`, true},
		{"a-report.json", `{"schema": "memprobe.report/v1"}`, "(not a result: a run report of probe run)", true},
		{"no-schema.json", `{"params": 3, "steps": 1}`, `no "schema" field`, true},
		{"truncated.json", valid[:len(valid)/2], "unexpected end of JSON input", false},
		{"syntax.json", "{\n\"schema\": \"memprobe.train/v3\",\n\"steps\": 1,,\n}", "line 3: invalid character ','", false},
		{"type.json", "{\n\"schema\": \"memprobe.train/v3\",\n\"steps\": \"many\"\n}", "line 3: field steps: a JSON string where an integer is wanted", false},
		{"empty-run.json", `{"schema": "memprobe.train/v3", "steps": 0, "params": 10}`, "implausible result: 0 steps", false},
		{"no-config.json", `{"schema": "memprobe.train/v3", "steps": 1, "params": 10}`, "implausible result: config has 0 threads", false},
		{"no-env.json", swap(`"go_version": "go1.26.8"`, `"go_version": ""`), "environment has no go_version", false},
		{"bad-time.json", swap(`"start_time": "2026-11-26T01:40:09Z"`, `"start_time": "yesterday"`), `start_time "yesterday" is not RFC 3339`, false},
	} {
		_, err := DecodeResult([]byte(c.data), c.name)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "reading result "+c.name) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v, want one line naming the file and containing %q", c.name, err, c.want)
		}
		if c.schema != errors.Is(err, ErrSchema) {
			t.Errorf("%s: errors.Is(err, ErrSchema) = %v, want %v", c.name, !c.schema, c.schema)
		}
	}
	if _, err := ReadResult("testdata/missing.json"); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("missing file: %v", err)
	}
}

func testReport(t *testing.T) *Report {
	r, err := DecodeResult(readFixture(t), "result.json")
	if err != nil {
		t.Fatal(err)
	}
	return &Report{
		Environment: CurrentEnvironment(), CommandLine: []string{"probe", "run"},
		StartTime: "2026-11-26T01:20:00Z", EndTime: "2026-11-26T01:21:00Z",
		Runs: []Run{
			{Name: "threads-P6", Plan: "threads", Phase: "P6", Config: r.Config, Status: StatusOK,
				Repetitions: []Result{*r, *r},
				Summary: Summary{Repetitions: 2, Completed: 2, Warnings: []string{},
					Metrics: []Metric{{Name: "peak_rss_bytes", Values: []float64{1, 2}, N: 2, Median: 1.5, Min: 1, Max: 2}}}},
			{Name: "threads-before", Plan: "threads", Phase: "before", Status: StatusTimeout, Reason: "ran past 600s",
				Repetitions: []Result{}, Summary: Summary{Repetitions: 2, Metrics: []Metric{}, Warnings: []string{}}},
		},
		Warnings: []string{},
	}
}

// TestReportRoundTrip: a run report writes and reads back equal.
func TestReportRoundTrip(t *testing.T) {
	rep := testReport(t)
	path := filepath.Join(t.TempDir(), "report.json")
	if err := WriteReport(path, rep); err != nil {
		t.Fatal(err)
	}
	if rep.Schema != ReportVersion {
		t.Errorf("schema %q", rep.Schema)
	}
	back, err := ReadReport(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rep, back) {
		t.Errorf("round trip changed the report")
	}
}

func TestReportErrors(t *testing.T) {
	for _, c := range []struct {
		name   string
		edit   func(*Report)
		want   string
		schema bool
	}{
		{"v0.json", func(r *Report) { r.Schema = "memprobe.report/v0" }, `schema "memprobe.report/v0", this build reads "memprobe.report/v1"`, true},
		{"a-result.json", func(r *Report) { r.Schema = ResultVersion }, "(not a report: a job result of probe train or probe exec)", true},
		{"old-rep.json", func(r *Report) { r.Runs[0].Repetitions[1].Schema = "memprobe.train/v2" }, `run 0 (threads-P6), repetition 1: unsupported schema: schema "memprobe.train/v2"`, true},
		{"status.json", func(r *Report) { r.Runs[1].Status = "lost" }, `run 1 (threads-before): unknown status "lost"`, false},
		{"ok-empty.json", func(r *Report) { r.Runs[0].Repetitions = nil }, "status ok with no repetitions", false},
		{"bad-rep.json", func(r *Report) { r.Runs[0].Repetitions[0].Steps = 0 }, "repetition 0: implausible result: 0 steps", false},
		{"end.json", func(r *Report) { r.EndTime = "" }, `end_time "" is not RFC 3339`, false},
	} {
		rep := testReport(t)
		rep.Schema = ReportVersion
		c.edit(rep)
		b, err := Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		_, err = DecodeReport(b, c.name)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "reading report "+c.name) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v, want one line naming the file and containing %q", c.name, err, c.want)
		}
		if c.schema != errors.Is(err, ErrSchema) {
			t.Errorf("%s: errors.Is(err, ErrSchema) = %v, want %v", c.name, !c.schema, c.schema)
		}
	}
}

// TestEnvironmentFixture reads a fixture /proc tree.
func TestEnvironmentFixture(t *testing.T) {
	e := environment("testdata")
	if e.KernelRelease != "6.1.0-test-amd64" || e.CPUModel != "Intel(R) Xeon(R) Test CPU @ 2.00GHz" || e.MemTotalBytes != 8167972*1024 {
		t.Errorf("kernel %q, cpu %q, memory %d", e.KernelRelease, e.CPUModel, e.MemTotalBytes)
	}
	if e := environment(t.TempDir()); e.KernelRelease != "" || e.CPUModel != "" || e.MemTotalBytes != 0 {
		t.Errorf("without /proc: %+v", e)
	}
}

func TestCurrentEnvironment(t *testing.T) {
	e := CurrentEnvironment()
	if e.GoVersion != runtime.Version() || e.GOOS != runtime.GOOS || e.GOARCH != runtime.GOARCH ||
		e.LogicalCores != runtime.NumCPU() || e.GOMAXPROCS != runtime.GOMAXPROCS(0) || e.CPUFlags == nil || e.BuildTags == nil {
		t.Errorf("%+v", e)
	}
	if runtime.GOOS == "linux" && (e.KernelRelease == "" || e.MemTotalBytes == 0) {
		t.Errorf("on Linux: kernel %q, memory %d", e.KernelRelease, e.MemTotalBytes)
	}
	if runtime.GOARCH == "amd64" && e.CPUModel == "" && runtime.GOOS == "linux" {
		t.Errorf("no CPU model")
	}
}

// TestDecodeDecodeErrors: each refusal of a decode result is one line
// that names the file (and the record, in an array) and what is wrong.
func TestDecodeDecodeErrors(t *testing.T) {
	all, err := os.ReadFile("testdata/decode.json")
	if err != nil {
		t.Fatal(err)
	}
	recs, err := DecodeDecode(all, "decode.json")
	if err != nil || len(recs) != 4 || recs[3].Decode != "batch" || recs[0].Check == nil || recs[0].Check.ProbTol == 0 {
		t.Fatalf("the fixture: %d records, %v", len(recs), err)
	}
	future := bytes.Replace(all, []byte(`"memprobe.decode/v1"`), []byte(`"memprobe.decode/v2"`), 1)
	for _, c := range []struct {
		in   []byte
		want string
	}{
		{future, `reading decode result d.json, record 0: unsupported schema: schema "memprobe.decode/v2", this build reads "memprobe.decode/v1"`},
		{[]byte(`{"schema": "memprobe.train/v3"}`), `(not a decode result: a job result of probe train or probe exec)`},
		{[]byte(`[]`), `reading decode result d.json: an empty array, no mode measured`},
		{[]byte(`{"schema": "memprobe.decode/v1", "decode": "batch", "device": "cpu", "tokens_per_sec": 5}`), `implausible decode record: shape V=0 C=0 T=0 B=0, 0 passes (no configuration?)`},
		{all[:len(all)/2], `reading decode result d.json: line `},
	} {
		_, err := DecodeDecode(c.in, "d.json")
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("got %v, want one line containing %q", err, c.want)
		}
	}
	// Pooled runs must say how many, and have a figure for each.
	var one []map[string]any
	if err := json.Unmarshal(all, &one); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		edit map[string]any
		want string
	}{
		{map[string]any{"runs": 1, "tokens_per_sec_runs": []float64{5}}, "implausible decode record: runs 1 (absent for one run, else at least 2)"},
		{map[string]any{"tokens_per_sec_runs": []float64{5, 6}}, "implausible decode record: 2 runs of tokens/s but no runs count"},
		{map[string]any{"runs": 3, "tokens_per_sec_runs": []float64{5, 6}}, "implausible decode record: 3 runs, 2 runs of tokens/s"},
		{map[string]any{"runs": 2, "tokens_per_sec_runs": []float64{5, 0}}, "implausible decode record: a run at 0 tokens/s"},
		{map[string]any{"runs": 2, "tokens_per_sec_runs": []float64{5, 6}, "device_busy_pct_runs": []float64{9}}, "implausible decode record: 2 runs, 1 runs of another figure"},
	} {
		rec := maps.Clone(one[3])
		maps.Copy(rec, c.edit)
		b, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeDecode(b, "d.json"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.edit, err, c.want)
		}
	}
	good := maps.Clone(one[3])
	maps.Copy(good, map[string]any{"runs": 2, "tokens_per_sec_runs": []float64{5, 6}, "device_busy_pct_runs": []float64{9, 10}})
	if b, _ := json.Marshal(good); !okDecode(b) {
		t.Errorf("a record of 2 runs does not read")
	}
	// A run report's reader says what an array is.
	if _, err := DecodeReport(all, "d.json"); err == nil || !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), "probe decode --decode all writes an array") {
		t.Errorf("DecodeReport on a decode array: %v", err)
	}
}

func okDecode(b []byte) bool {
	_, err := DecodeDecode(b, "d.json")
	return err == nil
}

// TestJSONErrorsInJSONWords: a file whose values do not fit, or that is
// JSON but not an object, is refused without Go's type names.
func TestJSONErrorsInJSONWords(t *testing.T) {
	for _, c := range []struct {
		in   string
		read func([]byte) error
		want string
	}{
		{"42", func(b []byte) error { _, err := DecodeReport(b, "n.json"); return err }, "reading report n.json: a JSON number, not a memprobe report"},
		{`"x"`, func(b []byte) error { _, err := DecodeResult(b, "s.json"); return err }, "reading result s.json: a JSON string, not a memprobe result"},
		{"[42]", func(b []byte) error { _, err := DecodeDecode(b, "a.json"); return err }, "reading decode result a.json: a JSON number, not a memprobe decode result"},
		{`{"schema": "` + ReportVersion + `", "runs": 3}`, func(b []byte) error { _, err := DecodeReport(b, "r.json"); return err }, "line 1: field runs: a JSON number where an array is wanted"},
		{`{"schema": "` + DecodeVersion + `", "runs": 1.5}`, func(b []byte) error { _, err := DecodeDecode(b, "d.json"); return err }, "line 1: field runs: the number 1.5 where an integer is wanted"},
	} {
		err := c.read([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "Go ") {
			t.Errorf("%s: %v, want %q and no Go type", c.in, err, c.want)
		}
	}
}
