package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"memprobe/internal/golden"
	"memprobe/report"
	"memprobe/schema"
	"memprobe/trainer/phase"
)

// reportFixture is the run report of package report's tests: the threads
// plan with a failed phase and a sweep, and two arena runs that did not run.
const reportFixture = "../../report/testdata/run-report.json"

// TestReport prints the fixture's tables as text and as markdown.
func TestReport(t *testing.T) {
	for _, c := range []struct {
		golden string
		args   []string
	}{
		{"report.golden", []string{"report", reportFixture}},
		{"report.markdown.golden", []string{"report", "--markdown", reportFixture}},
	} {
		stdout, stderr, err := runProbe(c.args...)
		if err != nil || stderr != "" {
			t.Fatalf("%v: %v, stderr %q", c.args, err, stderr)
		}
		golden.Check(t, c.golden, []byte(stdout))
	}
}

// TestReportPhasesMD: --phases-md rewrites the sections of the report's
// plans and keeps the rest (package report's golden file is the expected
// document); a missing marker is an error naming the plan and the file,
// and leaves the file as it was.
func TestReportPhasesMD(t *testing.T) {
	doc, err := os.ReadFile("../../report/testdata/phases-doc.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../report/testdata/phases-doc.md.golden")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "phases.md")
	if err := os.WriteFile(path, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := runProbe("report", reportFixture, "--phases-md", path)
	if err != nil {
		t.Fatal(err)
	}
	if printed, _, _ := runProbe("report", reportFixture); stdout != printed {
		t.Error("--phases-md changed what is printed")
	}
	if wantErr := "probe report: rewrote the sections of plan threads, arena in " + path + "\n"; stderr != wantErr {
		t.Errorf("stderr %q, want %q", stderr, wantErr)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, want) {
		t.Errorf("%s differs from report/testdata/phases-doc.md.golden:\n%s", path, got)
	}

	broken := bytes.Replace(doc, []byte(report.BeginMarker("arena")), nil, 1)
	if err := os.WriteFile(path, broken, 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = runProbe("report", reportFixture, "--phases-md", path)
	if err == nil || !strings.Contains(err.Error(), "--phases-md "+path+": plan arena: no marker") || strings.Contains(err.Error(), "\n") {
		t.Errorf("no arena marker: got %v, want one line naming the file and the plan", err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, broken) {
		t.Error("a failed --phases-md changed the file")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("a failed --phases-md left files behind: %v", entries)
	}
}

// TestReportErrors: a report of another version is a one-line error that
// says which version it found; a missing file names the file; a bad
// command line is a usage error.
func TestReportErrors(t *testing.T) {
	valid, err := os.ReadFile(reportFixture)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	v2 := filepath.Join(dir, "v2.json")
	os.WriteFile(v2, bytes.Replace(valid, []byte(schema.ReportVersion), []byte("memprobe.report/v2"), 1), 0o644)
	result := filepath.Join(dir, "result.json")
	os.WriteFile(result, []byte(`{"schema": "memprobe.train/v3"}`), 0o644)
	for _, c := range []struct {
		args  []string
		want  string
		usage bool
	}{
		{[]string{"report", v2}, `reading report ` + v2 + `: unsupported schema: schema "memprobe.report/v2", this build reads "memprobe.report/v1"`, false},
		{[]string{"report", result}, `implausible result: 0 steps`, false},
		{[]string{"report", filepath.Join(dir, "missing.json")}, "missing.json", false},
		{[]string{"report"}, "report: want one report file", true},
		{[]string{"report", v2, v2}, "report: want one report file", true},
		{[]string{"report", "--format", "csv", v2}, "unknown flag: --format", true},
	} {
		stdout, _, err := runProbe(c.args...)
		var ue usageError
		switch {
		case err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n"):
			t.Errorf("%v: got %v, want one line containing %q", c.args, err, c.want)
		case c.usage != errors.As(err, &ue):
			t.Errorf("%v: usage error %v, want %v", c.args, !c.usage, c.usage)
		case stdout != "":
			t.Errorf("%v: printed %q", c.args, stdout)
		}
	}
}

// TestPhasesDocMarkers: docs/phases.md has a section for every plan, so
// that `probe report --phases-md docs/phases.md` can fill it.
func TestPhasesDocMarkers(t *testing.T) {
	doc, err := os.ReadFile("../../docs/phases.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(doc), "\n")
	for _, p := range phase.Plans() {
		open := -1
		for i, l := range lines {
			if l == report.BeginMarker(p.Name) {
				open = i
				break
			}
		}
		if open < 0 {
			t.Errorf("docs/phases.md has no %q", report.BeginMarker(p.Name))
			continue
		}
		closed := false
		for _, l := range lines[open+1:] {
			if l == report.EndMarker {
				closed = true
				break
			}
			if strings.HasPrefix(l, "<!-- probe report") {
				break
			}
		}
		if !closed {
			t.Errorf("docs/phases.md: %q is not closed by %q", report.BeginMarker(p.Name), report.EndMarker)
		}
	}
}
