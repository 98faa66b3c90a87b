//go:build viz

package main

import (
	"errors"
	"memprobe/schema"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportHTML: probe report --html writes the page beside printing the
// tables; an output path that cannot be written is a usage error before
// any work.
func TestReportHTML(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "report.html")
	stdout, stderr, err := runProbe("report", "../../report/testdata/run-report.json", "--html", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "plan threads (threads=7): phases") || !strings.Contains(stderr, "wrote "+out) {
		t.Errorf("stdout %q..., stderr %q", stdout[:min(len(stdout), 200)], stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{"<!DOCTYPE html>", `<figure class="chart" data-kind="reconcile">`, "<caption>plan threads (threads=7): phases</caption>", `id="environment"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	_, _, err = runProbe("report", "../../report/testdata/run-report.json", "--html", filepath.Join(dir, "missing", "r.html"))
	var ue usageError
	if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), "--html") {
		t.Errorf("--html into a missing directory: %v, want a usage error", err)
	}
}

// TestHistoryChart: probe history --chart draws SVG or PNG.
func TestHistoryChart(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{"a.json": diffRegressed, "b.json": diffSame, "c.json": diffBase} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"h.svg", "h.png"} {
		out := filepath.Join(t.TempDir(), name)
		if _, stderr, err := runProbe("history", "--plan", "threads", "--chart", out, dir); err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".svg") {
			if !strings.Contains(string(b), "<svg") || !strings.Contains(string(b), "threads/P6") {
				t.Errorf("%s: not a chart of threads/P6", name)
			}
		} else if !strings.HasPrefix(string(b), "\x89PNG") {
			t.Errorf("%s: not a PNG", name)
		}
	}
	// A history of decode results draws a line per mode.
	ddir := t.TempDir()
	for i, name := range []string{"a.json", "b.json"} {
		src := decodeFile(t, name, false, decodeModes, func(r *schema.DecodeRecord) { r.StartTime = "2026-11-26T0" + string(rune('1'+i)) + ":00:00Z" })
		b, _ := os.ReadFile(src)
		os.WriteFile(filepath.Join(ddir, name), b, 0o644)
	}
	out := filepath.Join(t.TempDir(), "d.svg")
	if _, stderr, err := runProbe("history", "--metric", "tokens_per_sec", "--chart", out, ddir); err != nil {
		t.Fatalf("decode history chart: %v\n%s", err, stderr)
	}
	if b, _ := os.ReadFile(out); !strings.Contains(string(b), "per-token-prealloc") {
		t.Errorf("the decode history chart has no line of per-token-prealloc")
	}
	_, _, err := runProbe("history", "--chart", "h.pdf", dir)
	var ue usageError
	if err == nil || !errors.As(err, &ue) {
		t.Errorf("--chart h.pdf: %v, want a usage error", err)
	}
}

// TestReportHTMLDecode: probe report --html of a decode result (one
// probe decode made) prints its tables as without --html and writes its
// page: the tables, the tokens/s chart and the chart of where a token's
// time goes, no device memory chart on cpu. An output path that cannot be
// written is a usage error before anything is printed or written, and
// --phases-md stays refused, the page unwritten.
func TestReportHTMLDecode(t *testing.T) {
	dir := t.TempDir()
	res := filepath.Join(dir, "decode.json")
	if _, stderr, err := runProbe("decode", "--preset", "micro", "--passes", "2", "--data", "synthetic:4KB", "--json", res); err != nil {
		t.Fatalf("probe decode: %v\n%s", err, stderr)
	}
	plain, _, err := runProbe("report", res)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "decode.html")
	stdout, stderr, err := runProbe("report", "--html", out, res)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if stdout != plain || !strings.Contains(stderr, "wrote "+out) {
		t.Errorf("with --html: stdout\n%s\nwant, as without it:\n%s\nstderr %q", stdout, plain, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{"<!DOCTYPE html>", "<title>probe report decode.json</title>", "<caption>decode on cpu: B=3 sequences x T=5 positions",
		`<figure class="chart" data-kind="tokens">`, `<figure class="chart" data-kind="token-time">`, ">per-token-prealloc</text>", `id="environment"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(page, `data-kind="device-memory"`) || strings.Contains(page, `id="flames"`) {
		t.Error("a cpu decode page has a device memory chart or a flame graph section")
	}

	missing := filepath.Join(dir, "missing", "d.html")
	stdout, _, err = runProbe("report", "--html", missing, res)
	var ue usageError
	if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), "--html") || stdout != "" {
		t.Errorf("--html into a missing directory: %v, stdout %q; want a usage error before any output", err, stdout)
	}
	page2 := filepath.Join(dir, "p.html")
	md := filepath.Join(dir, "phases.md")
	os.WriteFile(md, []byte("kept\n"), 0o644)
	_, _, err = runProbe("report", "--html", page2, "--phases-md", md, res)
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "is a decode result of probe decode") {
		t.Errorf("--phases-md with --html on a decode result: %v, want a usage error", err)
	}
	if _, serr := os.Stat(page2); !os.IsNotExist(serr) {
		t.Errorf("--phases-md refused, yet %s written", page2)
	}
	if b, _ := os.ReadFile(md); string(b) != "kept\n" {
		t.Errorf("--phases-md refused, yet %s rewritten", md)
	}
}

// TestReportHTMLNotInput: --html naming the report itself, or the
// --phases-md file, is a usage error and leaves both as they were.
func TestReportHTMLNotInput(t *testing.T) {
	dir := t.TempDir()
	rep := filepath.Join(dir, "r.json")
	b, err := os.ReadFile("../../report/testdata/run-report.json")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(rep, b, 0o644)
	md := filepath.Join(dir, "phases.md")
	os.WriteFile(md, []byte("kept\n"), 0o644)
	for _, args := range [][]string{{"report", rep, "--html", rep}, {"report", rep, "--html", md, "--phases-md", md}, {"report", rep, "--phases-md", rep}} {
		_, _, err := runProbe(args...)
		if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), "name") {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
	if got, _ := os.ReadFile(rep); string(got) != string(b) {
		t.Error("the report was changed")
	}
	if got, _ := os.ReadFile(md); string(got) != "kept\n" {
		t.Error("the phases file was changed")
	}
}
