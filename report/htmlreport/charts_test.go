package htmlreport

import (
	"fmt"
	"html"
	"regexp"
	"slices"
	"strings"
	"testing"

	"memprobe/schema"
)

// partsRun is a finished run whose representative repetition has a
// reconciliation at its peak of the given parts, VmRSS their sum plus 1
// MiB unexplained.
func partsRun(phase string, parts []schema.ReconciliationPart) *schema.Run {
	var sum int64
	for _, p := range parts {
		sum += p.Bytes
	}
	rec := &schema.RSSReconciliation{AtPeak: schema.Reconciliation{
		RSSBytes: sum + 1<<20, Parts: parts, UnexplainedBytes: 1 << 20}}
	return &schema.Run{Name: "p-" + phase, Plan: "p", Phase: phase, Status: schema.StatusOK,
		Repetitions: []schema.Result{{PeakRSSBytes: uint64(sum + 1<<20), RSSReconciliation: rec}}}
}

var (
	fillRE = regexp.MustCompile(`style="fill:(#[0-9A-Fa-f]{6})"`)
	textRE = regexp.MustCompile(`(?s)<text[^>]*>([^<]*)</text>`)
)

// TestReconcileChartColours draws 21 named parts, one of them 0.4 % of
// VmRSS in both bars, and checks, in the SVG, that every legend entry has
// its own fill colour, that the small part is not drawn alone but in
// "other (<1 %)", which the caption explains.
func TestReconcileChartColours(t *testing.T) {
	var parts []schema.ReconciliationPart
	for k := range 20 {
		parts = append(parts, schema.ReconciliationPart{Name: fmt.Sprintf("part.%02d", k), Bytes: int64(k+3) << 20})
	}
	// 3 to 22 MiB, 251 MiB of parts with tiny, 1 MiB unexplained: tiny's
	// 1 MiB is 0.4 % of VmRSS, the smallest other part 1.2 %.
	parts = append(parts[:5], append([]schema.ReconciliationPart{{Name: "tiny", Bytes: 1 << 20}}, parts[5:]...)...)
	first, last := partsRun("before", parts), partsRun("P1", slices.Clone(parts))
	p := &planRuns{name: "p", runs: []*schema.Run{first, last}, groups: [][]*schema.Run{{first, last}}}
	c, note := reconcileChart(p)
	if c == nil {
		t.Fatalf("no chart: %s", note)
	}
	svg := string(c.SVG)
	var legend []string
	for _, m := range textRE.FindAllStringSubmatch(svg, -1) {
		s := html.UnescapeString(m[1])
		if strings.HasPrefix(s, "part.") || s == "tiny" || s == otherName || s == "unexplained" {
			legend = append(legend, s)
		}
	}
	if len(legend) != 22 { // 20 parts, other, unexplained
		t.Fatalf("legend %q: want 20 parts, %q and unexplained", legend, otherName)
	}
	if slices.Contains(legend, "tiny") || !slices.Contains(legend, otherName) {
		t.Errorf("legend %q: want tiny (0.4 %%) in %q, not alone", legend, otherName)
	}
	if !strings.Contains(c.Caption, otherName+": tiny,") {
		t.Errorf("caption %q does not say what %q holds", c.Caption, otherName)
	}
	fills := map[string]bool{}
	for _, m := range fillRE.FindAllStringSubmatch(svg, -1) {
		if f := strings.ToUpper(m[1]); f != "#FFFFFF" && f != "#000000" {
			fills[f] = true
		}
	}
	if len(fills) != len(legend) {
		t.Errorf("%d fill colours for %d legend entries: some parts share a colour", len(fills), len(legend))
	}
}

// TestTimelineCaptionSaysWho: who sampled: a plan file's phases are watched
// from outside (a process result), the built-in plans' children sample
// themselves; the caption names which, and a process result planted into
// a built-in run moves it.
func TestTimelineCaptionSaysWho(t *testing.T) {
	run := func(kind string) *schema.Run {
		r := partsRun("before", []schema.ReconciliationPart{{Name: "a", Bytes: 1 << 20}})
		r.Repetitions[0].Kind = kind
		r.Repetitions[0].Sampler = &schema.SamplerResult{Timeline: []schema.SamplerPoint{{TMs: 0, RSSBytes: 1 << 20}, {TMs: 1, RSSBytes: 2 << 20}}}
		return r
	}
	for _, c := range []struct{ kind, want string }{
		{"", "sampled by the child itself"},
		{schema.KindProcess, "sampled by the probe from outside"},
	} {
		r := run(c.kind)
		ch, note := timelineChart(&planRuns{name: "p", runs: []*schema.Run{r}, groups: [][]*schema.Run{{r}}})
		if ch == nil {
			t.Fatalf("kind %q: no chart: %s", c.kind, note)
		}
		if !strings.Contains(ch.Caption, c.want) {
			t.Errorf("kind %q: caption %q, want %q", c.kind, ch.Caption, c.want)
		}
	}
}
