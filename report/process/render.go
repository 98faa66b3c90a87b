package process

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"memprobe/internal/table"
	"memprobe/report"
	"memprobe/schema"
)

// Render writes a process result as text or markdown: the run in one
// line, the timeline, the reconciliation at the peak, stacks, arenas,
// anonymous mappings by size and files, the diagnosis, the cost.
//
// In markdown every block (a line of text, a table with its notes, a
// list, a heading) is set apart by a blank line: GitHub's markdown takes a
// line written directly under a table as one more row of it, and one
// under a list as part of the list's last item.
func Render(w io.Writer, r *schema.Result, f table.Format) error {
	p := r.Process
	if p == nil {
		return fmt.Errorf("rendering: not a process result (kind %q)", r.Kind)
	}
	md := f == table.Markdown
	e := &errWriter{w: w, md: md}
	heading := func(s string) {
		if md {
			e.block()
			e.printf("### %s\n", s)
		} else {
			e.printf("\n%s\n", s)
		}
	}
	render := func(t *table.Table) {
		e.block()
		if e.err == nil {
			e.err = t.Render(w, f)
		}
	}

	runLines(e, r, md)

	renderTimeline(e, p, heading, render)

	if len(p.Children) > 0 || p.DescendantsMissed > 0 {
		heading("Descendants (--children), by peak RSS")
		renderChildren(e, p, render)
	}

	if p.RusageSource != "" {
		heading("CPU time, page faults, context switches (as /usr/bin/time -v)")
		e.line("%s", countersLine(p))
	}

	if g := p.GPU; g != nil {
		heading("GPU (NVML)")
		renderGPU(e, g)
	}

	if s := p.AtPeak; s != nil {
		renderAtPeak(e, p, s, heading, render)
	}

	if c := walkedChild(p); c != nil {
		s := c.AtPeak
		rec := s.Reconciliation
		heading(fmt.Sprintf("Resident and reserved memory of %s, the largest descendant walked, at its highest walk (%.2f s, RSS %s, VSZ %s)",
			childName(c), s.TMs/1000, iec(rec.RSSBytes), iec(rec.VSZBytes)))
		render(report.ReconciliationTable(rec))
		e.line("%d walks of the descendants, each of the largest at a read of them, at its new highs; this is the highest (the JSON has its files and mappings: children[].at_peak)", p.DescendantWalks)
	}

	renderPyLines(e, heading, render, p.Sites)
	renderSites(e, heading, render, p.Sites)

	renderEnd(e, r, heading)
	return e.err
}

// runLines are the report's first lines: the run (how it ended, the
// language), the peak and, with descendants, the tree's peak.
func runLines(e *errWriter, r *schema.Result, md bool) {
	p := r.Process
	status := "still running"
	switch {
	case p.ExitCode != nil && p.Signal != "":
		status = fmt.Sprintf("killed by %s (status %d)", p.Signal, *p.ExitCode)
		if strings.HasPrefix(p.Signal, "SIG") && *p.ExitCode > 128 {
			status = fmt.Sprintf("killed by %s (signal %d, status %d)", p.Signal, *p.ExitCode-128, *p.ExitCode)
		}
	case p.ExitCode != nil:
		status = fmt.Sprintf("exited with status %d", *p.ExitCode)
	case p.Exited:
		status = "exited"
	}
	lang := "not a Go program"
	if p.Go != nil {
		lang = fmt.Sprintf("a Go program (%s, %s)", p.Go.GoVersion, p.Go.Path)
	}
	cmd := QuoteCommand(p.Command)
	if md {
		cmd = codeSpan(cmd)
	}
	e.line("probe %s: %s (pid %d) %s after %.2f s; %s", p.Mode, cmd, p.PID, status, p.DurationMs/1000, lang)
	e.line("%s", peakLine(r))
	if p.ChildrenWatched || p.TreePeakRSSBytes > 0 {
		e.line("%s", treeLine(p))
	}

}

