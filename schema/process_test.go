package schema

import (
	"reflect"
	"strings"
	"testing"
)

// TestProcessResult: a process result (probe exec, probe attach) has no
// steps or configuration, and the reader accepts it when it has a process
// view, an environment and a start time; it writes back unchanged.
func TestProcessResult(t *testing.T) {
	code := 0
	r := &Result{
		Schema: ResultVersion, Kind: KindProcess, Environment: Environment{GoVersion: "go1.26.8"},
		StartTime: "2026-11-26T03:00:00Z", CommandLine: []string{"probe", "exec", "--", "./app"},
		Ledger: []LedgerRow{}, Warnings: []string{}, PeakRSSBytes: 1 << 20,
		Process: &Process{Mode: ModeExec, Command: []string{"./app"}, PID: 42, Exited: true, ExitCode: &code,
			Children: []Child{}, Diagnosis: []Finding{{Topic: "peak", Text: "peak RSS 1 MiB", Metric: "peak_agreement_pct"}}, Files: []string{}},
	}
	b, err := Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeResult(b, "process.json")
	if err != nil {
		t.Fatalf("a process result is refused: %v", err)
	}
	if !reflect.DeepEqual(r, back) {
		t.Errorf("a process result changed when written and read back:\n%+v\n%+v", r, back)
	}
	for _, c := range []struct{ json, want string }{
		{`{"schema": "memprobe.train/v3", "kind": "process", "environment": {"go_version": "go1.26.8"}, "start_time": "2026-11-26T03:00:00Z"}`, `kind "process" without a "process" view`},
		{`{"schema": "memprobe.train/v3", "kind": "process", "process": {"pid": 0}, "environment": {"go_version": "go1.26.8"}, "start_time": "2026-11-26T03:00:00Z"}`, "process pid 0"},
		{`{"schema": "memprobe.train/v3", "kind": "process", "process": {"pid": 7}, "start_time": "2026-11-26T03:00:00Z"}`, "no go_version"},
		{`{"schema": "memprobe.train/v3", "kind": "process", "process": {"pid": 7}, "environment": {"go_version": "go1.26.8"}, "start_time": "now"}`, "not RFC 3339"},
		{`{"schema": "memprobe.train/v3", "process": {"pid": 7}, "environment": {"go_version": "go1.26.8"}, "start_time": "2026-11-26T03:00:00Z"}`, "0 steps"},
	} {
		_, err := DecodeResult([]byte(c.json), "p.json")
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line containing %q", c.json, err, c.want)
		}
	}
}
