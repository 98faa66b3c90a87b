package htmlreport

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"memprobe/report"
	"memprobe/schema"
)

// decodeFixture is what `probe decode --decode all --json` writes for four
// modes on a cuda device, figures made up: per-token modes around 2,000
// tokens/s and batch at 150,000 (two decades apart, as on a GPU), busy
// times, and a device memory reconciliation for each mode with no alloc
// rounding. pooled makes each record pool three runs.
func decodeFixture(pooled bool) []schema.DecodeRecord {
	rows := []struct {
		mode            string
		tps, wait, busy float64
	}{
		{"per-token-copy", 1800, 420e3, 60e3},
		{"per-token-view", 2100, 380e3, 58e3},
		{"per-token-prealloc", 2300, 350e3, 55e3},
		{"batch", 150000, 4.5e3, 5.2e3},
	}
	var recs []schema.DecodeRecord
	for _, r := range rows {
		busy, pct := r.busy, 100*r.busy/(1e9/r.tps)
		rec := schema.DecodeRecord{Schema: schema.DecodeVersion, Decode: r.mode, Device: "cuda",
			TokensPerSec: r.tps, SyncsPerToken: 1, LaunchesPerToken: 4, HostWaitNsPerToken: r.wait,
			DeviceBusyNsPerToken: &busy, DeviceBusyPct: &pct, H2DBytes: 4 << 20, D2HBytes: 12 << 20,
			DevicePeakBytes: 600 << 20, DevicePeakSource: "nvml", LedgerPeakBytes: 3 << 20,
			DeviceMemory: &schema.DeviceMemory{GPU: "NVIDIA H100 80GB HBM3", TotalBytes: 80 << 30, ProcessSource: "nvml",
				ProcessPeakBytes: 600 << 20, ProcessBytes: 590 << 20, ContextBytes: 500 << 20, StreamHandleBytes: 2 << 20,
				ContextProcessBytes: 500 << 20, ContextProcessMeasured: true,
				LedgerBytes: 3 << 20, CuBLASWorkspaceBytes: 32 << 20, UnexplainedBytes: 53 << 20, UnexplainedMeasured: true},
			Config: schema.DecodeConfig{Preset: "seed", Model: schema.Model{Vocab: 788, Dim: 256, Context: 128, Batch: 32},
				Seed: 1337, Data: "synthetic:1MB", DataSeed: 1, Device: "cuda", GEMM: "auto", GEMMUsed: "cublas", Passes: 5, Probs: true},
			Environment: schema.Environment{GoVersion: "go1.26.0", GOOS: "linux", GOARCH: "amd64", CPUModel: "AMD EPYC 9R14", LogicalCores: 16},
			CommandLine: []string{"probe", "decode", "--device", "cuda", "--decode", "all"},
			StartTime:   "2026-11-26T08:00:00Z",
		}
		if pooled {
			rec.Runs = 3
			rec.TokensPerSecRuns = []float64{0.9 * r.tps, r.tps, 1.08 * r.tps}
			rec.HostWaitNsPerTokenRuns = []float64{r.wait, 0.95 * r.wait, 1.1 * r.wait}
		}
		recs = append(recs, rec)
	}
	return recs
}