// renderTimeline writes the timeline: the sampled figures at the start,
// the peak and the end, and how RSS grew.
func renderTimeline(e *errWriter, p *schema.Process, heading func(string), render func(*table.Table)) {
	heading("Timeline")
	tl := p.Timeline
	if tl.Samples == 0 {
		e.line("no samples: the process ended before the first")
		return
	}
	tt := table.New("", table.Column{Name: "figure"}, table.Column{Name: "start", Kind: table.Bytes},
		table.Column{Name: "peak", Kind: table.Bytes}, table.Column{Name: "final", Kind: table.Bytes}, table.Column{Name: "source"})
	tt.Add("RSS", tl.StartRSSBytes, tl.PeakRSSBytes, tl.FinalRSSBytes, "status VmRSS, every sample")
	tt.Add("RSS anon", nil, tl.PeakRssAnonBytes, nil, "status RssAnon, every sample")
	tt.Add("RSS file", nil, tl.PeakRssFileBytes, nil, "status RssFile, every sample")
	tt.Add("RSS shmem", nil, tl.PeakRssShmemBytes, nil, "status RssShmem, every sample")
	tt.Add("VSZ", nil, tl.PeakVSZBytes, tl.FinalVSZBytes, "status VmSize, every sample")
	tt.Add("PSS", nil, tl.PeakPSSBytes, nil, "smaps_rollup Pss, its readings only")
	tt.Add("swap", nil, tl.PeakSwapBytes, nil, "smaps_rollup Swap, its readings only")
	render(tt)
	samples := fmt.Sprintf("%d samples", tl.Samples)
	if tl.Samples == 1 {
		samples = "1 sample"
	}
	e.line("%s every %s over %.2f s; threads at most %d; RSS grew %s, peak at %.2f s, %s in the last quarter",
		samples, interval(p.IntervalMs), p.DurationMs/1000, tl.PeakThreads, iec(tl.GrowthBytes), tl.PeakAtMs/1000, iec(tl.LastQuarterGrowthBytes))
}

// renderAtPeak writes the breakdown of the peak walk s: the
// reconciliation, thread stacks and arenas, anonymous mappings by size,
// files, and the end walk where it is another.
func renderAtPeak(e *errWriter, p *schema.Process, s *schema.Snapshot, heading func(string), render func(*table.Table)) {
	rec := s.Reconciliation
	heading(fmt.Sprintf("Resident and reserved memory at the peak walk (%.2f s, RSS %s, VSZ %s)", s.TMs/1000, iec(rec.RSSBytes), iec(rec.VSZBytes)))
	render(report.ReconciliationTable(rec))
	e.line("thread stacks: %d found, %s reserved, %s guard, %s resident (%d threads, %d stack pointers read; default stack %s)",
		rec.PthreadStacks, iec(rec.ThreadStackReservedBytes), iec(rec.ThreadStackGuardBytes), iec(rec.ThreadStackResidentBytes),
		s.Threads, s.StackPointers, iec(s.ThreadStackDefaultBytes))
	arenaMax := "unset"
	if s.MallocArenaMax != "" {
		arenaMax = s.MallocArenaMax
	}
	e.line("glibc arenas: %d besides the main one; default limit 8 × %d CPUs = %d; MALLOC_ARENA_MAX %s",
		rec.GlibcArenas, s.CPUs, s.GlibcArenaLimit, arenaMax)

	heading("Anonymous mappings by size (all of them, stacks and arenas included)")
	at := table.New("", table.Column{Name: "size"}, table.Column{Name: "mappings", Kind: table.Int},
		table.Column{Name: "reserved", Kind: table.Bytes}, table.Column{Name: "resident", Kind: table.Bytes})
	for _, c := range s.AnonBySize {
		at.Add(c.Class, c.Mappings, c.ReservedBytes, c.ResidentBytes)
	}
	render(at)

	heading("Files by the memory they hold (top 8): clean pages, written pages, .bss")
	ft := table.New("", table.Column{Name: "file"}, table.Column{Name: "resident", Kind: table.Bytes},
		table.Column{Name: "written (cow)", Kind: table.Bytes}, table.Column{Name: ".bss resident", Kind: table.Bytes},
		table.Column{Name: "reserved", Kind: table.Bytes}, table.Column{Name: "mappings", Kind: table.Int})
	for i, fs := range rec.Files {
		if i == 8 {
			break
		}
		ft.Add(fs.Path, fs.ResidentBytes, fs.COWBytes, fs.BSSResidentBytes, fs.ReservedBytes, fs.Mappings)
	}
	render(ft)
	if end := p.End; end != nil && end != s {
		er := end.Reconciliation
		e.line("end walk (%.2f s): RSS %s, VSZ %s, %d stacks (%s reserved, %s resident), %d arenas, unexplained %s",
			end.TMs/1000, iec(er.RSSBytes), iec(er.VSZBytes), er.PthreadStacks, iec(er.ThreadStackReservedBytes),
			iec(er.ThreadStackResidentBytes), er.GlibcArenas, iec(er.UnexplainedBytes))
	}
}

