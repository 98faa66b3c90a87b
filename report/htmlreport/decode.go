package htmlreport

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"

	"memprobe/internal/atomicfile"
	"memprobe/internal/table"
	"memprobe/report"
	"memprobe/schema"
)

// A decode result (`probe decode --json`, one record per decode mode) gets
// the run report's page: the provenance line heads it, one section holds
// report's decode tables (report.Blocks, so the page shows what
// `probe report` prints) and the charts, and the first record's
// environment and configuration close it. probe decode writes no
// profiles, so the page has no flame graphs. Every string from the file
// (a mode, the device, a GPU, the command line) goes through html/template
// on the page or vgsvg's escaping in a chart.

// decodeSectionID is the anchor of the decode section.
const decodeSectionID = "decode"

// BuildDecode computes the page of decode records without writing it.
// Options.ReportDir, OutDir and Flames do not apply (no profiles).
func BuildDecode(recs []schema.DecodeRecord, o Options) (*Page, error) {
	if len(recs) == 0 {
		return nil, errors.New("decode page: no measurements")
	}
	bs, err := report.Blocks(report.DecodeRows(recs))
	if err != nil {
		return nil, err
	}
	blocks, err := pageBlocks(bs)
	if err != nil {
		return nil, err
	}
	pg := &Page{Title: o.Title, NoFlames: true}
	if pg.Title == "" {
		pg.Title = "probe report"
	}
	// Blocks opens with the provenance paragraph: the page's head.
	pg.Head, blocks = blocks[:1], blocks[1:]
	sec := PlanSection{Name: "decode modes", ID: decodeSectionID, Blocks: blocks}
	add := func(c *Chart, note string) {
		if c != nil {
			sec.Charts = append(sec.Charts, c)
		}
		if note != "" {
			sec.Notes = append(sec.Notes, note)
		}
	}
	add(tokensChart(recs))
	add(tokenTimeChart(recs))
	add(deviceMemoryChart(recs))
	pg.Plans = []PlanSection{sec}
	pg.Environment = decodeEnvironment(recs[0])
	return pg, nil
}

// WriteDecode renders the page of decode records to w.
func WriteDecode(w io.Writer, recs []schema.DecodeRecord, o Options) error {
	pg, err := BuildDecode(recs, o)
	if err != nil {
		return err
	}
	return renderPage(w, pg)
}

// WriteDecodeFile renders the page of decode records into path,
// atomically: a failure leaves what was there.
func WriteDecodeFile(path string, recs []schema.DecodeRecord, o Options) error {
	var b bytes.Buffer
	if err := WriteDecode(&b, recs, o); err != nil {
		return err
	}
	return atomicfile.WriteBytes(path, b.Bytes())
}

// decodeEnvironment is the record's environment (as a run report's) with
// what the tables' titles do not say about how it was run: the command
// line and the rest of the configuration, by JSON name, in name order.
func decodeEnvironment(r schema.DecodeRecord) [][2]string {
	out := environment(r.Environment)
	c := r.Config
	for _, kv := range [][2]string{
		{"command_line", strings.Join(r.CommandLine, " ")},
		{"config.preset", c.Preset},
		{"config.checkpoint", c.Checkpoint},
		{"config.seed", strconv.FormatUint(c.Seed, 10)},
		{"config.data", c.Data},
		{"config.data_seed", strconv.FormatUint(c.DataSeed, 10)},
		{"config.gemm", c.GEMM},
		{"config.gemm_used", c.GEMMUsed},
		{"config.check", c.Check},
	} {
		if kv[1] != "" {
			out = append(out, kv)
		}
	}
	slices.SortFunc(out, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	return out
}

// spreadColour draws the runs' error bars: dark on the bars' blue, and
// nothing else on the page is drawn in it (the tests find the bars by it).
var spreadColour = color.NRGBA{0x33, 0x33, 0x33, 0xff}

// modes are the records' modes, in their order: the charts' categories.
func modes(recs []schema.DecodeRecord) []string {
	var s []string
	for _, r := range recs {
		s = append(s, r.Decode)
	}
	return s
}

// floorLog is a log scale on which a value at or below the axis' minimum
// maps to the axis' bottom: a bar starts at 0, where plot.LogScale panics;
// here it starts at the axis' floor.
type floorLog struct{}

func (floorLog) Normalize(lo, hi, x float64) float64 {
	return plot.LogScale{}.Normalize(lo, hi, max(x, lo))
}

// logTicks are plot.LogTicks with the decades written as the tables write
// a rate (1,000, not 1e+03).
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.LogTicks{}.Ticks(lo, hi)
	for i := range ticks {
		switch v := ticks[i].Value; {
		case ticks[i].Label == "":
		case v < 1:
			ticks[i].Label = strconv.FormatFloat(v, 'g', -1, 64)
		default:
			ticks[i].Label = rate(v)
		}
	}
	return ticks
}

