package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
)

// TestResultsAsReports: probe report and probe diff read job results
// (probe train --json, probe exec --json) as one-run reports, and leave a
// process's training figures out instead of comparing zeros.
func TestResultsAsReports(t *testing.T) {
	const trainResult = "../../report/testdata/threads-P6.json"
	stdout, stderr, err := runProbe("diff", trainResult, trainResult)
	if err != nil {
		t.Fatalf("probe diff of two train results: %v\n%s", err, stderr)
	}
	for _, want := range []string{"threads-P6", "peak_rss_bytes", "tokens_per_sec", "go_heap_allocs_per_step"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("diff of train results lacks %q:\n%s", want, stdout)
		}
	}

	if _, err := os.Stat("/proc/self/smaps"); err != nil {
		t.Skip("no /proc: no process result to make")
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	proc := filepath.Join(t.TempDir(), "process.json")
	if _, stderr, err := runProbe("exec", "--json", proc, "--", sh, "-c", "exit 0"); err != nil {
		t.Fatalf("probe exec: %v\n%s", err, stderr)
	}
	stdout, stderr, err = runProbe("report", proc)
	if err != nil {
		t.Fatalf("probe report of a process result: %v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "process sh") || !strings.Contains(stdout, "RSS at its peak in named parts") {
		t.Errorf("report of a process result:\n%s", stdout)
	}
	if !strings.Contains(stdout, "process sh: at the peak walk") && !strings.Contains(stdout, "process sh: no RSS reconciliation (the process exited before a walk") {
		t.Errorf("report of a process result does not say when its parts were taken:\n%s", stdout)
	}
	if strings.Contains(stdout, "expected vs measured") {
		t.Errorf("report of a process result has a ledger table:\n%s", stdout)
	}
	stdout, stderr, err = runProbe("diff", proc, proc)
	if err != nil {
		t.Fatalf("probe diff of two process results: %v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "peak_rss_bytes") || !strings.Contains(stdout, "max_rss_bytes") {
		t.Errorf("diff of process results lacks the memory metrics:\n%s", stdout)
	}
	for _, absent := range []string{"tokens_per_sec", "go_heap_allocs_per_step", "ledger_total_bytes"} {
		if strings.Contains(stdout, absent) {
			t.Errorf("diff of process results compares %s, which a process does not measure:\n%s", absent, stdout)
		}
	}
}

// TestJSONErrorsPlain: a file that is JSON but not what a command reads
// is refused in one line naming it and saying what it is, in JSON's words,
// never Go's ("into Go value of type struct { Schema *string ... }").
func TestJSONErrorsPlain(t *testing.T) {
	dir := t.TempDir()
	file := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	num := file("n.json", "42\n")
	str := file("s.json", `"a report"`)
	runs := file("runs.json", `{"schema": "memprobe.report/v1",`+"\n"+`"runs": 5}`)
	steps := file("steps.json", `{"schema": "memprobe.train/v3", "steps": "many"}`)
	schemaNum := file("schema.json", `{"schema": 1}`)
	decNum := file("decnum.json", `[42]`)
	decField := file("decfield.json", `[{"schema": "memprobe.decode/v1", "tokens_per_sec": "fast"}]`)
	decObj := file("decobj.json", `{"schema": "memprobe.decode/v1", "config": {"model": {"batch": 1.5}}}`)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"report", num}, "reading report " + num + ": a JSON number, not a run report or job result"},
		{[]string{"export", num}, "reading report " + num + ": a JSON number, not a run report or job result"},
		{[]string{"diff", str, str}, "reading report " + str + ": a JSON string, not a run report or job result"},
		{[]string{"report", runs}, "reading report " + runs + ": line 2: field runs: a JSON number where an array is wanted"},
		{[]string{"diff", steps, steps}, "reading result " + steps + ": line 1: field steps: a JSON string where an integer is wanted"},
		{[]string{"report", schemaNum}, "reading report " + schemaNum + ": line 1: field schema: a JSON number where a string is wanted"},
		{[]string{"diff", decNum, decNum}, "reading report " + decNum + `: a JSON array of 1 elements, the first a JSON number: not a memprobe file (a run report or job result is an object; a decode result of probe decode an array of "memprobe.decode/v1" records)`},
		{[]string{"export", decField}, "reading decode result " + decField + ": line 1: field tokens_per_sec: a JSON string where a number is wanted"},
		{[]string{"diff", decObj, decObj}, "reading decode result " + decObj + ": line 1: field config.model.batch: the number 1.5 where an integer is wanted"},
	} {
		_, _, err := runProbe(c.args...)
		if err == nil || err.Error() != c.want {
			t.Errorf("%v:\n got %v\nwant %s", c.args, err, c.want)
		}
	}
	hdir := t.TempDir()
	copyFile(t, decField, filepath.Join(hdir, "d.json"))
	if _, _, err := runProbe("history", "--metric", "tokens_per_sec", hdir); err == nil || strings.Contains(err.Error(), "Go ") || !strings.Contains(err.Error(), "field tokens_per_sec: a JSON string where a number is wanted") {
		t.Errorf("history of a bad decode result: %v", err)
	}
}

// TestNotOurs: a pprof profile (probe exec --sites writes them beside
// the report) and a JSON array of something else are named for what they
// are, by their content whatever their names, not worded as a bad report
// ("invalid character '\x04'", "record 0: unsupported schema").
func TestNotOurs(t *testing.T) {
	dir := t.TempDir()
	var gz bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&gz, 0); err != nil {
		t.Fatal(err)
	}
	z, err := gzip.NewReader(bytes.NewReader(gz.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	file := func(name string, b []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	prof := file("sites-peak.json", gz.Bytes()) // named as a report: the content decides
	rawProf := file("heap.pb", raw)
	arr := file("big.json", []byte(`[{"a": 1}, {"b": 2}]`))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"report", prof}, "reading report " + prof + ": a pprof profile, not a run report or job result: read it with probe flame " + prof + ", probe pprof " + prof + " or go tool pprof " + prof},
		{[]string{"diff", rawProf, rawProf}, "reading report " + rawProf + ": a pprof profile"},
		{[]string{"export", prof}, "reading report " + prof + ": a pprof profile"},
		{[]string{"report", arr}, "reading report " + arr + `: a JSON array of 2 elements, the first an object with no "schema" field: not a memprobe file`},
		{[]string{"diff", arr, arr}, "reading report " + arr + ": a JSON array of 2 elements"},
		{[]string{"merge", arr, "--out", filepath.Join(dir, "m.json")}, "reading report " + arr + ": a JSON array of 2 elements"},
	} {
		_, _, err := runProbe(c.args...)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%v:\n got %v\nwant %s...", c.args, err, c.want)
		}
	}
	for _, b := range [][]byte{[]byte(`{"schema": "memprobe.report/v1"}`), []byte("\x00\x01\x02"), {}, []byte("hello, world")} {
		if isPprof(b) {
			t.Errorf("isPprof(%q) = true", b)
		}
	}
}
