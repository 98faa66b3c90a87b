package process

import (
	"slices"
	"strings"
	"testing"

	"memprobe/schema"
)

// topics is the diagnosis's text by topic.
func topics(p *schema.Process) map[string]string {
	m := map[string]string{}
	for _, d := range p.Diagnosis {
		m[d.Topic] = d.Text
	}
	return m
}

// finding is p's finding of topic; nil when none.
func finding(p *schema.Process, topic string) *schema.Finding {
	i := slices.IndexFunc(p.Diagnosis, func(d schema.Finding) bool { return d.Topic == topic })
	if i < 0 {
		return nil
	}
	return &p.Diagnosis[i]
}

// TestDiagnoseGrowthKinds: the growth line's three shapes from the
// timeline's summary alone: still growing, a plateau at the peak, and a
// release (down from the peak by more than a tenth of the growth at the
// end, which a negative last-quarter growth used to send to the plateau).
func TestDiagnoseGrowthKinds(t *testing.T) {
	for _, c := range []struct {
		name               string
		peak, final        uint64
		lastQuarter        int64
		topic, text, notIn string
	}{
		{"growing", 100 << 20, 100 << 20, 40 << 20, "growth", "with no plateau", ""},
		{"plateau", 100 << 20, 99 << 20, 0, "growth", "then levelled off at 100 MiB", ""},
		{"released", 257 << 20, 1 << 20, -256 << 20, "release", "then released 256 MiB by 0.75 s, down to 1 MiB at the end (1.80 s)", "levelled"},
	} {
		p := &schema.Process{Timeline: schema.TimelineSummary{Samples: 180, StartRSSBytes: 1 << 20, PeakRSSBytes: c.peak, FinalRSSBytes: c.final,
			GrowthBytes: int64(c.peak) - 1<<20, PeakAtMs: 150, LastQuarterGrowthBytes: c.lastQuarter}}
		got := diagnose(p, facts{aliveSamples: 180, releasedByMs: 750, endMs: 1800})
		tp := topics(&schema.Process{Diagnosis: got})
		if !strings.Contains(tp[c.topic], c.text) || c.notIn != "" && strings.Contains(tp[c.topic], c.notIn) {
			t.Errorf("%s: %s finding %q, want it to say %q; all: %+v", c.name, c.topic, tp[c.topic], c.text, got)
		}
	}
	// A timeline the sampler cut short has no final figure to judge by.
	p := &schema.Process{Timeline: schema.TimelineSummary{Samples: 10, StartRSSBytes: 1 << 20, PeakRSSBytes: 257 << 20, FinalRSSBytes: 1 << 20,
		GrowthBytes: 256 << 20, LastQuarterGrowthBytes: -256 << 20}}
	if got := diagnose(p, facts{aliveSamples: 10, timelineCut: true, releasedByMs: -1}); slices.ContainsFunc(got, func(d schema.Finding) bool {
		return d.Topic == "growth" || d.Topic == "release"
	}) {
		t.Errorf("a cut timeline judged: %+v", got)
	}
}