// rate writes v rounded to a whole number, its thousands grouped.
func rate(v float64) string {
	s := strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// barLabels writes texts above the points xys (the tops of bars), shifted
// by dx; small, so that a label per bar fits.
func barLabels(xys plotter.XYs, texts []string, dx vg.Length) (*plotter.Labels, error) {
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: texts})
	if err != nil {
		return nil, err
	}
	for i := range l.TextStyle {
		l.TextStyle[i].Font = font.From(plotter.DefaultFont, vg.Points(8))
		l.TextStyle[i].XAlign, l.TextStyle[i].YAlign = text.XCenter, text.YBottom
	}
	l.Offset = vg.Point{X: dx, Y: vg.Points(2)}
	return l, nil
}

// tokensChart draws each mode's tokens/s as a bar, on a log scale: batch
// decodes tens to hundreds of times faster than the per-token modes on a
// GPU (note 003), and on a linear axis the per-token bars, whose
// differences are what the modes were written to show, would be a few
// pixels tall; on a log axis equal ratios are equal heights, so they stay
// readable beside batch. A bar on a log axis starts at the axis' floor,
// so its length is not proportional to its figure: each bar is labelled
// with its figure, and the caption says so. Where a record pools runs
// (probe decode --runs N), an error bar spans its slowest to its fastest
// run, each its own process; the caption says which bars are one process.
func tokensChart(recs []schema.DecodeRecord) (*Chart, string) {
	const fail = "no tokens/s chart: "
	vals := make(plotter.Values, len(recs))
	tops := make(plotter.XYs, len(recs))
	texts := make([]string, len(recs))
	var spread plotter.XYs
	var errs plotter.YErrors
	var pooled, single []string
	lo, hi := math.Inf(1), 0.0
	for i, r := range recs {
		v := r.TokensPerSec
		vals[i], texts[i] = v, rate(v)
		tops[i] = plotter.XY{X: float64(i), Y: v}
		lo, hi = min(lo, v), max(hi, v)
		if len(r.TokensPerSecRuns) < 2 {
			single = append(single, r.Decode)
			continue
		}
		slow, fast := slices.Min(r.TokensPerSecRuns), slices.Max(r.TokensPerSecRuns)
		spread = append(spread, tops[i])
		errs = append(errs, struct{ Low, High float64 }{max(0, v-slow), max(0, fast-v)})
		tops[i].Y = max(v, fast)
		lo, hi = min(lo, slow), max(hi, fast)
		pooled = append(pooled, fmt.Sprintf("%s (%d runs)", r.Decode, len(r.TokensPerSecRuns)))
	}
	pl := newPlot(false, false)
	tps, _ := metricAxis("tokens_per_sec")
	title := "decode on " + recs[0].Device + ": " + tps + " by mode (log scale)"
	pl.Title.Text = title
	pl.Y.Label.Text = tps
	pl.Y.Scale, pl.Y.Tick.Marker = floorLog{}, logTicks{}
	pl.Add(plotter.NewGrid())
	b, err := plotter.NewBarChart(vals, vg.Points(40))
	if err != nil {
		return nil, fail + err.Error()
	}
	b.Color, b.LineStyle.Width = colour(0), 0
	pl.Add(b)
	if len(spread) > 0 {
		eb, err := plotter.NewYErrorBars(struct {
			plotter.XYs
			plotter.YErrors
		}{spread, errs})
		if err != nil {
			return nil, fail + err.Error()
		}
		eb.LineStyle.Color, eb.LineStyle.Width, eb.CapWidth = spreadColour, vg.Points(1.2), vg.Points(12)
		pl.Add(eb)
	}
	labels, err := barLabels(tops, texts, 0)
	if err != nil {
		return nil, fail + err.Error()
	}
	pl.Add(labels)
	pl.NominalX(modes(recs)...)
	pl.X.Min, pl.X.Max = -0.5, float64(len(recs))-0.5
	// The floor a decade or more below the slowest figure, so that the
	// slowest bar has a height; room above the fastest for its label.
	pl.Y.Min = math.Pow10(int(math.Floor(math.Log10(lo / 2))))
	pl.Y.Max = hi * 3
	svg, err := renderSVG(pl, 8*vg.Inch, 4*vg.Inch)
	if err != nil {
		return nil, fail + err.Error()
	}
	caption := "Tokens decoded per second by each mode, on a log scale so that the per-token modes stay readable beside batch: a bar's height is not proportional to its figure, which labels it."
	switch {
	case len(single) == 0:
		caption += " Each bar is the median of its mode's runs, each its own process; the error bar spans the slowest to the fastest run: " + strings.Join(pooled, ", ") + "."
	case len(pooled) == 0:
		caption += " The figure is one process's (all its timed passes' tokens over their time), so no error bar: its passes share a heap and a moment on the machine; probe decode --runs N measures N processes, whose spread the bars then show."
	default:
		caption += " Where a mode pools runs, its bar is their median and its error bar spans the slowest to the fastest run, each its own process: " + strings.Join(pooled, ", ") +
			"; " + strings.Join(single, ", ") + ": one process, no error bar."
	}
	return &Chart{Kind: "tokens", Title: title, Caption: caption, SVG: svg}, ""
}

