package process

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"memprobe/internal/table"
	"memprobe/schema"
)

// Diagnose is the diagnosis of a process result (schema.Process's
// Diagnosis, stored in the JSON): what its figures mean, a sentence
// each, with the figure behind it. It is a function of the result and
// of one fact of the watch the result does not hold: timelineCut, the
// sampler stopped while the process lived on (outside's
// Session.TimelineCut), when the timeline's final figure is not the end
// and growth is not judged. The caller (cmd/probe, the runner) runs it
// before writing the JSON.
func Diagnose(r *schema.Result, timelineCut bool) []schema.Finding {
	f := facts{aliveSamples: -1, releasedByMs: -1, timelineCut: timelineCut}
	if r.Sampler != nil {
		f.aliveSamples = r.Sampler.AliveSamples()
		f.releasedByMs, f.endMs = r.Sampler.ReleasedBy()
	}
	return diagnose(r.Process, f)
}

// facts are what the diagnosis needs to know that the schema's process
// result does not say.
type facts struct {
	// aliveSamples is the number of samples taken while the process
	// lived; -1 when unknown (a result without its sampler part).
	aliveSamples int
	// timelineCut says the sampler stopped while the process lived on.
	timelineCut bool
	// releasedByMs is when RSS, after its peak, first came down halfway
	// to its final value; endMs is the time of the last sample taken while
	// the process lived. -1 (releasedByMs) or 0 when unknown.
	releasedByMs, endMs float64
}

// diagnose says what the figures of p mean, a sentence each, with the
// figure behind it. Thresholds: a part is worth a line when it is at
// least 10 % of RSS (or, for address space, 64 MiB); growth when RSS rose
// by 16 MiB and 20 % of its peak; a release when it then fell by more
// than a tenth of that growth by the end. f says what p does not.
func diagnose(p *schema.Process, f facts) []schema.Finding {
	out := []schema.Finding{}
	add := func(topic, metric string, value float64, format string, args ...any) {
		out = append(out, schema.Finding{Topic: topic, Text: fmt.Sprintf(format, args...), Metric: metric, Value: value})
	}
	tl := p.Timeline
	diagnosePeak(p, f, add)
	diagnoseGrowth(p, f, add)

	if p.AtPeak != nil {
		diagnoseGap(p, add)
		diagnoseWalk(p, p.AtPeak, add)
	}

	if st := p.Sites; st != nil {
		diagnoseSites(st, add)
	}
	if g := p.GPU; g != nil {
		diagnoseGPU(g, add)
	}

	if tl.PeakSwapBytes > 0 {
		add("swap", "peak_swap_bytes", float64(tl.PeakSwapBytes), "%s of it was swapped out at the most: RSS understates its memory by that much", iec(int64(tl.PeakSwapBytes)))
	}
	if p.ChildrenWatched || len(p.Children) > 0 {
		diagnoseChildren(p, add)
	}
	diagnoseWalkedChild(p, add)
	return out
}

