package process

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"memprobe/internal/symname"
	"memprobe/internal/table"
	"memprobe/schema"
)

// siteLine is a site as the report's tables show it: its function, file
// and line, and three of its callers.
func siteLine(fn, file string, line int, stack []string) string {
	s := symname.Short(fn)
	if file != "" {
		s += fmt.Sprintf(" (%s:%d)", file, line)
	}
	if len(stack) > 1 {
		s += " ← " + strings.Join(symname.ShortAll(stack[1:min(len(stack), 4)]), " ← ")
	}
	return s
}

// shownImages are the process images the report lists one by one: all of
// them up to maxImages, else the program's own and the largest by peak in
// use up to that many.
func shownImages(st *schema.Sites) []bool {
	shown := make([]bool, len(st.Processes))
	if len(st.Processes) <= maxImages {
		for i := range shown {
			shown[i] = true
		}
		return shown
	}
	order := make([]int, len(st.Processes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(st.Processes[b].PeakInUseBytes, st.Processes[a].PeakInUseBytes)
	})
	n := 0
	for i, pr := range st.Processes {
		if pr.PID == st.PID && n < maxImages {
			shown[i] = true
			n++
		}
	}
	for _, i := range order {
		if n == maxImages {
			break
		}
		if !shown[i] {
			shown[i] = true
			n++
		}
	}
	return shown
}

// maxImages is how many process images the report lists one by one.
const maxImages = 10

// largestImage is the process image of st with the most in use at its
// peak where that is not the headline's program, else nil.
func largestImage(st *schema.Sites) *schema.SitesProcess {
	var big *schema.SitesProcess
	for i := range st.Processes {
		if pr := &st.Processes[i]; pr.PeakInUseBytes > st.PeakInUseBytes && (big == nil || pr.PeakInUseBytes > big.PeakInUseBytes) {
			big = pr
		}
	}
	return big
}

// renderSites prints the sites section of the report.
func renderSites(e *errWriter, heading func(string), render func(*table.Table), st *schema.Sites) {
	if st == nil {
		return
	}
	sitesHeadline(e, heading, st)
	renderSiteList(e, render, "in use at the peak", st.TopPeak, false)
	renderSiteList(e, render, "in use at exit (leaks)", st.TopExit, false)
	renderSiteList(e, render, "temporary allocations", st.TopTemporary, true)
	if len(st.Processes) > 1 {
		renderImages(e, render, st)
	}
	if f := st.Fragmentation; f != nil {
		renderFragmentation(e, render, f, st.RateBytes, "")
	}
	if u := st.Unexplained; u != nil && u.UnexplainedBytes > 0 {
		renderUnexplained(e, render, u, st.Exact, "")
	}
	// A descendant walked (--children): its own arenas and unexplained
	// memory, joined with its image's records.
	for _, pr := range st.Processes {
		who := fmt.Sprintf("%s (pid %d)", filepath.Base(pr.Executable), pr.PID)
		if f := pr.Fragmentation; f != nil {
			renderFragmentation(e, render, f, st.RateBytes, who)
		}
		if u := pr.Unexplained; u != nil && u.UnexplainedBytes > 0 {
			renderUnexplained(e, render, u, st.Exact, who)
		}
	}
}