// renderEnd writes the report's end: the diagnosis, what watching cost,
// the files written and the warnings.
func renderEnd(e *errWriter, r *schema.Result, heading func(string)) {
	p := r.Process
	tl := p.Timeline
	heading("Diagnosis")
	if len(p.Diagnosis) == 0 {
		e.item("nothing stands out")
	}
	for _, d := range p.Diagnosis {
		e.item("%s", d.Text)
	}

	heading("Cost")
	o := p.Overhead
	kids := ""
	if p.ChildrenWatched {
		kids = fmt.Sprintf("; reading the descendants %.1f ms (%d walks of them)", o.ChildrenCostMs, p.DescendantWalks)
	}
	e.line("sampler %.1f ms reading /proc over %d samples; %d smaps walks %.1f ms%s; the probe's CPU while the program ran %.1f ms over %.2f s (%.2f %% of one core), after it %.1f ms",
		o.SamplerCostMs, tl.Samples, p.Walks, o.WalkCostMs, kids, o.ProbeCPUMs, p.DurationMs/1000, o.ProbeCPUPct, o.AnalysisCPUMs)
	for _, f := range p.Files {
		e.line("wrote %s", f)
	}
	for _, w := range r.Warnings {
		e.line("warning: %s", w)
	}
}

// peakLine is the report's second line: the peak RSS and where it comes
// from. A program that exited before a second sample has no sampled peak:
// its one sample shows it as execve left it (a few KiB), so the line
// gives wait4's maxrss and says so, as an upper bound where that is the
// probe's own image (forkImage).
func peakLine(r *schema.Result) string {
	p := r.Process
	n := -1 // samples while it lived; unknown without the sampler's part
	if r.Sampler != nil {
		n = r.Sampler.AliveSamples()
	}
	maxrss := iec(int64(p.RusageMaxRSSBytes))
	sampled := "the program exited before the first sample"
	if n > 0 {
		sampled = fmt.Sprintf("the program exited before a second sample, and its one sample, at the start, read %s", iec(int64(p.Timeline.PeakRSSBytes)))
	}
	switch {
	case p.Exited && p.Undersampled(n) && p.RusageMaxRSSBytes > 0 && p.ForkImage():
		return fmt.Sprintf("peak RSS at most %s (wait4's maxrss at exit, no more than the probe's own size when it started the program): %s",
			maxrss, sampled)
	case p.Exited && p.Undersampled(n) && p.RusageMaxRSSBytes > 0:
		return fmt.Sprintf("peak RSS %s (wait4's maxrss at exit): %s", maxrss, sampled)
	case p.Exited && n == 1 && p.Undersampled(n):
		return fmt.Sprintf("peak RSS %s (VmHWM at the one sample: the process exited before a second)", iec(int64(p.VmHWMBytes)))
	case p.VmHWMBytes == 0 && p.RusageMaxRSSBytes > 0:
		return fmt.Sprintf("peak RSS %s (wait4's maxrss at exit; never sampled)", maxrss)
	case p.RusageMaxRSSBytes > 0 && p.PeakAgreementPct != nil && *p.PeakAgreementPct < -descendantPct && !p.ForkImage():
		// The kernel's maxrss is well above the program's own VmHWM: a
		// descendant it waited for peaked higher (ru_maxrss is the
		// largest over them, not the sum). peak_rss_bytes is then that.
		kids := "--children samples the descendants"
		if p.ChildrenWatched {
			kids = "the descendants' own peaks are below"
		}
		return fmt.Sprintf("peak RSS %s (wait4's maxrss at exit: the program or a descendant it waited for, whichever peaked higher; the program's own VmHWM as last sampled is %s, %+.2f %%; %s)",
			maxrss, iec(int64(p.VmHWMBytes)), *p.PeakAgreementPct, kids)
	case p.RusageMaxRSSBytes > 0 && p.PeakAgreementPct != nil:
		return fmt.Sprintf("peak RSS %s (VmHWM as last sampled) against %s (wait4's maxrss at exit): %+.2f %%",
			iec(int64(p.VmHWMBytes)), maxrss, *p.PeakAgreementPct)
	}
	return fmt.Sprintf("peak RSS %s (VmHWM as last sampled)", iec(int64(p.VmHWMBytes)))
}