// diagnosePeak says where the peak comes from: wait4's maxrss for a
// program sampled fewer than twice, else how VmHWM and maxrss agree,
// and for attach the kernel's high-water mark.
func diagnosePeak(p *schema.Process, f facts, add addFunc) {
	tl := p.Timeline
	// The peak, two ways.
	under := p.Undersampled(f.aliveSamples) && p.RusageMaxRSSBytes > 0
	if under {
		// One sample, taken as execve left the program, is no peak:
		// wait4's maxrss is the one figure of its whole life.
		which := "a second"
		if f.aliveSamples == 0 {
			which = "the first"
		}
		interval := interval(p.IntervalMs)
		if p.ForkImage() {
			add("peak", "rusage_maxrss_bytes", float64(p.RusageMaxRSSBytes), "peak RSS at most %s: the program exited before %s sample (every %s), and wait4's maxrss at exit is no more than the probe's own size when it started the program (Linux carries the replaced image's peak across exec), so it bounds the program's peak from above only",
				iec(int64(p.RusageMaxRSSBytes)), which, interval)
		} else {
			add("peak", "rusage_maxrss_bytes", float64(p.RusageMaxRSSBytes), "peak RSS %s from wait4's maxrss at exit: the program exited before %s sample (every %s), so the timeline has no peak of its own",
				iec(int64(p.RusageMaxRSSBytes)), which, interval)
		}
	}
	if p.PeakAgreementPct != nil && !under {
		d := *p.PeakAgreementPct
		switch {
		case p.ForkImage():
			add("peak", "vm_hwm_bytes", float64(p.VmHWMBytes), "peak RSS %s (VmHWM as last sampled); wait4's maxrss %s is the probe's own size when it started the program (Linux carries the replaced image's peak across exec), not the program's",
				iec(int64(p.VmHWMBytes)), iec(int64(p.RusageMaxRSSBytes)))
		case math.Abs(d) <= 2:
			add("peak", "peak_agreement_pct", d, "peak RSS %s: VmHWM as last sampled and wait4's maxrss at exit agree (%+.2f %%)",
				iec(int64(p.RusageMaxRSSBytes)), d)
		case d < -2 && descendantPeaked(p) != nil:
			// --children saw who: maxrss is the largest of the
			// program's peak and its waited-for descendants'.
			c := descendantPeaked(p)
			add("peak", "peak_agreement_pct", d, "peak RSS %s at exit (wait4's maxrss) is a descendant's: %s peaked at %s (VmHWM as last read); the program's own was %s (%+.1f %%)",
				iec(int64(p.RusageMaxRSSBytes)), childName(c), iec(int64(childPeak(c))), iec(int64(p.VmHWMBytes)), d)
		default:
			add("peak", "peak_agreement_pct", d, "peak RSS %s at exit (wait4's maxrss) but %s at the last sample (%+.1f %%): the peak came after the last sample, or in a descendant",
				iec(int64(p.RusageMaxRSSBytes)), iec(int64(p.VmHWMBytes)), d)
		}
	}

	if p.Mode == schema.ModeAttach && p.VmHWMBytes > 0 {
		// No wait4 for a process the probe did not start: VmHWM is the
		// peak, and it covers the process's life before the attach too.
		add("peak", "vm_hwm_bytes", float64(p.VmHWMBytes), "peak RSS %s (VmHWM: the kernel's high-water mark over the process's whole life, before the attach too); while watched, RSS went from %s to at most %s",
			iec(int64(p.VmHWMBytes)), iec(int64(tl.StartRSSBytes)), iec(int64(tl.PeakRSSBytes)))
	}

}

// diagnoseGrowth says how RSS grew and what became of it: no plateau,
// released, or levelled off.
func diagnoseGrowth(p *schema.Process, f facts, add addFunc) {
	// Growth, and what became of it. Not from a timeline the sampler
	// cut short: its final figure is not the end (a warning says so).
	tl := p.Timeline
	if g := tl.GrowthBytes; g > 16<<20 && float64(g) > 0.2*float64(tl.PeakRSSBytes) && !f.timelineCut {
		secs := seconds(tl.PeakAtMs)
		released := int64(tl.PeakRSSBytes) - int64(tl.FinalRSSBytes)
		switch {
		case tl.LastQuarterGrowthBytes > g/10:
			add("growth", "growth_bytes", float64(g), "RSS grew %s in %s with no plateau (%s of it in the last quarter of the run)",
				iec(g), secs, iec(tl.LastQuarterGrowthBytes))
		case released > g/10:
			// Down from the peak by more than the plateau's tolerance:
			// memory given back (free, munmap, MADV_DONTNEED), which a
			// "levelled off at the peak" would hide.
			by := ""
			if f.releasedByMs >= 0 {
				by = " by " + seconds(f.releasedByMs)
			}
			end := ""
			if f.endMs > 0 {
				end = " (" + seconds(f.endMs) + ")"
			}
			add("release", "released_bytes", float64(released), "RSS grew %s in %s to %s, then released %s%s, down to %s at the end%s",
				iec(g), secs, iec(int64(tl.PeakRSSBytes)), iec(released), by, iec(int64(tl.FinalRSSBytes)), end)
		default:
			add("growth", "growth_bytes", float64(g), "RSS grew %s in %s, then levelled off at %s",
				iec(g), secs, iec(int64(tl.PeakRSSBytes)))
		}
	}
}

