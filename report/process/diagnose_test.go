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

// walked is a process whose peak walk (at 570 ms) has the given parts and
// unexplained bytes, RSS their sum, on 2 CPUs.
func walked(unexplained int64, parts ...schema.ReconciliationPart) *schema.Process {
	r := schema.Reconciliation{Parts: parts, UnexplainedBytes: unexplained, RSSBytes: unexplained}
	for _, x := range parts {
		r.RSSBytes += x.Bytes
	}
	if unexplained > 0 {
		r.UnexplainedMappings = []schema.MappingPiece{{Start: 0x7f0000000000, End: 0x7f0001400000, ResidentBytes: 20 << 20}}
	}
	return &schema.Process{AtPeak: &schema.Snapshot{TMs: 570, Reconciliation: r, CPUs: 2, GlibcArenaLimit: 16}}
}

// TestDiagnoseUnexplainedJoin: numpy's arrays in mappings the walk left
// unexplained, which --sites' table names (200 MiB at
// _multiarray_umath+0xde0f0): the join counts the heap blocks in use
// there, and the diagnosis says what the join found, not only the
// program's own mappings (it read "--sites finds 15.5 KiB of it (0 %)").
func TestDiagnoseUnexplainedJoin(t *testing.T) {
	p := walked(200<<20, schema.ReconciliationPart{Name: "file.mapped", Bytes: 30 << 20})
	p.Sites = &schema.Sites{Unexplained: &schema.SitesUnexplained{At: "peak", AtMs: 570, UnexplainedBytes: 200 << 20,
		MappedBytes: 16 << 10, HeapBytes: 200<<20 - 16<<10, Sites: []schema.SitesMapping{
			{Function: "_multiarray_umath.so+0xde0f0", Blocks: 10, HeapBytes: 200<<20 - 16<<10, ResidentBytes: 200<<20 - 16<<10},
			{Function: "PyTuple_New", Mappings: 1, ResidentBytes: 16 << 10}}}}
	got := topics(&schema.Process{Diagnosis: diagnose(p, facts{aliveSamples: -1, releasedByMs: -1})})["unexplained"]
	if want := "--sites finds 200 MiB of it (100 %): 200.0 MiB in heap blocks in use (malloc) and 16 KiB in mappings the process made itself, the most by _multiarray_umath.so+0xde0f0 (200.0 MiB)"; !strings.Contains(got, want) {
		t.Errorf("unexplained: %q\nwant it to contain %q", got, want)
	}
}

// TestDiagnoseArenaAdvice: MALLOC_ARENA_MAX is advised only where a cap
// would save a stated, material amount: --sites' free but resident bytes
// in the other arenas, at least 16 MiB and 10 % of RSS. node's 5 arenas
// (320 MiB reserved, 18.3 MiB resident of 120 MiB) and a Go program's
// (16 KiB resident) got the advice before; without --sites, arenas that
// hold a material amount get the way to measure it instead.
func TestDiagnoseArenaAdvice(t *testing.T) {
	arenas := func(count int, reserved, resident int64) schema.ReconciliationPart {
		return schema.ReconciliationPart{Name: "c.malloc.arenas", Count: count, ReservedBytes: reserved, Bytes: resident}
	}
	frag := func(free, se int64) *schema.Sites {
		return &schema.Sites{Fragmentation: &schema.SitesFragmentation{At: "end", AtMs: 1010, Arenas: []schema.SitesArena{
			{Arena: "main"}, {Arena: "others", FreeResidentBytes: free, InUseSEBytes: se}}}}
	}
	for _, c := range []struct {
		name  string
		p     *schema.Process
		sites *schema.Sites
		want  string // in the arenas' line; "" for no advice at all
	}{
		{"node", walked(0, arenas(5, 320<<20, 18300<<10), schema.ReconciliationPart{Name: "file.mapped", Bytes: 100 << 20}), nil, ""},
		{"go", walked(0, arenas(5, 320<<20, 16<<10), schema.ReconciliationPart{Name: "go.runtime.anon", Bytes: 8 << 20}), nil, ""},
		{"big, no sites", walked(0, arenas(15, 960<<20, 200<<20), schema.ReconciliationPart{Name: "file.mapped", Bytes: 100 << 20}), nil,
			"probe exec --sites measures how much of it is free"},
		{"big, little free", walked(0, arenas(15, 960<<20, 200<<20), schema.ReconciliationPart{Name: "file.mapped", Bytes: 100 << 20}), frag(20<<20, 4<<20), ""},
		{"big, free", walked(0, arenas(15, 960<<20, 200<<20), schema.ReconciliationPart{Name: "file.mapped", Bytes: 100 << 20}), frag(90<<20, 5<<20),
			"they hold 80 MiB free but resident (27 % of RSS, --sites at the end walk, 1.01 s); MALLOC_ARENA_MAX=2 would let threads share the main arena and save up to that much"},
	} {
		c.p.Sites = c.sites
		got := topics(&schema.Process{Diagnosis: diagnose(c.p, facts{aliveSamples: -1, releasedByMs: -1})})["arenas"]
		switch {
		case got == "":
			t.Errorf("%s: no arenas line", c.name)
		case c.want == "" && strings.Contains(got, "MALLOC_ARENA_MAX"):
			t.Errorf("%s: %q; want no advice", c.name, got)
		case c.want != "" && !strings.Contains(got, c.want):
			t.Errorf("%s: %q; want %q", c.name, got, c.want)
		}
	}
}
