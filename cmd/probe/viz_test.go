//go:build viz

package main

import (
	"bytes"
	"compress/gzip"
	"errors"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"memprobe/instrument/sampler"
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
		if !strings.Contains(stderr, "(1 line)") {
			t.Errorf("plot: %q, want (1 line)", stderr)
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
	// Read as report, export and history read it (openFile): a result kept
	// gzip-compressed plots as the plain one does.
	gz := filepath.Join(dir, "r.json.gz")
	gzipFile(t, res, gz)
	if _, stderr, err := runProbe("plot", gz, "-o", filepath.Join(dir, "gz.svg"), "--metric", "rss"); err != nil || !strings.Contains(stderr, "(1 line)") {
		t.Errorf("plot of a compressed result: %v\n%s", err, stderr)
	}
	plotReport(t, dir, res)
}

// gzipFile writes src gzip-compressed to dst.
func gzipFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
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
		{[]string{"--runs", "threads-P6", "--outside", "--metric", "rss"}, "(1 line)"},
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

// TestPlotRefusals: probe plot refuses, before writing anything, an empty
// --metric, an -o that is its input (by default, FILE.svg of a FILE named
// .svg) or cannot be written; and says what a file it does not draw is (a
// decode result, a JSON number, another format) in one line without Go's
// types, in probe report's words (one reader, openFile). The chart that
// was there is kept.
func TestPlotRefusals(t *testing.T) {
	dir := t.TempDir()
	keep := filepath.Join(dir, "keep.svg")
	if err := os.WriteFile(keep, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(trainResult)
	if err != nil {
		t.Fatal(err)
	}
	res := filepath.Join(dir, "t.json")
	asSVG := filepath.Join(dir, "t.svg")
	for _, p := range []string{res, asSVG} {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"plot", res, "--metric", "", "-o", keep}, "--metric is empty: want rss, vsz or both"},
		{[]string{"plot", asSVG}, "-o " + asSVG + ": is also the input FILE " + asSVG},
		{[]string{"plot", asSVG, "-o", dir + "/./t.svg"}, "is also the input FILE " + asSVG},
		{[]string{"plot", res, "-o", filepath.Join(dir, "nodir", "x.svg")}, "-o " + filepath.Join(dir, "nodir", "x.svg") + ": directory " + filepath.Join(dir, "nodir") + ": no such file or directory"},
	} {
		_, _, err := runProbe(c.args...)
		var ue usageError
		if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want a usage error containing %q", c.args, err, c.want)
		}
	}
	if got, _ := os.ReadFile(keep); string(got) != "keep" {
		t.Errorf("keep.svg was replaced")
	}
	if got, _ := os.ReadFile(asSVG); string(got) != string(b) {
		t.Errorf("the input t.svg was replaced")
	}
	sub := filepath.Join(dir, "d.svg")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runProbe("plot", res, "-o", sub); err == nil || !strings.Contains(err.Error(), "-o "+sub+": is a directory") {
		t.Errorf("-o a directory: %v", err)
	}
	file := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	dec := decodeFile(t, "d.json", false, decodeModes, nil)
	num := file("n.json", "42")
	other := file("o.json", `{"schema": "memprobe.report/v1", "runs": 3}`)
	unknown := file("u.json", `{"x": 1}`)
	notJSON := file("bad.json", "{\n  nope")
	for _, c := range []struct {
		path, want string
	}{
		{dec, dec + " is a decode result of probe decode, which has no memory timeline: plot draws the memory timeline of a job result (probe train --json) or a run report (probe run)"},
		{num, "reading report " + num + ": a JSON number, not a run report or job result"},
		{other, "reading report " + other + ": line 1: field runs: a JSON number where an array is wanted"},
		{unknown, "reading report " + unknown + `: unsupported schema: no "schema" field`},
		{notJSON, "reading report " + notJSON + ": line 2: invalid character 'n' looking for beginning of object key string"},
	} {
		_, _, err := runProbe("plot", c.path, "-o", filepath.Join(dir, "out.svg"))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "Go ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("plot %s:\n got %v\nwant %s...", c.path, err, c.want)
			continue
		}
		// One reader (openFile): plot refuses a file in probe report's words.
		if c.path == dec {
			continue
		}
		if _, _, rerr := runProbe("report", c.path); rerr == nil || rerr.Error() != err.Error() {
			t.Errorf("plot %s: %v; probe report: %v; want the same refusal", c.path, err, rerr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out.svg")); err == nil {
		t.Error("a refused plot wrote its chart")
	}
}