// diagnoseWalkedChild says the walk's lines of the largest descendant
// walked, of it, where it held more than the program: the program's
// breakdown may be a driver's few MiB.
func diagnoseWalkedChild(p *schema.Process, add addFunc) {
	c := walkedChild(p)
	if c == nil || p.AtPeak != nil && c.AtPeak.Reconciliation.RSSBytes <= p.AtPeak.Reconciliation.RSSBytes {
		return
	}
	// Its walk's lines, said of it: the program's breakdown may be
	// a driver's few MiB.
	of := childName(c)
	// --sites' join of its walk is its image's (SitesProcess).
	cp := &schema.Process{Sites: p.Sites, AtPeak: c.AtPeak}
	if st := p.Sites; st != nil {
		joined := *st
		joined.Unexplained = nil
		for _, pr := range st.Processes {
			if pr.PID == c.PID && pr.Unexplained != nil {
				joined.Unexplained = pr.Unexplained
			}
		}
		cp.Sites = &joined
	}
	diagnoseWalk(cp, c.AtPeak, func(topic, metric string, value float64, format string, args ...any) {
		add("descendant-"+topic, metric, value, "in %s, the largest descendant walked: "+format, append([]any{of}, args...)...)
	})
}

// addFunc adds a finding: its topic, its figure (metric, value) and its
// sentence.
type addFunc = func(topic, metric string, value float64, format string, args ...any)

// largestChild is the descendant with the highest peak; nil when none.
func largestChild(p *schema.Process) *schema.Child {
	var top *schema.Child
	for i := range p.Children {
		c := &p.Children[i]
		if top == nil || childPeak(c) > childPeak(top) {
			top = c
		}
	}
	return top
}

// descendantPeaked is the largest descendant where its peak, as last
// read, is within 2 % of wait4's maxrss (or above it: a descendant not
// waited for), so that maxrss is its; else nil.
func descendantPeaked(p *schema.Process) *schema.Child {
	c := largestChild(p)
	if c == nil || 100*float64(childPeak(c)) < 98*float64(p.RusageMaxRSSBytes) {
		return nil
	}
	return c
}

// walkedChild is the descendant with a walk (AtPeak); nil when none.
func walkedChild(p *schema.Process) *schema.Child {
	for i := range p.Children {
		if p.Children[i].AtPeak != nil {
			return &p.Children[i]
		}
	}
	return nil
}

// childPeak is a descendant's peak RSS: VmHWM as last read, or the
// largest RSS read where that is higher (it cannot be, but a reading of
// status between the two fields' updates can).
func childPeak(c *schema.Child) uint64 { return max(c.VmHWMBytes, c.PeakRSSBytes) }

// childName names a descendant in a sentence: its program's base name
// and its pid ("cc1 (pid 4243)"), or its pid alone.
func childName(c *schema.Child) string {
	if len(c.Command) == 0 || c.Command[0] == "" {
		return fmt.Sprintf("pid %d", c.PID)
	}
	return fmt.Sprintf("%s (pid %d)", filepath.Base(c.Command[0]), c.PID)
}

// diagnoseChildren says what the descendants held (--children): the
// largest one by its peak, against the process's own, and those that
// lived between two reads unseen, which wait4's maxrss may still betray
// (exec: it is the largest peak of the program and the descendants it
// waited for).
func diagnoseChildren(p *schema.Process, add func(topic, metric string, value float64, format string, args ...any)) {
	own := max(p.VmHWMBytes, p.Timeline.PeakRSSBytes)
	every := interval(p.IntervalMs)
	if c := largestChild(p); c != nil {
		rel := "above"
		if childPeak(c) < own {
			rel = "below"
		}
		of := fmt.Sprintf("the largest of its %d descendants seen", len(p.Children))
		if len(p.Children) == 1 {
			of = "its one descendant seen"
		}
		add("children", "descendant_peak_rss_bytes", float64(childPeak(c)),
			"%s, %s, peaked at %s (VmHWM as last read, %s the process's own %s); the tree's summed RSS peaked at %s",
			of, childName(c), iec(int64(childPeak(c))), rel, iec(int64(own)), iec(int64(p.TreePeakRSSBytes)))
	}
	seenTop := max(own, p.DescendantPeakRSSBytes)
	hidden := p.RusageMaxRSSBytes > seenTop && 100*(p.RusageMaxRSSBytes-seenTop) > descendantPct*seenTop && !p.ForkImage()
	maxrss := ""
	if hidden {
		maxrss = fmt.Sprintf("; wait4's maxrss says one of them peaked at %s, above all the probe saw", iec(int64(p.RusageMaxRSSBytes)))
	}
	switch {
	case p.DescendantsMissed > 0:
		add("children", "descendants_missed", float64(p.DescendantsMissed),
			"at least %d descendants lived and were reaped between two reads (every %s) unseen: their parents' counts of their children's faults rose with no child seen gone; their peaks are not in the table%s",
			p.DescendantsMissed, every, maxrss)
	case hidden:
		add("children", "rusage_maxrss_bytes", float64(p.RusageMaxRSSBytes),
			"wait4's maxrss %s is above every peak read (the program's own %s, its descendants' %s): a descendant it waited for peaked after the last read of it, or lived between two reads (every %s) unseen",
			iec(int64(p.RusageMaxRSSBytes)), iec(int64(own)), iec(int64(p.DescendantPeakRSSBytes)), every)
	case len(p.Children) == 0:
		add("children", "descendants_missed", 0, "no descendant was seen (read every %s) and none was missed that its parent waited for", every)
	}
}