// treeLine is the headline of a watch with its descendants: the tree's
// peak, and the largest descendant's.
func treeLine(p *schema.Process) string {
	n := fmt.Sprintf("%d descendants seen", len(p.Children))
	if len(p.Children) == 1 {
		n = "1 descendant seen"
	}
	if p.DescendantsMissed > 0 {
		n += fmt.Sprintf(", at least %d more missed", p.DescendantsMissed)
	}
	if c := largestChild(p); c != nil {
		n += fmt.Sprintf("; the largest, %s, peaked at %s", childName(c), iec(int64(childPeak(c))))
	}
	return fmt.Sprintf("tree peak RSS %s: the process and its live descendants summed at one moment (%s)", iec(int64(p.TreePeakRSSBytes)), n)
}

// maxChildRows is how many descendants the report's table lists.
const maxChildRows = 12

// renderChildren writes the descendants, the largest peaks first.
func renderChildren(e *errWriter, p *schema.Process, render func(*table.Table)) {
	kids := slices.Clone(p.Children)
	slices.SortStableFunc(kids, func(a, b schema.Child) int { return cmp.Compare(childPeak(&b), childPeak(&a)) })
	t := table.New("", table.Column{Name: "pid"}, table.Column{Name: "parent"},
		table.Column{Name: "command"}, table.Column{Name: "peak RSS", Kind: table.Bytes}, table.Column{Name: "lifetime"}, table.Column{Name: "state"})
	for i, c := range kids {
		if i == maxChildRows {
			break
		}
		state := "running"
		if c.Exited {
			state = "exited"
		}
		cmd := QuoteCommand(c.Command)
		if r := []rune(cmd); len(r) > 60 {
			cmd = string(r[:59]) + "…"
		}
		life := seconds(c.LifetimeMs)
		if c.LifetimeMs < 1000 {
			life = fmt.Sprintf("%.0f ms", c.LifetimeMs)
		}
		t.Add(strconv.Itoa(c.PID), strconv.Itoa(c.PPID), cmd, childPeak(&c), life, state)
	}
	render(t)
	if n := len(kids) - maxChildRows; n > 0 {
		e.line("and %d more (the JSON lists them all)", n)
	}
	e.line("peak RSS is VmHWM as last read, every %s; lifetime from the start time in its stat to the last read that saw it", interval(p.IntervalMs))
}

// countersLine is the figures /usr/bin/time -v prints, and where they
// come from.
func countersLine(p *schema.Process) string {
	src := "wait4's rusage at exit: the program and the descendants it waited for, as time -v reads them"
	if p.RusageSource == schema.RusageProc {
		src = "/proc/PID/stat and its threads' status at the last read: the process's own since it started, its children not counted; context switches of its live threads only"
	}
	return fmt.Sprintf("user %.2f s, system %.2f s; page faults: %d major, %d minor; context switches: %d voluntary, %d involuntary (%s)",
		p.RusageUserMs/1000, p.RusageSystemMs/1000, p.RusageMajorFaults, p.RusageMinorFaults,
		p.RusageVoluntaryContextSwitches, p.RusageInvoluntaryContextSwitches, src)
}