// sitesHeadline is the sites section's heading and first line: how the
// run was recorded, what was allocated, the peak in use and when, at
// exit, and the temporary blocks.
func sitesHeadline(e *errWriter, heading func(string), st *schema.Sites) {
	how := "every allocation recorded (rate 1): exact"
	if !st.Exact {
		how = fmt.Sprintf("sampled at one per %s allocated on average, scaled: estimates", iec(st.RateBytes))
	}
	heading(fmt.Sprintf("Allocation sites (pid %d; %s)", st.PID, how))
	source := ""
	switch st.PeakSource {
	case "counted":
		source = ", every block counted"
	case "sampled":
		source = ", the largest sampled estimate: biased high"
	}
	n := func(v int64) string { return table.GroupDigits(fmt.Sprint(v)) }
	// nBlocks is "1 block", "2 blocks"; of a kind where given.
	nBlocks := func(v int64, kind ...string) string {
		w := strings.Join(append(kind, "block"), " ")
		if v != 1 {
			w += "s"
		}
		return n(v) + " " + w
	}
	// The library counts bytes, not blocks: the blocks in use are the
	// samples' estimate, and none may have been sampled.
	blocks := func(b, o int64) (in, none string) {
		if o == 0 && b > 0 {
			return "", "none of its blocks sampled"
		}
		return " in " + nBlocks(o), ""
	}
	peakIn, peakNone := blocks(st.PeakInUseBytes, st.PeakInUseObjects)
	if peakNone != "" {
		source += "; " + peakNone
	}
	exitIn, exitNone := blocks(st.ExitInUseBytes, st.ExitInUseObjects)
	if exitNone != "" {
		exitIn = " (" + exitNone + ")"
	}
	// On the run's clock, as the timeline and the walks: a launcher's
	// execs (pyenv's shims) start the program's image late.
	when := fmt.Sprintf("at %.3f s", (st.ImageStartMs+st.PeakAtMs)/1000)
	if st.ImageStartMs > 10 {
		when += fmt.Sprintf(", %.3f s into its image, which began at %.3f s", st.PeakAtMs/1000, st.ImageStartMs/1000)
	}
	e.line("allocated %s, %s in all; in use at the peak %s%s (%s%s); at exit %s%s; %s (freed before their thread allocated again)",
		nBlocks(st.AllocObjects), iec(st.AllocBytes), iec(st.PeakInUseBytes), peakIn, when, source,
		iec(st.ExitInUseBytes), exitIn, nBlocks(st.TemporaryObjects, "temporary"))
}

// siteCell is a site in a table of sites: siteLine, marked where it
// is a mapping or, in a Python program, a stack with no Python frame (a
// thread without Python state). A site reached by several stacks (an
// allocation wrapper) has the row's figure as its total, and the stack
// shown is its heaviest, with that stack's own figure: printed as one
// line, `_PyObject_Malloc ← clone_combined_dict_keys ← PyDict_Copy`
// beside the wrapper's 174.7 MiB read as a dict copy's, in a script
// that copied none. temp: the table's figure is temporary blocks.
func siteCell(x schema.Site, temp bool) string {
	var s string
	if x.Stacks > 1 {
		own := iec(int64(math.Round(float64(x.Bytes) * x.StackSharePct / 100)))
		if temp {
			own = fmt.Sprintf("%d temporary blocks", int64(math.Round(float64(x.Temporary)*x.StackSharePct/100)))
		}
		s = siteLine(x.Function, x.File, x.Line, nil) + fmt.Sprintf(", over %d stacks; the heaviest, %s (%.0f %%)", x.Stacks, own, x.StackSharePct)
		if len(x.Stack) > 1 {
			s += ": ← " + strings.Join(symname.ShortAll(x.Stack[1:min(len(x.Stack), 4)]), " ← ")
		}
	} else {
		s = siteLine(x.Function, x.File, x.Line, x.Stack)
	}
	if x.NativeOnly {
		s = "[native only] " + s
	}
	if x.Mapped {
		s = "[mmap] " + s
	}
	return s
}

// renderSiteList prints a table of sites, or that there are none; temp:
// sorted by temporary blocks.
func renderSiteList(e *errWriter, render func(*table.Table), title string, rows []schema.Site, temp bool) {
	if len(rows) == 0 {
		e.line("%s: none", title)
		return
	}
	sampled := false
	for _, x := range rows {
		sampled = sampled || x.BytesSE > 0
	}
	cols := []table.Column{{Name: "bytes", Kind: table.Bytes}}
	if temp {
		// Sorted by temporary blocks; bytes and blocks are all the
		// site allocated, temporary or not.
		cols[0].Name = "allocated"
		title += " (allocated: all the site allocated)"
	}
	if sampled {
		cols = append(cols, table.Column{Name: "± (1 s.e.)", Kind: table.Bytes})
		title += " (sampled: ± one standard error; sites closer than about two of it are tied)"
	}
	cols = append(cols, table.Column{Name: "blocks", Kind: table.Int}, table.Column{Name: "temporary", Kind: table.Int}, table.Column{Name: "site"})
	tb := table.New(title, cols...)
	for _, x := range rows {
		if sampled {
			tb.Add(x.Bytes, x.BytesSE, x.Objects, x.Temporary, siteCell(x, temp))
		} else {
			tb.Add(x.Bytes, x.Objects, x.Temporary, siteCell(x, temp))
		}
	}
	render(tb)
}