// peakGapPct is how far, in percent of the peak, the RSS of the walk
// behind the breakdown may sit below the peak before the diagnosis says
// that the breakdown is not of the peak.
const peakGapPct = 10

// diagnoseGap says where the breakdown (the highest walk) is not of the
// peak: how far below it, in bytes and in time, so that its parts are not
// read as the peak's. The peak is VmHWM (the kernel's, exact), at the
// timeline's peak time where the sampler saw it, before the attach where
// the sampler never came near it (attach), between two samples otherwise.
func diagnoseGap(p *schema.Process, add func(topic, metric string, value float64, format string, args ...any)) {
	w := p.AtPeak
	peak := max(p.VmHWMBytes, p.Timeline.PeakRSSBytes)
	walked := uint64(max(w.Reconciliation.RSSBytes, 0))
	if peak <= walked {
		return
	}
	gap := peak - walked
	if gap <= 1<<20 || 100*gap <= peakGapPct*peak {
		return
	}
	sampled := p.Timeline.PeakRSSBytes
	when := ""
	switch {
	case 100*(peak-sampled) <= peakGapPct*peak:
		// The timeline saw the peak (or near it): its time is known.
		dt := w.TMs - p.Timeline.PeakAtMs
		rel := fmt.Sprintf("%s after it", seconds(dt))
		if dt < 0 {
			rel = fmt.Sprintf("%s before it", seconds(-dt))
		}
		when = fmt.Sprintf(" at %s (the walk came %s)", seconds(p.Timeline.PeakAtMs), rel)
	case p.Mode == schema.ModeAttach:
		when = fmt.Sprintf(" (VmHWM), reached before the attach: the watch itself saw at most %s", iec(int64(sampled)))
	default:
		when = fmt.Sprintf(" (VmHWM), reached between two samples: the timeline saw at most %s", iec(int64(sampled)))
	}
	add("peak-walk", "peak_walk_gap_bytes", float64(gap),
		"the breakdown is of the walk at %s, RSS %s: %s (%.0f %%) below the peak of %s%s; what the peak held beyond it is not broken down",
		seconds(w.TMs), iec(int64(walked)), iec(int64(gap)), 100*float64(gap)/float64(peak), iec(int64(peak)), when)
}

// diagnoseWalk says what the parts of the walk s of p mean: stacks,
// arenas, heaps, what nothing names, and the rest of the mappings.
func diagnoseWalk(p *schema.Process, s *schema.Snapshot, add addFunc) {
	w := walkView{p: p, s: s, r: s.Reconciliation}
	w.diagnoseStacks(add)
	w.diagnoseArenas(add)
	w.diagnoseHeaps(add)
	w.diagnoseUnexplained(add)
	w.diagnoseMappedRest(add)
}

// walkView is a walk as the diagnosis reads it: the process, the walk
// and its reconciliation.
type walkView struct {
	p *schema.Process
	s *schema.Snapshot
	r schema.Reconciliation
}

// part is the reconciliation's part of that name; zero when none.
func (w walkView) part(name string) schema.ReconciliationPart {
	for _, x := range w.r.Parts {
		if x.Name == name {
			return x
		}
	}
	return schema.ReconciliationPart{}
}

// share is b in percent of the walk's RSS; 0 without one.
func (w walkView) share(b int64) float64 {
	if w.r.RSSBytes == 0 {
		return 0
	}
	return 100 * float64(b) / float64(w.r.RSSBytes)
}

