package main

import (
	"errors"
	"strings"
	"testing"
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
	_, _, err = runProbe("export", "--format", "csv", reportFixture)
	var ue usageError
	if !errors.As(err, &ue) {
		t.Errorf("--format csv: got %v, want a usage error", err)
	}
}