// tokenTimeChart draws where a token's time goes, per mode, in µs: the
// wall time per token (1e6 / tokens/s), the host's wait per token (blocked
// in the device's waits) and the device's busy time per token, side by
// side. The scale is linear, unlike tokensChart's: the chart is read
// within a mode, the wait and the busy time as shares of the wall time,
// which a log axis would distort; each bar is labelled, so batch's short
// bars still read. A mode whose device could not time its work has no
// busy bar (never a 0) and the note says so.
func tokenTimeChart(recs []schema.DecodeRecord) (*Chart, string) {
	const fail = "no chart of where a token's time goes: "
	type series struct {
		name string
		us   func(r schema.DecodeRecord) (float64, bool)
	}
	all := []series{
		{"wall time per token", func(r schema.DecodeRecord) (float64, bool) { return 1e6 / r.TokensPerSec, true }},
		{"host wait per token", func(r schema.DecodeRecord) (float64, bool) { return r.HostWaitNsPerToken / 1e3, true }},
		{"device busy per token", func(r schema.DecodeRecord) (float64, bool) {
			if r.DeviceBusyNsPerToken == nil {
				return 0, false
			}
			return *r.DeviceBusyNsPerToken / 1e3, true
		}},
	}
	var untimed []string
	for _, r := range recs {
		if r.DeviceBusyNsPerToken == nil {
			untimed = append(untimed, r.Decode)
		}
	}
	if len(untimed) == len(recs) {
		all = all[:2]
	}
	pl := newPlot(false, false)
	title := "decode on " + recs[0].Device + ": where a token's time goes (µs)"
	pl.Title.Text = title
	pl.Y.Label.Text = "µs per token"
	pl.Y.Min = 0
	pl.Legend.Top = true
	pl.Add(plotter.NewGrid())
	bw := vg.Points(20)
	top := 0.0
	for k, s := range all {
		off := vg.Length(float64(k)-float64(len(all)-1)/2) * bw
		col := colour(k)
		var xys plotter.XYs
		var texts []string
		var legend *plotter.BarChart
		for i, r := range recs {
			v, ok := s.us(r)
			if !ok {
				continue
			}
			// A bar per mode, so that an untimed mode's is absent.
			b, err := plotter.NewBarChart(plotter.Values{max(0, v)}, bw)
			if err != nil {
				return nil, fail + err.Error()
			}
			b.XMin, b.Offset = float64(i), off
			b.Color, b.LineStyle.Width = col, 0
			pl.Add(b)
			legend = b
			xys = append(xys, plotter.XY{X: float64(i), Y: max(0, v)})
			texts = append(texts, strconv.FormatFloat(v, 'f', 1, 64))
			top = max(top, v)
		}
		if legend == nil {
			continue
		}
		pl.Legend.Add(s.name, legend)
		labels, err := barLabels(xys, texts, off)
		if err != nil {
			return nil, fail + err.Error()
		}
		pl.Add(labels)
	}
	pl.NominalX(modes(recs)...)
	pl.X.Min, pl.X.Max = -0.5, float64(len(recs))-0.5
	pl.Y.Max = top * 1.35
	svg, err := renderSVG(pl, 8*vg.Inch, 4*vg.Inch)
	if err != nil {
		return nil, fail + err.Error()
	}
	caption := "Where a decoded token's time goes, per mode, in µs on a linear scale: the wall time per token (1e6 / tokens/s), the part of it the host spent blocked in the device's waits, and the time the device was at work per token (cpu: its stream thread running commands; cuda: CUDA events), which overlaps the host's own work."
	if slices.ContainsFunc(recs, func(r schema.DecodeRecord) bool { return r.Runs > 1 }) {
		caption += " A mode that pools runs shows their medians (its wall time from the median tokens/s)."
	}
	note := ""
	switch {
	case len(untimed) == len(recs):
		note = fmt.Sprintf("Device busy time per token not drawn: the %s device could not time its work in any mode (untimed, not 0).", recs[0].Device)
	case len(untimed) > 0:
		note = fmt.Sprintf("Device busy time per token not drawn for %s: the device could not time its work there (untimed, not 0).", strings.Join(untimed, ", "))
	}
	return &Chart{Kind: "token-time", Title: title, Caption: caption, SVG: svg}, note
}