// diagnoseStacks says what the thread stacks reserve against what they hold.
func (w walkView) diagnoseStacks(add addFunc) {
	r := w.r
	// Thread stacks: address space against memory.
	if n := r.PthreadStacks; n >= 2 {
		res, resv := r.ThreadStackResidentBytes, r.ThreadStackReservedBytes
		switch {
		case resv >= 64<<20 && res*10 < resv:
			add("stacks", "thread_stack_reserved_bytes", float64(resv),
				"%d thread stacks reserve %s (VSZ) and hold %s resident: shrinking them saves address space, not memory", n, iec(resv), iec(res))
		case res*4 >= resv && res > 16<<20:
			add("stacks", "thread_stack_resident_bytes", float64(res),
				"%d thread stacks hold %s resident of %s reserved: the threads use deep stacks (recursion, large locals)", n, iec(res), iec(resv))
		default:
			add("stacks", "thread_stack_reserved_bytes", float64(resv),
				"%d thread stacks reserve %s and hold %s resident", n, iec(resv), iec(res))
		}
	}
}

// diagnoseArenas says what glibc's arenas reserve and hold, and whether
// MALLOC_ARENA_MAX matters.
func (w walkView) diagnoseArenas(add addFunc) {
	s := w.s
	// glibc's arenas.
	if a := w.part("c.malloc.arenas"); a.Count > 0 {
		limit := fmt.Sprintf("glibc's default limit on %d CPUs is %d with the main arena", s.CPUs, s.GlibcArenaLimit)
		cap := "MALLOC_ARENA_MAX would cap them"
		if s.MallocArenaMax != "" {
			cap = "MALLOC_ARENA_MAX=" + s.MallocArenaMax + " is set"
			limit = ""
		}
		text := fmt.Sprintf("%d malloc arenas reserve %s, %s resident", a.Count, iec(a.ReservedBytes), iec(a.Bytes))
		if a.Count == 1 {
			text = fmt.Sprintf("1 malloc arena reserves %s, %s resident", iec(a.ReservedBytes), iec(a.Bytes))
		}
		if limit != "" {
			text += " (" + limit + ")"
		}
		atLimit := a.Count+1 >= s.GlibcArenaLimit && s.MallocArenaMax == ""
		if atLimit {
			text += ": at the limit, threads now share arenas"
		}
		switch advice := w.arenaCapAdvice(a); {
		case s.MallocArenaMax != "":
			add("arenas", "glibc_arenas", float64(a.Count), "%s: %s", text, cap)
		case advice != "":
			add("arenas", "glibc_arenas", float64(a.Count), "%s: %s", text, advice)
		default:
			add("arenas", "glibc_arenas", float64(a.Count), "%s", text)
		}
	}
}

// arenaMaterialBytes is the least resident memory that advice must save
// to be given (with arenaMaterialPct of RSS): below it, following the
// advice changes nothing anyone would measure.
const (
	arenaMaterialBytes = 16 << 20
	arenaMaterialPct   = 10
)

// arenaCapAdvice is the advice to cap the arenas (MALLOC_ARENA_MAX), or
// "" where following it would not save a material amount. A cap saves at
// most what the other arenas hold free but resident: with --sites, that
// figure (less twice its standard error), when it is at least
// arenaMaterialBytes and arenaMaterialPct of RSS; without, only the
// arenas' resident bytes bound it, and where those are material the line
// says how to measure the free part instead of advising a cap. (Before, the
// cap was advised for node's 5 arenas at 18.3 MiB resident, and for a Go
// program's at 16 KiB.)
func (w walkView) arenaCapAdvice(a schema.ReconciliationPart) string {
	material := func(b int64) bool { return b >= arenaMaterialBytes && w.share(b) >= arenaMaterialPct }
	if fr := w.arenaFree(); fr != nil {
		o := fr.Arenas[1]
		free := o.FreeResidentBytes - 2*o.InUseSEBytes
		if !material(free) {
			return ""
		}
		return fmt.Sprintf("they hold %s free but resident (%.0f %% of RSS, --sites at the %s walk, %.2f s); MALLOC_ARENA_MAX=2 would let threads share the main arena and save up to that much",
			iec(free), w.share(free), fr.At, fr.AtMs/1000)
	}
	if !material(a.Bytes) {
		return ""
	}
	return "probe exec --sites measures how much of it is free, the most a cap on the arenas could save"
}

// arenaFree is --sites' split of the arenas for this process, with its
// other arenas' row; nil where there is none.
func (w walkView) arenaFree() *schema.SitesFragmentation {
	st := w.p.Sites
	if st == nil || st.Fragmentation == nil || len(st.Fragmentation.Arenas) < 2 || st.Fragmentation.Arenas[1].Arena != "others" {
		return nil
	}
	return st.Fragmentation
}