func renderDecode(t testing.TB, recs []schema.DecodeRecord) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteDecode(&b, recs, Options{Title: "probe report decode.json"}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// chartSVG is the SVG of the page's chart of kind, "" when there is none.
func chartSVG(page, kind string) string {
	m := regexp.MustCompile(`(?s)<figure class="chart" data-kind="` + regexp.QuoteMeta(kind) + `">\s*(<svg .*?</svg>)`).FindStringSubmatch(page)
	if m == nil {
		return ""
	}
	return m[1]
}

// TestDecodePage: a decode result's page has the title, the provenance,
// report's decode tables, the mode names, the three charts as inline SVG
// and the environment; no flame graph section; the tokens/s chart's error
// bars only where the records pool runs, which the caption says.
func TestDecodePage(t *testing.T) {
	for _, pooled := range []bool{false, true} {
		recs := decodeFixture(pooled)
		page := renderDecode(t, recs)
		for _, want := range []string{"<title>probe report decode.json</title>", "<h1>probe report decode.json</h1>",
			`<p class="head">` + report.DecodeProvenance(recs) + "</p>", `<a href="#decode">decode modes</a>`,
			"<caption>decode on cuda: B=32 sequences x T=128 positions", "<caption>device memory on NVIDIA H100 80GB HBM3",
			`id="environment"`, "<td>config.gemm_used</td><td>cublas</td>", "<td>command_line</td><td>probe decode --device cuda --decode all</td>"} {
			if !strings.Contains(page, want) {
				t.Errorf("pooled %v: the page lacks %q", pooled, want)
			}
		}
		for _, r := range recs {
			if !strings.Contains(page, "<td class=\"\">"+r.Decode+"</td>") {
				t.Errorf("no table row of %s", r.Decode)
			}
		}
		if strings.Contains(page, `id="flames"`) || strings.Contains(page, "flame graphs") {
			t.Error("a decode page has a flame graph section")
		}
		for _, kind := range []string{"tokens", "token-time", "device-memory"} {
			svg := chartSVG(page, kind)
			if svg == "" {
				t.Errorf("pooled %v: no %s chart", pooled, kind)
				continue
			}
			for _, r := range recs {
				if !strings.Contains(svg, ">"+r.Decode+"</text>") {
					t.Errorf("the %s chart does not name %s", kind, r.Decode)
				}
			}
		}
		tokens := chartSVG(page, "tokens")
		for _, want := range []string{">1,800</text>", ">150,000</text>", "tokens/s by mode (log scale)</text>"} {
			if !strings.Contains(tokens, want) {
				t.Errorf("the tokens/s chart lacks %q", want)
			}
		}
		// vgsvg writes a stroke's colour as #RRGGBB.
		c := spreadColour
		spread := strings.Count(tokens, fmt.Sprintf("#%02X%02X%02X", c.R, c.G, c.B))
		caption := regexp.MustCompile(`data-kind="tokens">(?s:.*?)<figcaption>([^<]*)</figcaption>`).FindStringSubmatch(page)
		if caption == nil {
			t.Fatal("no caption of the tokens/s chart")
		}
		if pooled {
			// A bar and two caps per mode.
			if spread < 3*len(recs) {
				t.Errorf("pooled: %d strokes of the runs' error bars, want 3 per mode", spread)
			}
			if !strings.Contains(caption[1], "the error bar spans the slowest to the fastest run: per-token-copy (3 runs)") {
				t.Errorf("pooled caption: %s", caption[1])
			}
		} else {
			if spread != 0 {
				t.Errorf("one process: %d strokes of error bars, want none", spread)
			}
			if !strings.Contains(caption[1], "one process") || strings.Contains(caption[1], "slowest to the fastest") {
				t.Errorf("one-process caption: %s", caption[1])
			}
		}
	}
}

// TestDecodePageTimes: the chart of where a token's time goes has the
// wall time, the host's wait and the device's busy time of a timed
// device; an untimed device's busy time is not drawn (no bar, no legend)
// and a note says so; a device untimed in some modes only names them.
func TestDecodePageTimes(t *testing.T) {
	page := renderDecode(t, decodeFixture(false))
	svg := chartSVG(page, "token-time")
	for _, want := range []string{">wall time per token</text>", ">host wait per token</text>", ">device busy per token</text>", ">555.6</text>", ">60.0</text>", ">5.2</text>"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the token time chart lacks %q", want)
		}
	}
	if strings.Contains(page, "could not time its work") {
		t.Error("a timed device's page says it was untimed")
	}

	recs := decodeFixture(false)
	for i := range recs {
		recs[i].DeviceBusyNsPerToken, recs[i].DeviceBusyPct = nil, nil
	}
	page = renderDecode(t, recs)
	svg = chartSVG(page, "token-time")
	if svg == "" || !strings.Contains(svg, ">wall time per token</text>") {
		t.Fatal("untimed: no chart of the wall time and the wait")
	}
	if strings.Contains(svg, "device busy") || strings.Contains(svg, ">0.0</text>") {
		t.Error("untimed: the chart draws a device busy time")
	}
	if !strings.Contains(page, `<p class="note">Device busy time per token not drawn: the cuda device could not time its work in any mode (untimed, not 0).</p>`) {
		t.Error("untimed: no note saying so")
	}

	recs = decodeFixture(false)
	recs[3].DeviceBusyNsPerToken, recs[3].DeviceBusyPct = nil, nil
	page = renderDecode(t, recs)
	if svg := chartSVG(page, "token-time"); !strings.Contains(svg, ">device busy per token</text>") || strings.Contains(svg, ">5.2</text>") {
		t.Error("batch untimed: the others' busy time missing, or batch's drawn")
	}
	if !strings.Contains(page, "Device busy time per token not drawn for batch: the device could not time its work there") {
		t.Error("batch untimed: no note naming it")
	}
}

