package main

import (
	"errors"
	"strings"
	"testing"
)

// TestDiffNothingInCommon: two inputs that share no configuration (a run
// report against a job result of another plan's phase) are an error
// naming both files and what each holds, not a table of "only in" lines
// and exit 0, which read as "no change".
func TestDiffNothingInCommon(t *testing.T) {
	const base, head = "../../report/testdata/run-report.json", "../../report/testdata/threads-P6.json"
	stdout, _, err := runProbe("diff", base, head)
	want := "diff: " + base + " and " + head + " have no configuration in common, so nothing was compared: " +
		base + " (a run report of probe run) holds threads/before threads=7, threads/P1 threads=7, threads/P2 threads=7 and 10 more; " +
		head + " (a job result of probe train or probe exec) holds threads/P6"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("diff of inputs with nothing in common:\n got %v\nwant %s...", err, want)
	}
	if errors.As(err, new(usageError)) {
		t.Errorf("a usage error (exit 2); the command line is fine, the files are not comparable (exit 1)")
	}
	if stdout != "" {
		t.Errorf("a table was written:\n%s", stdout)
	}
	if _, _, err := runProbe("diff", head, head); err != nil {
		t.Errorf("diff of a file with itself: %v", err)
	}
}