// diagnoseHeaps says what the main heap, CPython's pools, glibc's large
// blocks and a Go runtime hold where they are a tenth of RSS or more.
func (w walkView) diagnoseHeaps(add addFunc) {
	p := w.p
	if b := w.part("c.malloc.brk"); w.share(b.Bytes) >= 10 {
		add("heap", "brk_resident_bytes", float64(b.Bytes), "the main malloc heap ([heap]) holds %s resident, %.0f %% of RSS", iec(b.Bytes), w.share(b.Bytes))
	}
	if py := w.part("python.obmalloc"); w.share(py.Bytes) >= 10 {
		add("python", "python_obmalloc_resident_bytes", float64(py.Bytes),
			"CPython's small-object allocator holds %s resident in %d pools, %.0f %% of RSS: Python's objects of up to 512 bytes (dicts, ints, short strings, frames); tracemalloc names the lines that made them",
			iec(py.Bytes), py.Count, w.share(py.Bytes))
	}
	if m := w.part("c.malloc.mmap"); w.share(m.Bytes) >= 10 {
		text := fmt.Sprintf("%d large malloc blocks reserve %s and hold %s resident", m.Count, iec(m.ReservedBytes), iec(m.Bytes))
		if m.Count == 1 {
			text = fmt.Sprintf("1 large malloc block reserves %s and holds %s resident", iec(m.ReservedBytes), iec(m.Bytes))
		}
		who := "--sites names who allocated them"
		if p.Sites != nil {
			who = "the sites below name who allocated them"
		}
		add("large", "malloc_mmap_resident_bytes", float64(m.Bytes),
			"%s, %.0f %% of RSS: glibc maps a block of 128 KiB and more on its own, outside its heaps; %s",
			text, w.share(m.Bytes), who)
	}

	// A Go program.
	if p.Go != nil {
		g := w.part("go.runtime.anon")
		add("go", "go_anon_resident_bytes", float64(g.Bytes),
			"a Go program (%s, %s): %s resident in its anonymous mappings is Go's heap and runtime, which from outside cannot be split further; --pprof URL fetches its heap profile at the peak",
			p.Go.GoVersion, p.Go.Path, iec(g.Bytes))
	}
}

// diagnoseUnexplained says what no source names, and where --sites
// found some of it.
func (w walkView) diagnoseUnexplained(add addFunc) {
	p := w.p
	r := w.r
	// What nothing names.
	if u := r.UnexplainedBytes; u > 1<<20 && w.share(u) >= 5 {
		where := ""
		if len(r.UnexplainedMappings) > 0 {
			m := r.UnexplainedMappings[0]
			where = fmt.Sprintf(" (the largest: %#x-%#x, %s resident)", m.Start, m.End, iec(m.ResidentBytes))
		}
		why := "another allocator's or runtime's heap, or glibc's large blocks where their headers could not be read"
		if p.Sites == nil {
			why += "; probe exec --sites names who mapped them"
		}
		if su := sitesUnexplained(p); su != nil && len(su.Sites) > 0 {
			// The join's figures, as its table prints them: the
			// program's own mappings and the heap blocks in use there.
			found := su.MappedBytes + su.HeapBytes
			in := " in mappings the process made itself"
			switch {
			case su.HeapBytes > 0 && su.MappedBytes > 0:
				in = fmt.Sprintf(": %s in heap blocks in use (malloc) and %s in mappings the process made itself", iec(su.HeapBytes), iec(su.MappedBytes))
			case su.HeapBytes > 0:
				in = " in heap blocks in use (malloc)"
			}
			why = fmt.Sprintf("--sites finds %s of it (%.0f %%)%s, the most by %s (%s)",
				iec(found), pct(found, su.UnexplainedBytes), in, su.Sites[0].Function, iec(su.Sites[0].ResidentBytes))
		}
		add("unexplained", "unexplained_bytes", float64(u),
			"%s resident (%.0f %% of RSS) is in anonymous mappings no source names%s: %s", iec(u), w.share(u), where, why)
	}
}