// TestDecodePageDeviceMemory: the device memory chart stacks the parts
// the records have (no alloc rounding in the fixture: not in the legend);
// without a reconciliation (a cpu result) there is no chart but a note.
func TestDecodePageDeviceMemory(t *testing.T) {
	svg := chartSVG(renderDecode(t, decodeFixture(false)), "device-memory")
	for _, want := range []string{">context+module</text>", ">stream+cuBLAS handle</text>", ">ledger</text>", ">cuBLAS workspace</text>", ">unexplained</text>"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the device memory chart lacks %q", want)
		}
	}
	for _, absent := range []string{"rounding to pages", "held before"} {
		if strings.Contains(svg, absent) {
			t.Errorf("the device memory chart draws %s, which no record has", absent)
		}
	}
	recs := decodeFixture(false)
	for i := range recs {
		recs[i].DeviceMemory = nil
	}
	page := renderDecode(t, recs)
	if strings.Contains(page, `data-kind="device-memory"`) || strings.Contains(page, "<caption>device memory") {
		t.Error("no reconciliation: a device memory chart or table")
	}
	if !strings.Contains(page, "No device memory chart: no record reconciles its device") {
		t.Error("no reconciliation: no note saying why there is no chart")
	}
	if chartSVG(page, "tokens") == "" || chartSVG(page, "token-time") == "" {
		t.Error("no reconciliation: the other charts are gone too")
	}
}

// TestDecodePageEscaping: strings from the file (a GPU's name, a mode, the
// device, the command line) are text on the page and in its charts, never
// markup.
func TestDecodePageEscaping(t *testing.T) {
	recs := decodeFixture(true)
	for i := range recs {
		recs[i].DeviceMemory.GPU = `<script>alert("gpu")</script>`
		recs[i].CommandLine = append(recs[i].CommandLine, `--data=<script>alert("cmd")</script>`)
		recs[i].Device = `cuda<img src=x onerror=alert(1)>`
	}
	recs[0].Decode = `<b>copy</b>`
	page := renderDecode(t, recs)
	for _, bad := range []string{"<script", "<img", "<b>copy"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page contains %q unescaped", bad)
		}
	}
	for _, want := range []string{
		`&lt;script&gt;alert(&#34;gpu&#34;)&lt;/script&gt;`,             // the provenance, the table's title
		`--data=&lt;script&gt;alert(&#34;cmd&#34;)&lt;/script&gt;</td>`, // the environment
		`&lt;b&gt;copy&lt;/b&gt;</text>`,                                // a chart's axis (vgsvg)
		`device memory on &lt;script&gt;alert(&#34;gpu&#34;)&lt;/script&gt; by part</text>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	for _, m := range regexp.MustCompile(`(?:src|href)="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		if strings.Contains(m[1], "//") {
			t.Errorf("external reference %q", m[1])
		}
	}
}

