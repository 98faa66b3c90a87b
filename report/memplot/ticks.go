package memplot

import (
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"

	"memprobe/internal/table"
)

// targetTicks is about how many intervals an axis gets: the step is the
// round step nearest (in ratio) to the span over this.
const targetTicks = 5

// ByteTicks labels an axis whose values are bytes at round binary steps
// (a power of two: 256 MiB, 1 GiB, 2 GiB), every label in the IEC unit of
// the largest one ("0", "0.5 GiB", "1 GiB"); gonum's default would write
// "2500.00".
type ByteTicks struct{}

// Ticks implements plot.Ticker.
func (ByteTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return nil
	}
	step := math.Exp2(math.Round(math.Log2((hi - lo) / targetTicks)))
	step = max(step, 1) // no fractions of a byte
	vals := steps(lo, hi, step)
	top := 0.0
	for _, v := range vals {
		top = max(top, math.Abs(v))
	}
	k := 0
	for top >= 1024 && k < len(iec)-1 {
		top /= 1024
		k++
	}
	unit := math.Pow(1024, float64(k))
	ticks := make([]plot.Tick, len(vals))
	for i, v := range vals {
		s := "0"
		if v != 0 {
			s = strconv.FormatFloat(v/unit, 'f', -1, 64) + " " + iec[k]
		}
		ticks[i] = plot.Tick{Value: v, Label: s}
	}
	return ticks
}

// ByteAxisMax is the top of a byte axis from 0 that holds top: the first
// of its ByteTicks at or above top, so that the highest bar or point has
// a labelled tick above it.
func ByteAxisMax(top float64) float64 {
	if !(top > 0) {
		return top
	}
	step := max(1, math.Exp2(math.Round(math.Log2(top/targetTicks))))
	return math.Ceil(top/step) * step
}

var iec = []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}

// CountTicks labels an axis of plain numbers (seconds, threads, tokens/s)
// at 1-2-5 steps (0.5, 1, 2, 5, 10, 20 …), with digit groups and only the
// decimals the step needs ("2,500", "0.2").
type CountTicks struct{}

// Ticks implements plot.Ticker.
func (CountTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return nil
	}
	raw := (hi - lo) / targetTicks
	exp := math.Floor(math.Log10(raw))
	step := 0.0
	for _, m := range []float64{1, 2, 5, 10} {
		s := m * math.Pow(10, exp)
		if step == 0 || math.Abs(math.Log(s/raw)) < math.Abs(math.Log(step/raw)) {
			step = s
		}
	}
	dec := max(0, -int(math.Floor(math.Log10(step)+1e-9)))
	vals := steps(lo, hi, step)
	ticks := make([]plot.Tick, len(vals))
	for i, v := range vals {
		ticks[i] = plot.Tick{Value: v, Label: table.GroupDigits(strconv.FormatFloat(v, 'f', dec, 64))}
	}
	return ticks
}

// steps are the multiples of step in [lo, hi], with a small allowance for
// rounding at both ends.
func steps(lo, hi, step float64) []float64 {
	eps := step * 1e-9
	var out []float64
	for k := math.Ceil((lo - eps) / step); k*step <= hi+eps; k++ {
		v := k * step
		if v == 0 {
			v = 0 // no "-0"
		}
		out = append(out, v)
	}
	return out
}

// Font is the typeface of every chart's text: Liberation Sans (gonum's
// default is its serif), the HTML page's font, so that the page draws the
// SVG's text in its own font at the widths gonum measured.
var Font = font.Font{Typeface: "Liberation", Variant: "Sans"}

// Style sets p's text in Font (title, axis labels, tick labels, legend),
// keeping each size. Call it after plot.New and before adding legend
// entries.
func Style(p *plot.Plot) {
	set := func(f *font.Font) {
		size := f.Size
		*f = Font
		f.Size = size
	}
	set(&p.Title.TextStyle.Font)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		set(&a.Label.TextStyle.Font)
		set(&a.Tick.Label.Font)
	}
	set(&p.Legend.TextStyle.Font)
}
