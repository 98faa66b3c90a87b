//go:build viz

package main

import (
	"errors"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"memprobe/probe/sampler"
	"memprobe/schema"
)

// TestPlot trains a short micro run and plots its timeline, then a report
// of two runs from inside and from outside.
func TestPlot(t *testing.T) {
	dir := t.TempDir()
	res := filepath.Join(dir, "r.json")
	if _, stderr, err := runProbe("train", "--preset", "micro", "--steps", "2", "--json", res); err != nil {
		t.Fatalf("train: %v\n%s", err, stderr)
	}
	for _, out := range []string{"t.svg", "t.png"} {
		out = filepath.Join(dir, out)
		stdout, stderr, err := runProbe("plot", res, "-o", out, "--metric", "rss")
		if err != nil {
			t.Fatalf("plot: %v\n%s%s", err, stdout, stderr)
		}
		if !strings.Contains(stderr, "(1 lines)") {
			t.Errorf("plot: %q, want one line", stderr)
		}
		if strings.HasSuffix(out, ".svg") {
			wellFormedSVG(t, out)
			continue
		}
		f, err := os.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := png.Decode(f); err != nil {
			t.Errorf("%s: %v", out, err)
		}
		f.Close()
	}
	plotReport(t, dir, res)
}

// plotReport makes a report of two runs from the result at res and plots
// them, from inside and from outside.
func plotReport(t *testing.T, dir, res string) {
	r, err := schema.ReadResult(res)
	if err != nil {
		t.Fatal(err)
	}
	out := []schema.Outside{{Status: schema.StatusOK, Timeline: []sampler.Point{{TMs: 0, RSSBytes: 1 << 20}, {TMs: 50, RSSBytes: 3 << 20}}}}
	rep := &schema.Report{StartTime: "2026-11-26T01:20:00Z", EndTime: "2026-11-26T01:21:00Z", Warnings: []string{},
		Runs: []schema.Run{
			{Name: "threads-before", Status: schema.StatusOK, Repetitions: []schema.Result{*r}, Outside: out},
			{Name: "threads-P6", Status: schema.StatusOK, Repetitions: []schema.Result{*r}, Outside: out},
			{Name: "threads-P1", Status: schema.StatusFailed, Repetitions: []schema.Result{}, Outside: []schema.Outside{}},
		}}
	path := filepath.Join(dir, "report.json")
	if err := schema.WriteReport(path, rep); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--runs", "threads-before,threads-P6"}, "(4 lines)"},
		{[]string{"--runs", "threads-P6", "--outside", "--metric", "rss"}, "(1 lines)"},
		{nil, "run threads-P1 has no repetition"},
		{[]string{"--runs", "threads-P9"}, `no run "threads-P9"`},
	} {
		args := append([]string{"plot", path, "-o", filepath.Join(dir, "rep.svg")}, c.args...)
		_, stderr, err := runProbe(args...)
		got := stderr
		if err != nil {
			got += err.Error()
		}
		if !strings.Contains(got, c.want) {
			t.Errorf("%v: %q, want %q", c.args, got, c.want)
		}
	}
}

func TestPlotPprofUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"plot", "r.json", "--metric", "pss"}, `--metric "pss": want rss or vsz`},
		{[]string{"plot", "r.json", "-o", "r.pdf"}, "want a .svg or .png file"},
		{[]string{"pprof"}, "want at least one profile"},
		{[]string{"pprof", "--http", "0.0.0.0:8080", "x.pprof"}, "not a loopback address"},
		{[]string{"pprof", "--http", ":8080", "x.pprof"}, "not a loopback address"},
		{[]string{"pprof", "--http", "example.com:80", "x.pprof"}, "not a loopback address"},
		{[]string{"pprof", "--http", "127.0.0.1", "x.pprof"}, "want host:port"},
		{[]string{"pprof", "--http", "127.0.0.1:http", "x.pprof"}, "not a number"},
	} {
		_, _, err := runProbe(c.args...)
		var ue usageError
		if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want a usage error containing %q", c.args, err, c.want)
		}
	}
}

// TestCheckHTTPAddr: loopback passes; anything else needs allowRemote.
func TestCheckHTTPAddr(t *testing.T) {
	for _, c := range []struct {
		addr   string
		remote bool
		ok     bool
	}{
		{"127.0.0.1:0", false, true},
		{"127.1.2.3:6060", false, true},
		{"[::1]:6060", false, true},
		{"localhost:6060", false, true},
		{"0.0.0.0:6060", false, false},
		{"[::]:6060", false, false},
		{"192.168.1.2:6060", false, false},
		{":6060", false, false},
		{"0.0.0.0:6060", true, true},
		{":6060", true, true},
		{"127.0.0.1:70000", false, false},
		{"127.0.0.1:70000", true, false},
		{"127.0.0.1", true, false},
	} {
		if err := checkHTTPAddr(c.addr, c.remote); (err == nil) != c.ok {
			t.Errorf("checkHTTPAddr(%q, %v) = %v, want ok %v", c.addr, c.remote, err, c.ok)
		}
	}
}

// TestPprofBadProfile: a local file that is not a profile is refused in
// one line naming it, before the UI starts; a missing one too.
func TestPprofBadProfile(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.pprof")
	if err := os.WriteFile(bad, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{bad, "pprof: " + bad + ": not a profile pprof reads: "},
		{bad + ".missing", "no such file or directory"},
	} {
		_, _, err := runProbe("pprof", "--http", "127.0.0.1:0", c.path)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q", c.path, err, c.want)
		}
	}
}