// TestDecodePageFile: WriteDecodeFile writes the page; no records is an
// error and writes nothing.
func TestDecodePageFile(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "decode.html")
	if err := WriteDecodeFile(out, decodeFixture(false), Options{}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(out); err != nil || !strings.Contains(string(b), "<title>probe report</title>") {
		t.Errorf("%s: %v, not the page", out, err)
	}
	none := filepath.Join(dir, "none.html")
	if err := WriteDecodeFile(none, nil, Options{}); err == nil {
		t.Error("no records: no error")
	}
	if _, err := os.Stat(none); !os.IsNotExist(err) {
		t.Errorf("no records: %s written", none)
	}
}

// TestDecodeBrowser loads a pooled decode page in headless Chromium, as
// TestBrowser loads a run report's, and checks that its three charts and
// its tables rendered with a size; skipped without Chromium.
func TestDecodeBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no browser")
	}
	bin := chromium()
	if bin == "" {
		t.Skip("no Chromium: install Debian's chromium or set MEMPROBE_CHROMIUM to run the browser test")
	}
	dir := t.TempDir()
	page := renderDecode(t, decodeFixture(true))
	checked := filepath.Join(dir, "checked.html")
	if err := os.WriteFile(checked, []byte(strings.Replace(page, "</body>", verdictScript+"</body>", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, bin, dir)
	defer b.close()
	v := b.verdict(t, checked)
	want := "OK charts=3 tables=" + strconv.Itoa(strings.Count(page, "<table")) + " flames=0"
	if v != want {
		t.Errorf("Chromium: %s, want %s", v, want)
	}
	b.screenshot(t, filepath.Join(t.ArtifactDir(), "decode.png"), "1400,2400", checked)
}

// TestDecodePageDeviceMemoryUncharged: where the uncharged memory was
// measured, the chart's caption names it per mode, not drawn (NVML's
// figure, which the bars stack up to, leaves it out), and the table has
// it in a column beside the sum.
func TestDecodePageDeviceMemoryUncharged(t *testing.T) {
	recs := decodeFixture(false)
	for i := range recs {
		dm := *recs[i].DeviceMemory
		dm.UnchargedBytes, dm.FreeGapMeasured = 5832704, true
		recs[i].DeviceMemory = &dm
	}
	page := renderDecode(t, recs)
	if !strings.Contains(page, "NVML charges to no process (per-token-copy 5.56 MiB") {
		t.Error("the device memory chart's caption does not name the uncharged memory")
	}
	if !strings.Contains(page, "uncharged (not in NVML&#39;s)") {
		t.Error("the device memory table has no uncharged column")
	}
}

// TestDecodePageDeviceMemoryOld: a record from before the context was
// measured on its own and the ledger rounded to pages (the H100 record
// kept in testdata/gpu) draws neither them nor its remainder, which was
// not one, and says so.
func TestDecodePageDeviceMemoryOld(t *testing.T) {
	recs := decodeFixture(false)
	for i := range recs {
		dm := *recs[i].DeviceMemory
		dm.ContextProcessBytes, dm.ContextProcessMeasured, dm.UnexplainedMeasured = 0, false, false
		recs[i].DeviceMemory = &dm
	}
	page := renderDecode(t, recs)
	svg := chartSVG(page, "device-memory")
	for _, absent := range []string{">context+module</text>", ">unexplained</text>"} {
		if strings.Contains(svg, absent) {
			t.Errorf("the chart of an old record draws %s", absent)
		}
	}
	if !strings.Contains(page, "not measured for per-token-copy: a record from before the context was measured on its own") {
		t.Error("the chart's caption does not say the context was not measured")
	}
}
