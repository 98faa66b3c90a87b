package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"memprobe/outside/sites/sitestest"
)

// TestDiffSites: two probe exec --sites results of builds of
// outside/sites/testdata/planted.c that differ in one site's allocation
// size (peak_site's blocks of 1 MiB against 1.5 MiB): probe diff names
// that site, in the alloc and peak profiles, and no other site.
func TestDiffSites(t *testing.T) {
	sitestest.Lib(t)
	dir := t.TempDir()
	var results []string
	for i, size := range []string{"1048576", "1572864"} {
		// One path for both builds: the diff matches the two runs by
		// their command.
		bin := filepath.Join(dir, "planted")
		src := filepath.Join("..", "..", "outside", "sites", "testdata", "planted.c")
		if out, err := exec.Command("gcc", "-O1", "-g", "-DPEAK_SIZE="+size, "-o", bin, src).CombinedOutput(); err != nil {
			t.Fatalf("gcc: %v\n%s", err, out)
		}
		js := filepath.Join(dir, "r"+size+".json")
		out := filepath.Join(dir, "out"+size)
		if _, stderr, err := runProbe("exec", "--sites", "--sites-rate", "1", "--out-dir", out, "--json", js, "--", bin); err != nil {
			t.Fatalf("exec %d: %v\n%s", i, err, stderr)
		}
		results = append(results, js)
	}
	stdout, stderr, err := runProbe("diff", "--metric", "process.sites.peak_in_use_bytes", results[0], results[1])
	if err != nil {
		t.Fatalf("diff: %v\n%s", err, stderr)
	}
	t.Log(stdout)
	var siteRows []string
	for _, line := range strings.Split(stdout, "\n") {
		f := strings.Fields(line)
		if len(f) > 2 && (f[0] == "alloc" || f[0] == "peak" || f[0] == "exit") {
			siteRows = append(siteRows, f[0]+" "+f[1])
		}
	}
	if strings.Join(siteRows, ",") != "alloc peak_site,peak peak_site" {
		t.Errorf("site rows %q, want peak_site in the alloc and peak profiles only\n%s", siteRows, stdout)
	}
	if !strings.Contains(stdout, "+50.0 %") {
		t.Errorf("want peak_site's change +50.0 %%:\n%s", stdout)
	}
	// The metric moves by the same 32 MiB (the leak's bytes are the
	// same on both sides).
	if !strings.Contains(stdout, "process.sites.peak_in_use_bytes") || strings.Contains(stdout, "only in") {
		t.Errorf("want the metric compared on both sides:\n%s", stdout)
	}
}