// descendantPct is how far, in percent, the program's last sampled VmHWM
// may sit below wait4's maxrss before the peak is taken for a
// descendant's: VmHWM is read every tenth sample, so a peak in the last
// tenth of a second is missed by a few percent at most.
const descendantPct = 5

// interval formats the sampling period: "10 ms", and a long one as Go
// writes a duration ("1h0m0s", not "3600000 ms").
func interval(ms float64) string {
	if ms < 1000 {
		return fmt.Sprintf("%.0f ms", ms)
	}
	return time.Duration(ms * float64(time.Millisecond)).String()
}

// QuoteCommand joins a command line for one line of a report: an
// argument that is empty or holds a space, a quote, a backslash, a
// dollar, a backtick or a character that does not print (a newline
// would break the line) is quoted as Go quotes a string; the others are
// as they are, so "sh -c \"exec python3 late.py\"" reads as it was typed.
func QuoteCommand(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsFunc(a, func(r rune) bool {
			return unicode.IsSpace(r) || !unicode.IsPrint(r) || strings.ContainsRune("\"'\\$`", r)
		}) {
			a = strconv.Quote(a)
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// codeSpan is s as a markdown code span: fenced by one more backtick than
// the longest run in it, padded where it starts or ends with one.
func codeSpan(s string) string {
	run, longest := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if longest > 0 {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

// renderGPU writes NVML's view of the process in a line or two.
func renderGPU(e *errWriter, g *schema.ProcessGPU) {
	if g.Samples == 0 {
		why := g.NoEntryReason
		if why == "" {
			why = g.FirstError
		}
		e.line("no GPU memory figure for the process in %d readings (every %.0f ms): %s", g.NoEntrySamples+g.Errors, g.IntervalMs, why)
		return
	}
	e.line("device memory NVML charges to the process: peak %s, final %s over %d readings every %.0f ms",
		iec(g.PeakBytes), iec(g.FinalBytes), g.Samples, g.IntervalMs)
	switch {
	case g.MeanUtilPct != nil:
		e.line("GPU utilization (device-wide, NVML's window): mean %.1f %% over the readings", *g.MeanUtilPct)
	case g.UtilErrors > 0:
		e.line("GPU utilization: not reported (%s)", g.UtilFirstError)
	}
	switch {
	case g.MeanProcessSMUtilPct != nil:
		mem := ""
		if g.MeanProcessMemUtilPct != nil {
			mem = fmt.Sprintf(", memory %.1f %%", *g.MeanProcessMemUtilPct)
		}
		none := ""
		if g.ProcessUtilNoSampleReadings > 0 {
			none = fmt.Sprintf(" (%d had none)", g.ProcessUtilNoSampleReadings)
		}
		e.line("the process's own utilization (NVML's per-process samples): SM %.1f %%%s, mean over the readings with a new NVML sample%s",
			*g.MeanProcessSMUtilPct, mem, none)
	case g.ProcessUtilErrors > 0:
		e.line("the process's own utilization: not reported (%s)", g.ProcessUtilFirstError)
	case g.ProcessUtilNoSampleReadings > 0:
		e.line("the process's own utilization: NVML recorded no sample in %d readings (no process busy on its GPUs, or a run shorter than NVML's period)",
			g.ProcessUtilNoSampleReadings)
	}
}

// errWriter writes the report, keeping the first error. In markdown it
// sets blocks apart (block).
type errWriter struct {
	w   io.Writer
	err error
	md  bool
	// wrote: something has been written; inList: the last block is a
	// list still open to more items.
	wrote, inList bool
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
	e.wrote = true
}

// block starts a block: in markdown, a blank line after what came before.
func (e *errWriter) block() {
	if e.md && e.wrote {
		e.printf("\n")
	}
	e.inList = false
}

// line writes a line of text: in markdown a paragraph of its own.
func (e *errWriter) line(format string, args ...any) {
	e.block()
	e.printf(format+"\n", args...)
}

// item writes an item of a list: consecutive items make one list.
func (e *errWriter) item(format string, args ...any) {
	if !e.inList {
		e.block()
	}
	e.printf("- "+format+"\n", args...)
	e.inList = true
}