// renderImages prints the process images a --sites run recorded (a
// wrapper, a launcher and their children), and the sites of the largest
// where that is not the program.
func renderImages(e *errWriter, render func(*table.Table), st *schema.Sites) {
	// A wrapper (sh -c, a launcher) may be the program started while
	// a child does the allocating: each image is listed, and the
	// profiles hold them all (label pid).
	tb := table.New("every process image recorded (the profiles hold them all, by pid)",
		table.Column{Name: "pid"}, table.Column{Name: "parent"}, table.Column{Name: "image"},
		table.Column{Name: "executable"}, table.Column{Name: "peak in use", Kind: table.Bytes}, table.Column{Name: "at exit", Kind: table.Bytes},
		table.Column{Name: "allocations", Kind: table.Int}, table.Column{Name: "ended"})
	shown := shownImages(st)
	var more []schema.SitesProcess
	for i, pr := range st.Processes {
		if !shown[i] {
			more = append(more, pr)
			continue
		}
		tb.Add(pr.PID, pr.PPID, pr.Image, pr.Executable, pr.PeakInUseBytes, pr.ExitInUseBytes, pr.AllocObjects, pr.Ended)
	}
	if len(more) > 0 {
		// A launcher's shells (pyenv's shims: bash and env execs a
		// dozen deep) would fill the table: the smallest are summed.
		var top, exit, allocs int64
		names := map[string]bool{}
		for _, pr := range more {
			top, exit, allocs = max(top, pr.PeakInUseBytes), exit+pr.ExitInUseBytes, allocs+pr.AllocObjects
			names[filepath.Base(pr.Executable)] = true
		}
		tb.Add("", "", "", fmt.Sprintf("%d more (%s): the largest peak, the sums", len(more), strings.Join(slices.Sorted(maps.Keys(names)), ", ")),
			top, exit, allocs, "")
	}
	render(tb)
	// The headline and its sites are the program's; a driver (gcc,
	// a launcher) may leave the memory to a child.
	if big := largestImage(st); big != nil {
		peak := "sites-peak.pb.gz"
		for _, f := range st.Profiles {
			if f.Kind == schema.SitesPeak {
				peak = f.Path
			}
		}
		lead := fmt.Sprintf("the most in use at a peak was in %s (pid %d): %s, against the program's %s; all its sites: go tool pprof -top -tagfocus=pid=%d %s",
			filepath.Base(big.Executable), big.PID, iec(big.PeakInUseBytes), iec(st.PeakInUseBytes), big.PID, peak)
		e.line("%s", lead)
		if len(big.TopPeak) > 0 { // absent in a result from before the field
			renderSiteList(e, render, fmt.Sprintf("in use at the peak of %s, pid %d", filepath.Base(big.Executable), big.PID), big.TopPeak, false)
		}
	}
}

