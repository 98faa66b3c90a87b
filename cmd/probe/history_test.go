package main

import (
	"os"
	"path/filepath"
	"testing"

	"memprobe/internal/golden"
)

// TestHistory: three reports in a directory, ordered by commit time, then
// start time: the base, its commit run again (no arrow), and the
// regressed commit (↑ at P6 on every sweep point).
func TestHistory(t *testing.T) {
	dir := t.TempDir()
	// File names against the order: history orders by time, not by name.
	for name, src := range map[string]string{"a-regressed.json": diffRegressed, "b-same.json": diffSame, "c-base.json": diffBase} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stdout, stderr, err := runProbe("history", "--plan", "threads", dir)
	if err != nil || stderr != "" {
		t.Fatalf("%v, stderr %q", err, stderr)
	}
	golden.Check(t, "history.golden", []byte(stdout))
	if _, _, err := runProbe("history", filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing directory: no error")
	}
}
