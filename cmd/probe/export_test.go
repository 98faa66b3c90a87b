package main

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"
)

// TestExport: --format bench writes the benchmark format (package report
// parses it record by record); another format is a usage error.
func TestExport(t *testing.T) {
	stdout, stderr, err := runProbe("export", "--format", "bench", reportFixture)
	if err != nil || stderr != "" {
		t.Fatalf("%v, stderr %q", err, stderr)
	}
	if !strings.Contains(stdout, "\nBenchmarkThreads/phase=P6/threads=7 1 ") || !strings.Contains(stdout, " peak-rss-B ") {
		t.Errorf("output:\n%s", stdout)
	}
	// Plain integers, as the help's example shows them: 66792428 ns/op,
	// not 6.6792428e+07.
	if strings.Contains(stdout, "e+") || !strings.Contains(stdout, " 66792428 ns/op ") {
		t.Errorf("output has exponents, or not the help's example:\n%s", stdout)
	}
	rd := benchfmt.NewReader(strings.NewReader(stdout), "export")
	n := 0
	for rd.Scan() {
		switch rec := rd.Result().(type) {
		case *benchfmt.SyntaxError:
			t.Errorf("benchfmt: %v", rec)
		case *benchfmt.Result:
			n++
		}
	}
	if rd.Err() != nil || n == 0 {
		t.Errorf("benchfmt read %d results: %v", n, rd.Err())
	}
	_, _, err = runProbe("export", "--format", "csv", reportFixture)
	var ue usageError
	if !errors.As(err, &ue) {
		t.Errorf("--format csv: got %v, want a usage error", err)
	}
}