// deviceMemoryChart stacks, per mode whose record reconciles the device's
// memory (cuda), its parts in MiB, as the device-memory table names them:
// only the parts some record has, unexplained on top. The context on its
// own, the ledger's rounding to the driver's pages and the unexplained
// rest are parts only where they were measured (records from before they
// were lack them).
func deviceMemoryChart(recs []schema.DecodeRecord) (*Chart, string) {
	const fail = "no device memory chart: "
	var rows []schema.DecodeRecord
	var without []string
	for _, r := range recs {
		if r.DeviceMemory != nil {
			rows = append(rows, r)
		} else {
			without = append(without, r.Decode)
		}
	}
	if len(rows) == 0 {
		return nil, "No device memory chart: no record reconciles its device's memory (probe decode does so on cuda only)."
	}
	parts := deviceParts()
	pl := newPlot(false, true)
	gpu := rows[0].DeviceMemory.GPU
	title := "device memory by part"
	if gpu != "" {
		title = "device memory on " + gpu + " by part"
	}
	pl.Title.Text = title
	pl.Y.Label.Text = "bytes"
	pl.Y.Min = 0
	pl.Legend.Top = true
	pl.Add(plotter.NewGrid())
	var below *plotter.BarChart
	var drawn []string
	var negative, unmeasured []string
	for k, pt := range parts {
		vals := make(plotter.Values, len(rows))
		present := false
		for i, r := range rows {
			v, ok := pt.get(r.DeviceMemory)
			if !ok {
				if k == 0 {
					why := r.DeviceMemory.ContextProcessNote
					if why == "" {
						why = "a record from before the context was measured on its own"
					}
					unmeasured = append(unmeasured, r.Decode+": "+why)
				}
				continue
			}
			if v < 0 {
				negative = append(negative, fmt.Sprintf("%s: the parts claim %s more than NVML's figure", r.Decode, table.FormatBytes(float64(-v))))
			}
			present = present || v != 0
			vals[i] = max(0, float64(v))
		}
		if !present {
			continue
		}
		b, err := plotter.NewBarChart(vals, vg.Points(48))
		if err != nil {
			return nil, fail + err.Error()
		}
		col := colour(k)
		if pt.name == "unexplained" {
			col = color.NRGBA{0x55, 0x55, 0x55, 0xff}
		}
		b.Color, b.LineStyle.Width = col, 0
		if below != nil {
			b.StackOn(below)
		}
		below = b
		pl.Add(b)
		pl.Legend.Add(pt.name, b)
		drawn = append(drawn, pt.name)
	}
	if below == nil {
		return nil, "No device memory chart: every part of every reconciliation is 0."
	}
	pl.NominalX(modes(rows)...)
	// Room on the right for the legend.
	pl.X.Max = float64(len(rows)) + 1.2
	svg, err := renderSVG(pl, 8*vg.Inch, 4.5*vg.Inch)
	if err != nil {
		return nil, fail + err.Error()
	}
	caption := deviceMemoryCaption(rows, drawn, unmeasured, negative, without)
	return &Chart{Kind: "device-memory", Title: title, Caption: caption, SVG: svg}, ""
}