// TestDiagnosePeakDescendant: g++ under --children, whose wait4 maxrss
// (240 MiB) is its cc1plus's peak, not the driver's 3.5 MiB: the peak
// line names the descendant, where it said "after the last sample, or in
// a descendant". A descendant that peaked at half of maxrss (planted),
// or none seen, leaves the old line.
func TestDiagnosePeakDescendant(t *testing.T) {
	for _, c := range []struct {
		name string
		kids []schema.Child
		text string
	}{
		{"cc1plus", []schema.Child{{PID: 16144, Command: []string{"/usr/lib/gcc/x86_64-linux-gnu/12/cc1plus", "-quiet"}, VmHWMBytes: 239 << 20}, {PID: 16146, Command: []string{"as"}, VmHWMBytes: 10 << 20}},
			"peak RSS 240 MiB at exit (wait4's maxrss) is a descendant's: cc1plus (pid 16144) peaked at 239 MiB (VmHWM as last read); the program's own was 3.5 MiB (-98.5 %)"},
		{"half", []schema.Child{{PID: 16144, Command: []string{"cc1plus"}, VmHWMBytes: 120 << 20}}, "the peak came after the last sample, or in a descendant"},
		{"none", nil, "the peak came after the last sample, or in a descendant"},
	} {
		d := -98.5
		p := &schema.Process{Mode: schema.ModeExec, RusageMaxRSSBytes: 240 << 20, VmHWMBytes: 7 << 19, PeakAgreementPct: &d, ChildrenWatched: true, Children: c.kids,
			Timeline: schema.TimelineSummary{Samples: 100, PeakRSSBytes: 7 << 19}}
		f := finding(&schema.Process{Diagnosis: diagnose(p, facts{aliveSamples: 100, releasedByMs: -1})}, "peak")
		if f == nil || !strings.Contains(f.Text, c.text) {
			t.Errorf("%s: peak finding %+v, want %q", c.name, f, c.text)
		}
	}
}

// TestDiagnoseSitesMapped: where the program's own mappings are most of
// what --sites saw in use at its peak (rustc's jemalloc, a JVM), the
// diagnosis says the sites name who mapped, with the largest mapped
// site; where they are less than half (planted: 40 %), nothing. The
// same of the largest process image where it is not the headline's.
func TestDiagnoseSitesMapped(t *testing.T) {
	for _, c := range []struct {
		mapped int64
		want   bool
	}{{97 << 20, true}, {40 << 20, false}} {
		p := &schema.Process{Sites: &schema.Sites{PeakInUseBytes: 100 << 20, PeakMappedBytes: c.mapped, TopPeak: []schema.Site{
			{Function: "heap_site", Bytes: 3 << 20}, {Function: "pages_map", Bytes: c.mapped, Mapped: true}}}}
		f := finding(&schema.Process{Diagnosis: diagnose(p, facts{aliveSamples: -1, releasedByMs: -1})}, "sites-mapped")
		switch {
		case c.want && (f == nil || !strings.Contains(f.Text, "97 MiB of the 100 MiB in use at the sites' peak (97 %) are mappings the program made itself, the most by pages_map") || f.Value != float64(c.mapped)):
			t.Errorf("97 %% mapped: finding %+v", f)
		case !c.want && f != nil:
			t.Errorf("40 %% mapped: finding %+v, want none", f)
		}
	}
	// The largest image, where it is not the headline's: g++'s cc1plus,
	// most of whose peak is GCC's own pages; planted, 40 % of it.
	for _, c := range []struct {
		mapped int64
		want   bool
	}{{200 << 20, true}, {84 << 20, false}} {
		st := &schema.Sites{PID: 100, PeakInUseBytes: 169 << 10, Processes: []schema.SitesProcess{
			{PID: 100, Executable: "/usr/bin/g++", PeakInUseBytes: 169 << 10},
			{PID: 101, PPID: 100, Executable: "/usr/lib/gcc/x86_64-linux-gnu/12/cc1plus", PeakInUseBytes: 210 << 20, PeakMappedBytes: c.mapped,
				TopPeak: []schema.Site{{Function: "ggc_internal_alloc", Bytes: c.mapped, Mapped: true}}}}}
		f := finding(&schema.Process{Diagnosis: diagnose(&schema.Process{Sites: st}, facts{aliveSamples: -1, releasedByMs: -1})}, "sites-mapped-largest")
		switch {
		case c.want && (f == nil || !strings.HasPrefix(f.Text, "in cc1plus (pid 101), the largest process image: 200 MiB of the 210 MiB in use at the sites' peak (95 %) are mappings the program made itself, the most by ggc_internal_alloc")):
			t.Errorf("cc1plus, 95 %% mapped: finding %+v", f)
		case !c.want && f != nil:
			t.Errorf("cc1plus, 40 %% mapped: finding %+v, want none", f)
		}
	}
}
