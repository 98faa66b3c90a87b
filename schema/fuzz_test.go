package schema

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// FuzzDecodeReport: the report reader never panics, whatever it is given,
// and what it accepts writes back to JSON it accepts again, unchanged.
// The seeds are the run report the report package's tables are tested on
// (a threads plan with a failed phase and a sweep, arena runs that did not
// run), a small report around this package's result fixture, and damaged
// or foreign files; plain `go test` runs them.
func FuzzDecodeReport(f *testing.F) {
	fixture, err := os.ReadFile("../report/testdata/run-report.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(fixture)
	f.Add(fixture[:len(fixture)/2])
	result, err := os.ReadFile("testdata/result.json")
	if err != nil {
		f.Fatal(err)
	}
	r, err := DecodeResult(result, "result.json")
	if err != nil {
		f.Fatal(err)
	}
	small, err := Marshal(&Report{
		Schema: ReportVersion, Environment: r.Environment, CommandLine: []string{"probe", "run"},
		StartTime: "2026-11-26T01:20:00Z", EndTime: "2026-11-26T01:21:00Z",
		Runs: []Run{{Name: "threads-P6", Plan: "threads", Phase: "P6", Config: r.Config, Status: StatusOK,
			Repetitions: []Result{*r}, Outside: []Outside{}, Summary: Summary{Metrics: []Metric{}, Warnings: []string{}},
			Expect: []Expectation{{Metric: "peak_rss_bytes", Versus: "previous", Delta: -1e6}},
			Sweep:  map[string]string{"threads": "7"}}},
		Warnings: []string{},
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(small)
	for _, s := range []string{
		``, `null`, `[]`, `{}`, `{"schema": null}`, `{"schema": 1}`,
		`{"schema": "memprobe.report/v1"}`,
		`{"schema": "memprobe.report/v1", "start_time": "2026-11-26T01:20:00Z", "end_time": "2026-11-26T01:21:00Z", "runs": [{"status": "ok"}]}`,
		`{"schema": "memprobe.report/v1", "start_time": "2026-11-26T01:20:00Z", "end_time": "2026-11-26T01:21:00Z", "runs": [{"status": "failed", "repetitions": [{"schema": "memprobe.train/v3"}]}]}`,
		`{"schema": "memprobe.train/v3"}`, `{"schema": "memprobe.report/v0"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rep, err := DecodeReport(b, "fuzz.json")
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.json") {
				t.Fatalf("error does not name the input: %v", err)
			}
			return
		}
		again, err := Marshal(rep)
		if err != nil {
			t.Fatalf("an accepted report does not write back: %v", err)
		}
		back, err := DecodeReport(again, "again.json")
		if err != nil {
			t.Fatalf("an accepted report, written back, is refused: %v", err)
		}
		if !reflect.DeepEqual(rep, back) {
			t.Fatal("an accepted report changed when written back and read again")
		}
	})
}

// FuzzDecodeResult: the result reader (probe train's JSON, what the
// runner reads back from each child and --resume from each report) never
// panics; a refusal names the input; what it accepts writes back to JSON
// it accepts again, unchanged. Seeds: this package's result fixture,
// truncated, an interrupted one, and foreign or future files
// (testdata/fuzz/FuzzDecodeResult holds more).
func FuzzDecodeResult(f *testing.F) {
	result, err := os.ReadFile("testdata/result.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(result)
	f.Add(result[:len(result)/3])
	r, err := DecodeResult(result, "result.json")
	if err != nil {
		f.Fatal(err)
	}
	r.Interrupted = true
	if b, err := Marshal(r); err == nil {
		f.Add(b)
	}
	for _, s := range []string{``, `{}`, `{"schema": "memprobe.train/v9"}`, `{"schema": "memprobe.report/v1"}`, `{"schema": "memprobe.train/v3", "steps": -1}`, "\x00\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		const name = "fuzz/result.json"
		r, err := DecodeResult(b, name)
		if err != nil {
			if !strings.Contains(err.Error(), name) {
				t.Fatalf("error does not name the input: %v", err)
			}
			return
		}
		again, err := Marshal(r)
		if err != nil {
			t.Fatalf("an accepted result does not write back: %v", err)
		}
		back, err := DecodeResult(again, name)
		if err != nil {
			t.Fatalf("an accepted result, written back, is refused: %v", err)
		}
		if !reflect.DeepEqual(r, back) {
			t.Fatal("an accepted result changed when written back and read again")
		}
	})
}

// FuzzDecodeDecode: the decode result reader (probe decode --json, read by
// probe report and probe diff) never panics; a refusal names the input;
// what it accepts writes back to JSON it accepts again, unchanged. Seeds:
// this package's decode fixture (an array of the four modes from the
// micro preset, checked against cpu), one record of it, truncated, and
// foreign or future files.
func FuzzDecodeDecode(f *testing.F) {
	all, err := os.ReadFile("testdata/decode.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(all)
	f.Add(all[:len(all)/3])
	recs, err := DecodeDecode(all, "decode.json")
	if err != nil {
		f.Fatal(err)
	}
	if b, err := Marshal(recs[3]); err == nil {
		f.Add(b)
	}
	for _, s := range []string{``, `[]`, `[{}]`, `{}`, `{"schema": "memprobe.decode/v9"}`, `{"schema": "memprobe.train/v3"}`, `[{"schema": "memprobe.decode/v1", "tokens_per_sec": -1}]`, "\x00\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		const name = "fuzz/decode.json"
		recs, err := DecodeDecode(b, name)
		if err != nil {
			if !strings.Contains(err.Error(), name) {
				t.Fatalf("error does not name the input: %v", err)
			}
			return
		}
		again, err := Marshal(recs)
		if err != nil {
			t.Fatalf("accepted records do not write back: %v", err)
		}
		back, err := DecodeDecode(again, name)
		if err != nil {
			t.Fatalf("accepted records, written back, are refused: %v", err)
		}
		if !reflect.DeepEqual(recs, back) {
			t.Fatal("accepted records changed when written back and read again")
		}
	})
}