// renderUnexplained prints what of a walk's unexplained memory lies in
// mappings the program (who: "", or a descendant's image, "cc1 (pid
// 12571)") made itself, by site.
func renderUnexplained(e *errWriter, render func(*table.Table), u *schema.SitesUnexplained, exact bool, who string) {
	lead := fmt.Sprintf("unexplained at the %s walk (%.2f s): %s resident in anonymous mappings no source claims", u.At, u.AtMs/1000, iec(u.UnexplainedBytes))
	maker := "the program"
	if who != "" {
		lead = fmt.Sprintf("unexplained in %s at its %s walk (%.2f s): %s resident in anonymous mappings no source claims", who, u.At, u.AtMs/1000, iec(u.UnexplainedBytes))
		maker = who
	}
	if len(u.Sites) == 0 {
		e.line("%s; none of it in a mapping %s made itself that the records hold", lead, maker)
		return
	}
	how := ""
	if !exact {
		how = ", scaled from the sampled ones"
	}
	if u.Estimated {
		how += "; where one covers part of a mapping the walk saw, its resident bytes are shared out by address"
	}
	if u.HeapBytes > 0 {
		// Heap blocks in use there, as the sites' tables count them.
		e.line("%s; %s of it (%.0f %%) in mappings %s made itself (mmap) and %s (%.0f %%) in heap blocks in use (malloc), by the site that made them%s",
			lead, iec(u.MappedBytes), pct(u.MappedBytes, u.UnexplainedBytes), maker, iec(u.HeapBytes), pct(u.HeapBytes, u.UnexplainedBytes), how)
	} else {
		e.line("%s; %s of it (%.0f %%) in mappings %s made itself (mmap), by the site that made them%s",
			lead, iec(u.MappedBytes), pct(u.MappedBytes, u.UnexplainedBytes), maker, how)
	}
	title := "the program's own mappings in it, by site"
	if who != "" {
		title = fmt.Sprintf("the mappings %s made itself, by site", who)
	}
	tb := table.New(title, table.Column{Name: "resident", Kind: table.Bytes}, table.Column{Name: "mapped", Kind: table.Bytes},
		table.Column{Name: "mappings", Kind: table.Int}, table.Column{Name: "site"})
	for i, m := range u.Sites {
		if i == 8 {
			break
		}
		tb.Add(m.ResidentBytes, m.ReservedBytes, m.Mappings, siteLine(m.Function, m.File, m.Line, m.Stack))
	}
	render(tb)
}

// pct is part / whole × 100; 0 for nothing.
func pct(part, whole int64) float64 {
	if whole <= 0 {
		return 0
	}
	return 100 * float64(part) / float64(whole)
}

// fragmentationHeaps is how many heaps the report lists, the main
// arena's first; the rest are summed in one row.
const fragmentationHeaps = 8

