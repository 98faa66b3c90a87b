package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// wellFormedSVG parses an SVG as XML and counts its flame-graph frames.
func wellFormedSVG(t *testing.T, path string) (frames int, text string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(b))
	var sb strings.Builder
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", path, err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			for _, a := range e.Attr {
				if e.Name.Local == "g" && a.Name.Local == "class" && a.Value == "f" {
					frames++
				}
			}
		case xml.CharData:
			sb.Write(e)
		}
	}
	return frames, sb.String()
}

// TestFlameRealProfile draws the heap profile of a short micro run, then
// the change from it to itself, and plots the run's timeline.
func TestFlameRealProfile(t *testing.T) {
	dir := t.TempDir()
	heap := filepath.Join(dir, "heap.pprof")
	res := filepath.Join(dir, "r.json")
	if _, stderr, err := runProbe("train", "--preset", "micro", "--steps", "2", "--memprofile", heap, "--json", res); err != nil {
		t.Fatalf("train: %v\n%s", err, stderr)
	}
	svg := filepath.Join(dir, "heap.svg")
	if _, stderr, err := runProbe("flame", heap, "-o", svg, "--sample", "alloc_space"); err != nil {
		t.Fatalf("flame: %v\n%s", err, stderr)
	}
	n, text := wellFormedSVG(t, svg)
	if n < 3 || !strings.Contains(text, "alloc_space flame graph") || !strings.Contains(text, "memprobe/run/job.Run") {
		t.Errorf("%s: %d frames, want a graph of alloc_space through job.Run", svg, n)
	}
	diff := filepath.Join(dir, "diff.svg")
	if _, stderr, err := runProbe("flame", "--base", heap, heap, "-o", diff); err != nil {
		t.Fatalf("flame --base: %v\n%s", err, stderr)
	}
	if _, text := wellFormedSVG(t, diff); !strings.Contains(text, "differential flame graph") || !strings.Contains(text, "change 0 B") {
		t.Errorf("%s is not a differential graph with no change", diff)
	}
	top, stderr, err := runProbe("flame", heap, "--sample", "alloc_space", "--top", "5")
	if err != nil {
		t.Fatalf("flame --top: %v\n%s", err, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(top, "\n"), "\n")
	for len(lines) > 7 && strings.HasSuffix(lines[len(lines)-1], "left out") { // a note of skipped samples
		lines = lines[:len(lines)-1]
	}
	if len(lines) != 7 || !strings.HasPrefix(lines[0], "alloc_space: 5 of ") ||
		strings.Join(strings.Fields(lines[1]), " ") != "flat flat (%) sum (%) cum cum (%) function" {
		t.Errorf("flame --top 5: want a title, a header and 5 functions:\n%s", top)
	}
	if !strings.Contains(top, " B ") && !strings.Contains(top, "iB ") {
		t.Errorf("flame --top 5: want bytes in IEC units:\n%s", top)
	}
	if _, err := os.Stat(heap + ".svg"); !os.IsNotExist(err) {
		t.Errorf("flame --top drew %s.svg: %v", heap, err)
	}
	if _, _, err := runProbe("flame", heap, "--sample", "cpu", "-o", svg); err == nil || !strings.Contains(err.Error(), "no sample type \"cpu\"") {
		t.Errorf("--sample cpu on a heap profile: %v", err)
	}
}

func TestFlameUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"flame"}, "want one profile"},
		{[]string{"flame", "x.pprof", "--sample", "rss"}, `--sample "rss": want one of inuse_space`},
		{[]string{"flame", "x.pprof", "--top", "-1"}, "--top -1: want a number of functions"},
		{[]string{"flame", "x.pprof", "--top", "3", "-o", "x.svg"}, "--top prints text: it takes no -o or --base"},
		{[]string{"flame", "x.pprof", "--top", "3", "--base", "y.pprof"}, "--top prints text"},
	} {
		_, _, err := runProbe(c.args...)
		var ue usageError
		if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want a usage error containing %q", c.args, err, c.want)
		}
	}
}

// writeHeapProfile writes a small heap profile of one stack to path.
func writeHeapProfile(t *testing.T, path string) []byte {
	t.Helper()
	fn := &profile.Function{ID: 1, Name: "main.alloc", SystemName: "main.alloc", Filename: "main.go"}
	loc := &profile.Location{ID: 1, Address: 0x1000, Line: []profile.Line{{Function: fn, Line: 10}}}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"},
			{Type: "inuse_objects", Unit: "count"}, {Type: "inuse_space", Unit: "bytes"}},
		Sample:   []*profile.Sample{{Location: []*profile.Location{loc}, Value: []int64{1, 1024, 1, 1024}}},
		Location: []*profile.Location{loc},
		Function: []*profile.Function{fn},
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestFlameTopSmall: --top on a profile of one stack prints its one
// function with all of the value, flat and cum.
func TestFlameTopSmall(t *testing.T) {
	mem := filepath.Join(t.TempDir(), "mem.pprof")
	writeHeapProfile(t, mem)
	out, stderr, err := runProbe("flame", mem, "--top", "10")
	if err != nil {
		t.Fatalf("flame --top: %v\n%s", err, stderr)
	}
	want := "inuse_space: 1 of 1 functions, flat 1 KiB of 1 KiB total (100.0 %)\n" +
		" flat  flat (%)  sum (%)    cum  cum (%)  function\n" +
		"1 KiB    100.00   100.00  1 KiB   100.00  main.alloc\n"
	if out != want {
		t.Errorf("flame --top:\n%s\nwant\n%s", out, want)
	}
}

// TestFlameOutputChecked: -o that names the profile or --base (by any
// spelling) is refused before anything is written, and so is one that
// cannot be written (a directory, a missing directory), naming -o: usage
// errors (exit 2), the profiles untouched.
func TestFlameOutputChecked(t *testing.T) {
	dir := t.TempDir()
	mem := filepath.Join(dir, "mem.pprof")
	base := filepath.Join(dir, "base.pprof")
	want := writeHeapProfile(t, mem)
	writeHeapProfile(t, base)
	if _, stderr, err := runProbe("flame", mem, "-o", filepath.Join(dir, "ok.svg")); err != nil {
		t.Fatalf("the test's profile does not draw: %v\n%s", err, stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"flame", mem, "-o", mem}, "-o " + mem + ": is also the input PROFILE " + mem},
		{[]string{"flame", mem, "-o", dir + "/./mem.pprof"}, "is also the input PROFILE " + mem},
		{[]string{"flame", mem, "--base", base, "-o", base}, "-o " + base + ": is also the input --base " + base},
		{[]string{"flame", mem, "-o", dir}, "-o " + dir + ": is a directory"},
		{[]string{"flame", mem, "-o", filepath.Join(dir, "nodir", "x.svg")}, "-o " + filepath.Join(dir, "nodir", "x.svg") + ": directory " + filepath.Join(dir, "nodir") + ": no such file or directory"},
	} {
		_, _, err := runProbe(c.args...)
		var ue usageError
		if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want a usage error containing %q", c.args, err, c.want)
		}
	}
	for _, p := range []string{mem, base} {
		if b, err := os.ReadFile(p); err != nil || !bytes.Equal(b, want) {
			t.Errorf("%s changed: %v", p, err)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 3 {
		t.Errorf("files left in %s: %v", dir, ents)
	}
}