// diagnoseMappedRest says what GPU driver mappings, files and shared
// memory hold, and an address space far above the resident set.
func (w walkView) diagnoseMappedRest(add addFunc) {
	r := w.r
	if g := w.part("gpu.driver"); g.Count > 0 {
		add("gpu", "gpu_driver_resident_bytes", float64(g.Bytes), "%d GPU driver mappings reserve %s, %s resident (pinned host memory and device apertures)",
			g.Count, iec(g.ReservedBytes), iec(g.Bytes))
	}
	if f := w.part("file.mapped"); w.share(f.Bytes) >= 10 && len(r.Files) > 0 {
		top := r.Files[0]
		add("files", "file_resident_bytes", float64(f.Bytes), "files (code, libraries, mapped data) hold %s resident, %.0f %% of RSS; the largest is %s (%s)",
			iec(f.Bytes), w.share(f.Bytes), top.Path, iec(top.ResidentBytes+top.COWBytes))
	}
	if sh := w.part("shmem"); w.share(sh.Bytes) >= 10 {
		add("shmem", "shmem_resident_bytes", float64(sh.Bytes), "shared memory holds %s resident, %.0f %% of RSS (counted in every process that maps it; PSS divides it)",
			iec(sh.Bytes), w.share(sh.Bytes))
	}
	if r.VSZBytes > 1<<30 && r.VSZBytes > 4*r.RSSBytes {
		var big []string
		for _, x := range r.Parts {
			if x.ReservedBytes-x.Bytes > r.VSZBytes/10 {
				big = append(big, fmt.Sprintf("%s %s", x.Name, iec(x.ReservedBytes)))
			}
		}
		text := fmt.Sprintf("VSZ %s is %.0f× RSS %s: address space reserved, not memory used", iec(r.VSZBytes), float64(r.VSZBytes)/float64(max(r.RSSBytes, 1)), iec(r.RSSBytes))
		if len(big) > 0 {
			text += " (" + strings.Join(big, ", ") + ")"
		}
		add("vsz", "vsz_bytes", float64(r.VSZBytes), "%s", text)
	}
}

// iec formats bytes in the report's text and the diagnosis: "504 MiB",
// "1.9 MiB", "12 KiB" (table.FormatBytesShort).
func iec(b int64) string { return table.FormatBytesShort(b) }

// idleGPUPct is the mean utilization below which a GPU is said to wait on
// its host: note 003's trainer ran its GPU at 10 %.
const idleGPUPct = 30

// ownAboveDeviceSlackPct is how far the process's own mean SM utilization
// may exceed the device-wide mean before diagnoseGPU takes it for a mean
// over its bursts only: the two come from different NVML sample windows
// and are rounded to whole percents.
const ownAboveDeviceSlackPct = 5

// hostSyncHint is what to look for when the GPU waits on the host.
const hostSyncHint = "look for a host–device sync per step or per token (probe decode measures what one costs)"

// diagnoseGPU says what NVML's readings of the process mean: its device
// memory, and whether the GPUs it used were kept busy. The process's own
// SM utilization is preferred where NVML gave it: on a GPU that other
// processes share, the device-wide figure counts their kernels too, and a
// process whose own share is low while the device is busy waits on those
// tenants rather than on its host. Without it, the device-wide figure is
// what there is, and the finding says so.
func diagnoseGPU(g *schema.ProcessGPU, add func(topic, metric string, value float64, format string, args ...any)) {
	if g.Samples > 0 {
		add("gpu", "gpu_peak_bytes", float64(g.PeakBytes), "on the GPU, NVML charged the process up to %s (%s at the last of %d readings, every %.0f ms): device memory with the CUDA context and the libraries' workspaces, not only its own allocations",
			iec(g.PeakBytes), iec(g.FinalBytes), g.Samples, g.IntervalMs)
	}
	// The process's own share of the GPU's time cannot exceed the whole
	// GPU's. Where its mean does, by more than NVML's rounding, it is a
	// mean over the readings that had a sample of it: NVML keeps samples
	// only of processes that did something, so a period in which the
	// process sat idle, alone on the GPU, gave no sample and no 0, and the
	// mean covers its bursts only (a trainer busy 0.5 s in every 2.5 s
	// reads 80 % alone, 16 % device-wide). The device-wide figure is then
	// the honest one.
	own := g.MeanProcessSMUtilPct
	if own != nil && g.MeanUtilPct != nil && *own > *g.MeanUtilPct+ownAboveDeviceSlackPct {
		own = nil
	}
	if own != nil {
		u := *own
		device := ""
		if g.MeanUtilPct != nil {
			device = fmt.Sprintf("; the GPUs as a whole, every process's kernels: %.0f %%", *g.MeanUtilPct)
		}
		switch {
		case u >= idleGPUPct:
			add("gpu", "process_sm_util_pct", u, "its own kernels kept the GPUs it used busy %.0f %% of the time on average (NVML's per-process SM utilization%s)", u, device)
		case g.MeanUtilPct != nil && *g.MeanUtilPct >= idleGPUPct:
			add("gpu", "process_sm_util_pct", u, "its own kernels kept the GPUs it used busy %.0f %% of the time on average, while the GPUs as a whole were busy %.0f %% (NVML, per process and device-wide): other processes' kernels share the GPU, so it may wait on them as much as on its host",
				u, *g.MeanUtilPct)
		default:
			add("gpu", "process_sm_util_pct", u, "its own kernels kept the GPUs it used busy %.0f %% of the time on average (NVML's per-process SM utilization%s): the GPU waits on the host; %s", u, device, hostSyncHint)
		}
		return
	}
	if g.MeanUtilPct == nil {
		return
	}
	u := *g.MeanUtilPct
	bursts := ""
	if g.MeanProcessSMUtilPct != nil && own == nil {
		bursts = fmt.Sprintf("; its own kernels' %.0f %% is a mean over the readings in which NVML had a sample of it, its bursts only", *g.MeanProcessSMUtilPct)
	}
	if u < idleGPUPct {
		add("gpu", "gpu_util_pct", u, "the GPUs it used were busy %.0f %% of the time on average (NVML, device-wide%s): the GPU waits on the host; %s", u, bursts, hostSyncHint)
		return
	}
	if bursts != "" {
		add("gpu", "gpu_util_pct", u, "the GPUs it used were busy %.0f %% of the time on average (NVML, device-wide%s)", u, bursts)
		return
	}
	add("gpu", "gpu_util_pct", u, "the GPUs it used were busy %.0f %% of the time on average (NVML, device-wide)", u)
}

