package memplot

import (
	"bytes"
	"encoding/xml"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"memprobe/schema"
)

func timeline(peakAt int, scale uint64) []schema.SamplerPoint {
	var ps []schema.SamplerPoint
	for i := range 10 {
		v := uint64(10+i) << 20
		if i == peakAt {
			v = 40 << 20
		}
		ps = append(ps, schema.SamplerPoint{TMs: float64(i * 100), RSSBytes: v * scale, VSZBytes: 3 * v * scale})
	}
	return ps
}

// TestSave writes a chart of two runs and two metrics as SVG and PNG and
// checks each is a valid file of its kind with the four series.
func TestSave(t *testing.T) {
	series := []Series{{"threads-before", timeline(3, 2)}, {"threads-P6", timeline(6, 1)}}
	c, err := New("peak RSS", series, []string{"rss", "vsz"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Lines != 4 {
		t.Errorf("%d lines, want 4", c.Lines)
	}
	dir := t.TempDir()
	svg := filepath.Join(dir, "t.svg")
	if err := c.Save(svg); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(b))
	root := ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s is not valid XML: %v", svg, err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = e.Name.Local
			}
		}
	}
	if root != "svg" {
		t.Errorf("root element %q, want svg", root)
	}
	// gonum's SVG backend draws text as glyph paths: the series are
	// counted on the chart (c.Lines) rather than in the file.
	pngPath := filepath.Join(dir, "t.png")
	if err := c.Save(pngPath); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(pngPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s is not a PNG: %v", pngPath, err)
	}
	if b := img.Bounds(); b.Dx() < 100 || b.Dy() < 100 {
		t.Errorf("PNG is %v", b)
	}
	if err := c.Save(filepath.Join(dir, "t.pdf")); err == nil || !strings.Contains(err.Error(), ".svg or .png") {
		t.Errorf("a .pdf: %v", err)
	}
}

func TestNewErrors(t *testing.T) {
	for _, c := range []struct {
		series  []Series
		metrics []string
		want    string
	}{
		{nil, []string{"rss"}, "nothing to plot"},
		{[]Series{{"a", timeline(1, 1)}}, []string{"pss"}, `unknown metric "pss"`},
		{[]Series{{"empty", nil}}, []string{"rss"}, "series empty has no timeline points"},
	} {
		if _, err := New("t", c.series, c.metrics); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.metrics, err, c.want)
		}
	}
}
