package htmlreport

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"memprobe/internal/atomicfile"
	"memprobe/report"
)

// HistoryChart draws `probe history --chart`: the median of metric for
// each configuration (report.ConfigKey) of plan ("" for all) across the
// reports, oldest first (report.SortedHistory), one line per
// configuration; the x axis names each report by its commit (else its
// file). Bytes tick at binary steps. A configuration missing from a report
// (or that did not finish there) is a gap in its line.
func HistoryChart(entries []report.HistoryEntry, metric, plan string) (*plot.Plot, error) {
	es, keys, values, err := report.HistoryMedians(entries, metric, plan)
	if err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("history: no configuration of plan %q in %d reports", plan, len(es))
	}
	_, bytes := metricAxis(metric)
	p := newPlot(false, bytes)
	p.Title.Text = metric + " by report, oldest first"
	if plan != "" {
		p.Title.Text += ", plan " + plan
	}
	p.Y.Label.Text = metric
	p.Y.Min = 0
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	top, drawn := 0.0, 0
	for n, key := range keys {
		col := colour(n)
		// A line through the reports that have the configuration, each a ring.
		var xy plotter.XYs
		for i, v := range values[key] {
			if !math.IsNaN(v) {
				xy = append(xy, plotter.XY{X: float64(i), Y: v})
				top = max(top, v)
			}
		}
		if len(xy) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(xy)
		if err != nil {
			return nil, fmt.Errorf("history chart: %s: %w", key, err)
		}
		line.Color, line.Width = col, vg.Points(1.5)
		points.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(3), Shape: draw.RingGlyph{}}
		p.Add(line, points)
		p.Legend.Add(key, line, points)
		drawn++
	}
	if drawn == 0 {
		return nil, fmt.Errorf("history: no report has %s for a configuration of plan %q", metric, plan)
	}
	var names []string
	for _, e := range es {
		c := e.Commit()
		if c == "" || c == "+" {
			c = strings.TrimSuffix(e.Name, filepath.Ext(e.Name))
			c = c[:min(len(c), 12)]
		}
		names = append(names, c)
	}
	p.NominalX(names...)
	p.X.Label.Text = "commit (report)"
	p.Y.Max = top * (1.15 + 0.05*float64(drawn))
	return p, nil
}

// SaveHistoryChart writes HistoryChart to path, SVG or PNG by its
// extension, atomically.
func SaveHistoryChart(path string, entries []report.HistoryEntry, metric, plan string) error {
	format := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))
	if format != "svg" && format != "png" {
		return fmt.Errorf("history chart %s: want a .svg or .png file", path)
	}
	p, err := HistoryChart(entries, metric, plan)
	if err != nil {
		return err
	}
	wt, err := p.WriterTo(9*vg.Inch, 5*vg.Inch, format)
	if err != nil {
		return fmt.Errorf("history chart %s: %w", path, err)
	}
	return atomicfile.Write(path, func(w io.Writer) error {
		_, err := wt.WriteTo(w)
		return err
	})
}