// diagnoseSites says where --sites saw mostly mappings: the program (or
// a runtime in it) makes its objects in memory it maps itself, and the
// sites name who mapped, not who allocated each object (rustc's
// jemalloc: 44 MiB in pages_map; the JVM's heap, V8's).
func diagnoseSites(st *schema.Sites, add func(topic, metric string, value float64, format string, args ...any)) {
	diagnoseMapped("sites-mapped", "", st.PeakInUseBytes, st.PeakMappedBytes, st.TopPeak, add)
	// The largest image, where it is not the headline's (a driver's
	// cc1plus: GCC's garbage-collected pages).
	if big := largestImage(st); big != nil && len(big.TopPeak) > 0 {
		of := fmt.Sprintf("in %s (pid %d), the largest process image: ", filepath.Base(big.Executable), big.PID)
		diagnoseMapped("sites-mapped-largest", of, big.PeakInUseBytes, big.PeakMappedBytes, big.TopPeak, add)
	}
}

// diagnoseMapped says where mappings a program made itself are most of
// what was in use at its peak (peak, mapped of it; top its sites then);
// of leads the sentence where the program is not the headline's.
func diagnoseMapped(topic, of string, peak, mapped int64, top []schema.Site, add func(topic, metric string, value float64, format string, args ...any)) {
	if mapped < 1<<20 || 2*mapped <= peak {
		return
	}
	by := ""
	for _, s := range top {
		if s.Mapped {
			by = ", the most by " + s.Function
			break
		}
	}
	add(topic, "sites_peak_mapped_bytes", float64(mapped), "%s%s of the %s in use at the sites' peak (%.0f %%) are mappings the program made itself%s: an allocator or runtime of its own (CPython's obmalloc arenas, a JVM's heap, V8's, GCC's garbage-collected pages, a jemalloc linked in) makes its objects in them, which --sites does not see one by one",
		of, iec(mapped), iec(peak), pct(mapped, peak), by)
}

// seconds formats milliseconds as seconds: "0.05 s", "40 s".
func seconds(ms float64) string {
	if ms < 10000 {
		return fmt.Sprintf("%.2f s", ms/1000)
	}
	return fmt.Sprintf("%.0f s", ms/1000)
}

// sitesUnexplained is --sites' join with the unexplained memory of the
// walk the breakdown is of (the peak walk), else nil.
func sitesUnexplained(p *schema.Process) *schema.SitesUnexplained {
	if p.Sites == nil || p.Sites.Unexplained == nil || p.AtPeak == nil || p.Sites.Unexplained.At != "peak" || p.Sites.Unexplained.AtMs != p.AtPeak.TMs {
		return nil
	}
	return p.Sites.Unexplained
}