// renderFragmentation prints the arenas' split by heap: the brk heap,
// the most resident of the others, the rest in one row, then all (a
// result without heaps, from before they were split: by arena). Sampled,
// each in use has its standard error, and a row whose twice that passes
// its resident bytes has its free share unmeasured ("-"): a program's
// 60 KiB brk heap with no block sampled read 100 % free.
func renderFragmentation(e *errWriter, render func(*table.Table), f *schema.SitesFragmentation, rate int64, who string) {
	exact := rate <= 1
	title := fmt.Sprintf("glibc arenas at the %s walk (%.2f s): resident, in use (sites), free but resident", f.At, f.AtMs/1000)
	if who != "" {
		title = fmt.Sprintf("glibc arenas of %s at its %s walk (%.2f s): resident, in use (sites), free but resident", who, f.At, f.AtMs/1000)
	}
	cols := []table.Column{{Name: "heap"}, {Name: "arena"}, {Name: "resident", Kind: table.Bytes}, {Name: "in use", Kind: table.Bytes}}
	if !exact {
		cols = append(cols, table.Column{Name: "± (1 s.e.)", Kind: table.Bytes})
		title += " (sampled: ± one standard error; the free share is - where twice it passes the resident bytes)"
	}
	cols = append(cols, table.Column{Name: "free but resident", Kind: table.Bytes}, table.Column{Name: "free", Kind: table.Percent, Decimals: 1})
	tb := table.New(title, cols...)
	// measured says whether a row's in use (se its standard error) can
	// split res resident bytes.
	measured := func(res, se int64) bool { return exact || 2*se <= res }
	add := func(heap, arena string, res, use, se, free int64, freePct float64) {
		cells := []any{heap, arena, res, use}
		if !exact {
			cells = append(cells, se)
		}
		if measured(res, se) {
			cells = append(cells, free, freePct)
		} else {
			cells = append(cells, nil, nil)
		}
		tb.Add(cells...)
	}
	var unmeasured, unmeasuredRes int64
	if len(f.Heaps) == 0 {
		for _, a := range f.Arenas {
			add("", a.Arena, a.ResidentBytes, a.InUseBytes, a.InUseSEBytes, a.FreeResidentBytes, pct(a.FreeResidentBytes, a.ResidentBytes))
			if !measured(a.ResidentBytes, a.InUseSEBytes) {
				unmeasured, unmeasuredRes = unmeasured+1, unmeasuredRes+a.ResidentBytes
			}
		}
	}
	for _, h := range f.Heaps {
		if !measured(h.ResidentBytes, h.InUseSEBytes) {
			unmeasured, unmeasuredRes = unmeasured+1, unmeasuredRes+h.ResidentBytes
		}
	}
	for _, h := range f.Heaps[:min(len(f.Heaps), fragmentationHeaps)] {
		add(h.Heap, h.Arena, h.ResidentBytes, h.InUseBytes, h.InUseSEBytes, h.FreeResidentBytes, h.FreeResidentPct)
	}
	if rest := f.Heaps[min(len(f.Heaps), fragmentationHeaps):]; len(rest) > 0 {
		var res, use, free int64
		var v float64
		for _, h := range rest {
			res, use, free = res+h.ResidentBytes, use+h.InUseBytes, free+h.FreeResidentBytes
			v += float64(h.InUseSEBytes) * float64(h.InUseSEBytes)
		}
		add(fmt.Sprintf("%d more heaps", len(rest)), "", res, use, int64(math.Sqrt(v)), free, pct(free, res))
	}
	add("all", "", f.ArenaResidentBytes, f.InUseBytes, f.InUseSEBytes, f.FreeResidentBytes, f.FreeResidentPct)
	render(tb)
	allUnmeasured := !measured(f.ArenaResidentBytes, f.InUseSEBytes)
	if unmeasured > 0 && !allUnmeasured {
		heaps := fmt.Sprintf("%d heaps", unmeasured)
		if unmeasured == 1 {
			heaps = "1 heap"
		}
		e.line("%s (%s resident) held too few sampled blocks to split (one sample per %s allocated; none in use counts as one sample's worth): --sites-rate 1 splits them exactly",
			heaps, iec(unmeasuredRes), iec(rate))
	}
	var over, beyond int64
	for _, h := range f.Heaps {
		if h.InUseBytes > h.ResidentBytes && measured(h.ResidentBytes, h.InUseSEBytes) {
			over, beyond = over+1, beyond+h.InUseBytes-h.ResidentBytes
		}
	}
	if over > 0 {
		// Sampled, a heap's in use is an estimate: a few samples a heap
		// (1 MiB a thread at 512 KiB) put it well above or below.
		why := "blocks whose pages were never written (malloc'd and not touched, or calloc'd from fresh pages)"
		if !exact {
			why = "the sampled estimate of a heap's blocks (a few samples a heap put it well above or below), or " + why
		}
		heaps := fmt.Sprintf("%d heaps", over)
		if over == 1 {
			heaps = "1 heap"
		}
		e.line("in use passes resident in %s, by %s: %s; their free but resident bytes read 0 and are at least that", heaps, iec(beyond), why)
	}
	if allUnmeasured {
		e.line("free but resident: not measured: the arenas' %s resident held too few sampled blocks to split (one sample per %s allocated; none in use counts as one sample's worth): --sites-rate 1 splits them exactly",
			iec(f.ArenaResidentBytes), iec(rate))
		return
	}
	share := fmt.Sprintf("%.1f %%", f.FreeResidentPct)
	if !exact && f.ArenaResidentBytes > 0 {
		share += fmt.Sprintf(" ± %.1f", pct(f.InUseSEBytes, f.ArenaResidentBytes))
	}
	e.line("free but resident: %s of the arenas' resident bytes (fragmentation and the allocator's own); a block is in the heap its address falls in, a heap's arena is named where its header could be read", share)
}
