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
	if n < 3 || !strings.Contains(text, "alloc_space flame graph") || !strings.Contains(text, "memprobe/probe/job.Run") {
		t.Errorf("%s: %d frames, want a graph of alloc_space through job.Run", svg, n)
	}
	diff := filepath.Join(dir, "diff.svg")
	if _, stderr, err := runProbe("flame", "--base", heap, heap, "-o", diff); err != nil {
		t.Fatalf("flame --base: %v\n%s", err, stderr)
	}
	if _, text := wellFormedSVG(t, diff); !strings.Contains(text, "differential flame graph") || !strings.Contains(text, "change 0 B") {
		t.Errorf("%s is not a differential graph with no change", diff)
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
	} {
		_, _, err := runProbe(c.args...)
		var ue usageError
		if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want a usage error containing %q", c.args, err, c.want)
		}
	}
}