// devicePart is a part of the device memory chart: its name and its
// bytes in a reconciliation, false where the record did not measure it.
type devicePart struct {
	name string
	get  func(d *schema.DeviceMemory) (int64, bool)
}

// deviceParts are the device memory chart's parts, bottom to top.
func deviceParts() []devicePart {
	always := func(f func(d *schema.DeviceMemory) int64) func(d *schema.DeviceMemory) (int64, bool) {
		return func(d *schema.DeviceMemory) (int64, bool) { return f(d), true }
	}
	return []devicePart{
		// NVML's charge for the context, measured on its own: the bars
		// stack up to NVML's figure.
		{"context+module", func(d *schema.DeviceMemory) (int64, bool) {
			return d.ContextProcessBytes, d.ContextProcessMeasured
		}},
		{"held before", always(func(d *schema.DeviceMemory) int64 { return d.HeldBeforeOpenBytes })},
		{"stream+cuBLAS handle", always(func(d *schema.DeviceMemory) int64 { return d.StreamHandleBytes })},
		{"ledger", always(func(d *schema.DeviceMemory) int64 { return d.LedgerBytes })},
		{"rounding to pages", func(d *schema.DeviceMemory) (int64, bool) {
			return d.AllocRoundingBytes, d.AllocGranularityBytes > 0
		}},
		{"cuBLAS workspace", always(func(d *schema.DeviceMemory) int64 { return d.CuBLASWorkspaceBytes })},
		{"unexplained", func(d *schema.DeviceMemory) (int64, bool) {
			return d.UnexplainedBytes, d.UnexplainedMeasured
		}},
	}
}

// deviceMemoryCaption says what the chart's parts are (drawn, bottom to
// top) and what it leaves out: memory NVML charges to no process, parts
// not measured, parts claiming more than NVML's figure, records without
// a reconciliation.
func deviceMemoryCaption(rows []schema.DecodeRecord, drawn, unmeasured, negative, without []string) string {
	caption := "The process's device memory per mode in the parts the device names (cuda), bottom to top: " + strings.Join(drawn, ", ") +
		". Context+module is the primary context and kernel module; held before, what the process held when this mode's device opened; ledger, the decoder's buffers as allocated, and rounding to pages, the least the driver charges beyond them; unexplained, what NVML's figure for the process leaves over. Parts no record has are left out."
	var uncharged []string
	for _, r := range rows {
		if u := r.DeviceMemory.UnchargedBytes; u != 0 {
			uncharged = append(uncharged, fmt.Sprintf("%s %s", r.Decode, table.FormatBytes(float64(u))))
		}
	}
	if len(uncharged) > 0 {
		caption += " Not drawn, as NVML's figure leaves it out: device memory the driver took that NVML charges to no process (" + strings.Join(uncharged, ", ") + ")."
	}
	if len(unmeasured) > 0 {
		caption += " Context (and so the unexplained rest) not measured for " + strings.Join(unmeasured, "; ") + "."
	}
	if len(negative) > 0 {
		caption += " " + strings.Join(negative, "; ") + " (drawn as 0)."
	}
	if len(without) > 0 {
		caption += " Not drawn: " + strings.Join(without, ", ") + " (no reconciliation)."
	}
	return caption
}
