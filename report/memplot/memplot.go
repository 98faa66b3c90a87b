// Package memplot draws memory timelines (the sampler's RSS and VSZ
// points of a result, or of several runs of a report) on one chart with
// gonum.org/v1/plot, each series' peak marked. It renders what package
// schema reads; it never runs anything.
package memplot

import (
	"fmt"
	"image/color"
	"io"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"memprobe/internal/atomicfile"
	"memprobe/internal/table"
	"memprobe/schema"
)

// Metrics are the point fields a chart can draw, by name.
var Metrics = map[string]func(schema.SamplerPoint) uint64{
	"rss": func(p schema.SamplerPoint) uint64 { return p.RSSBytes },
	"vsz": func(p schema.SamplerPoint) uint64 { return p.VSZBytes },
}

// Series is one timeline: a run's name and its points.
type Series struct {
	Name   string
	Points []schema.SamplerPoint
}

// Chart is a plot and what it holds.
type Chart struct {
	Plot *plot.Plot
	// Lines is the number of lines drawn: one per series and metric with
	// points.
	Lines int
}

// New draws every series' metrics (names in Metrics) against time, in
// bytes at binary steps (ByteTicks), each line's peak marked and labelled. A series without points is
// an error naming it.
func New(title string, series []Series, metrics []string) (*Chart, error) {
	if len(series) == 0 {
		return nil, fmt.Errorf("nothing to plot")
	}
	for _, m := range metrics {
		if Metrics[m] == nil {
			return nil, fmt.Errorf("unknown metric %q (want rss or vsz)", m)
		}
	}
	p := plot.New()
	Style(p)
	p.Title.Text = title
	p.X.Label.Text = "time (s)"
	p.X.Tick.Marker = CountTicks{}
	p.Y.Label.Text = "memory"
	p.Y.Tick.Marker = ByteTicks{}
	p.Y.Min = 0
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	c := &Chart{Plot: p}
	top := 0.0
	for i, s := range series {
		if len(s.Points) == 0 {
			return nil, fmt.Errorf("series %s has no timeline points", s.Name)
		}
		for j, m := range metrics {
			get := Metrics[m]
			xy := make(plotter.XYs, len(s.Points))
			peak := 0
			for k, pt := range s.Points {
				xy[k].X = pt.TMs / 1000
				xy[k].Y = float64(get(pt))
				top = max(top, xy[k].Y)
				if get(pt) > get(s.Points[peak]) {
					peak = k
				}
			}
			line, err := plotter.NewLine(xy)
			if err != nil {
				return nil, fmt.Errorf("series %s %s: %w", s.Name, m, err)
			}
			col := plotutil.Color(i)
			line.Color = col
			line.Width = vg.Points(1.5)
			line.Dashes = plotutil.Dashes(j)
			p.Add(line)
			p.Legend.Add(s.Name+" "+strings.ToUpper(m), line)
			c.Lines++
			if err := markPeak(p, xy[peak], get(s.Points[peak]), col); err != nil {
				return nil, err
			}
		}
	}
	// Headroom above the highest peak for the legend, top left.
	p.Y.Max = top * (1.15 + 0.06*float64(c.Lines))
	return c, nil
}

// markPeak draws a ring at the peak and its value beside it.
func markPeak(p *plot.Plot, at plotter.XY, bytes uint64, col color.Color) error {
	sc, err := plotter.NewScatter(plotter.XYs{at})
	if err != nil {
		return err
	}
	sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(4), Shape: draw.RingGlyph{}}
	lb, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{at}, Labels: []string{"peak " + table.FormatBytes(float64(bytes))}})
	if err != nil {
		return err
	}
	for i := range lb.TextStyle {
		lb.TextStyle[i].Color = col
		lb.TextStyle[i].XAlign = draw.XRight
	}
	lb.Offset = vg.Point{X: -vg.Points(5), Y: vg.Points(4)}
	p.Add(sc, lb)
	return nil
}

// Save writes the chart to path, SVG or PNG by the extension (.svg,
// .png), 8 × 5 inches, atomically.
func (c *Chart) Save(path string) error {
	format := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))
	if format != "svg" && format != "png" {
		return fmt.Errorf("plot %s: want a .svg or .png file", path)
	}
	wt, err := c.Plot.WriterTo(8*vg.Inch, 5*vg.Inch, format)
	if err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return atomicfile.Write(path, func(w io.Writer) error {
		_, err := wt.WriteTo(w)
		return err
	})
}
