package main

import (
	"os"
	"os/exec"
	"path/filepath"
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
