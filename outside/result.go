package outside

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"memprobe/instrument/sampler"
	"memprobe/internal/atomicfile"
	"memprobe/schema"
)

// Wait ends the watch and returns the result. For exec it waits for the
// program to exit (ctx is not used: the caller forwards signals with
// Signal); for attach, until the process exits or ctx ends (Ctrl-C, a
// duration), and then takes a last walk of the still running process.
func (s *Session) Wait(ctx context.Context) (*schema.Result, error) {
	p := &schema.Process{
		Mode: s.mode, Command: s.command, PID: s.pid,
		IntervalMs: ms64(s.opts.Interval), SmapsEveryMs: ms64(s.opts.SmapsEvery),
		Children: []schema.Child{}, Diagnosis: []schema.Finding{}, Files: []string{},
	}
	if p.Command == nil {
		p.Command = []string{}
	}
	if s.cmd != nil {
		s.waitExec(p)
	} else {
		p.Exited = s.waitAttach(ctx)
		if len(p.Command) == 0 && !p.Exited {
			// Read too early: a process that has just called execve has
			// its new memory but not yet its arguments' addresses, and
			// its cmdline reads empty for that moment. Read it again.
			if c := cmdline(s.opts.FS, s.pid); c != nil {
				p.Command = c
			}
		}
	}
	samp, cut := s.finish(p.Exited)
	if s.gpu != nil {
		p.GPU = s.gpu.stop()
	}
	end := time.Now()
	// The watch is over: what the probe takes from here on (the sites'
	// records read and symbolized, profiles and raw walks written) no
	// longer competes with the program.
	watched := selfCPU() - s.cpu0
	if testHookAfterWatch != nil {
		testHookAfterWatch()
	}
	// An exec'd program's lifetime ends at its exit, not when the watch
	// has wound down after it (and began before its fork: s.start).
	if !s.exitAt.IsZero() {
		end = s.exitAt
	}
	p.DurationMs = ms64(end.Sub(s.start))
	a := s.collect(p, samp)
	s.timelineCut = cut
	var kidsCost time.Duration
	if s.kids != nil {
		kidsCost = s.kids.fill(p) + a.leadCost
		a.fillLead(p)
	}
	p.Overhead = schema.Overhead{
		SamplerCostMs: samp.CostMs, WalkCostMs: ms64(a.walkCost), ChildrenCostMs: ms64(kidsCost),
		ProbeCPUMs: ms64(watched), ProbeCPUPct: 100 * float64(watched) / float64(max(end.Sub(s.start), 1)),
		AnalysisCPUMs: ms64(selfCPU() - s.cpu0 - watched),
	}
	return a.result(), nil
}

// collect writes what the parts of the watch saw into p, once they have
// stopped: the walks (and their raw smaps, to OutDir), the sites'
// records, attach's counters, the timeline and VmHWM. It returns the
// assembly of the rest of the result.
func (s *Session) collect(p *schema.Process, samp sampler.Result) *assembly {
	ws, ls := s.sched.seen(), s.loop.seen()
	s.writeRaw(ws.peakRaw, ws.endRaw)
	// The Go build as last read: a wrapper that exec'd a Go program is one.
	p.Go = ls.goBuild
	p.AtPeak, p.End, p.Walks = ws.peak, ws.end, ws.walks
	s.finishSites(p)
	if s.mode == schema.ModeAttach && ls.countersOK {
		ls.counters.set(p, rusageProc)
	}
	p.Timeline = summarize(samp)
	// VmHWM ≥ VmRSS at every moment: the largest RSS sampled bounds
	// VmHWM from below (where a sample read RSS without status, with
	// sampler.Options.StatusEvery above 1, or after the last read).
	p.VmHWMBytes = max(samp.Peaks.VmHWMBytes, ls.hwm, ws.hwm, samp.Peaks.RSSBytes)
	p.ProbeVmHWMAtStartBytes = s.probeHWM
	return &assembly{
		p: p, samp: samp, interval: s.opts.Interval, start: s.start, commandLine: s.opts.CommandLine,
		execs: ls.execs, notes: s.notes, walkCost: ws.cost, leadCost: ws.lead.cost, leadWalks: ws.lead.walks,
		lead: ws.lead.snap, leadPID: ws.lead.pid,
	}
}

// writeRaw writes the walks behind the reconciliations to OutDir.
func (s *Session) writeRaw(peakRaw, endRaw []byte) {
	if s.opts.OutDir == "" {
		return
	}
	for _, f := range []struct {
		name string
		b    []byte
	}{{"smaps-peak.txt", peakRaw}, {"smaps-end.txt", endRaw}} {
		if f.b == nil {
			continue
		}
		path := filepath.Join(s.opts.OutDir, f.name)
		if err := atomicfile.WriteBytes(path, f.b); err != nil {
			s.warnf("out-dir: %v", err)
			continue
		}
		s.notes.addFile(path)
	}
}

// assembly makes the result of a watch that has ended from what it saw
// (p as collect filled it, the sampler's result, the notes): the figures
// derived from them, the warnings of a short life, the diagnosis, the
// result's common fields. It reads no part of the Session, and a test
// may build one by hand.
type assembly struct {
	p           *schema.Process
	samp        sampler.Result
	interval    time.Duration
	start       time.Time
	commandLine []string
	execs       []string
	notes       *notes
	walkCost    time.Duration
	// The descendants' highest walk (lead, of leadPID); their walks'
	// count and cost.
	lead      *schema.Snapshot
	leadPID   int
	leadWalks int
	leadCost  time.Duration
}

// fillLead puts the descendants' highest walk on its descendant in p,
// once p.Children is filled (childWatch.fill).
func (a *assembly) fillLead(p *schema.Process) {
	p.DescendantWalks = a.leadWalks
	for i := range p.Children {
		if p.Children[i].PID == a.leadPID && a.lead != nil {
			p.Children[i].AtPeak = a.lead
		}
	}
	// The process alone may have peaked between two of the tree's
	// reads: the tree peaked at least as high.
	p.TreePeakRSSBytes = max(p.TreePeakRSSBytes, p.Timeline.PeakRSSBytes)
}

// result is the result of the watch.
func (a *assembly) result() *schema.Result {
	p, samp := a.p, a.samp
	n := samp.AliveSamples()
	if p.RusageMaxRSSBytes > 0 && p.VmHWMBytes > 0 {
		d := 100 * (float64(p.VmHWMBytes) - float64(p.RusageMaxRSSBytes)) / float64(p.RusageMaxRSSBytes)
		p.PeakAgreementPct = &d
	}
	a.warnShortLife(n)
	for _, e := range a.execs {
		a.notes.warnf("pid %d called execve %s: the figures before it are the first program's", p.PID, e)
	}
	warnings, files := a.notes.list()
	p.Files = append(p.Files, files...)
	// The diagnosis is report/process.Diagnose's, run on the result by
	// its caller (it needs TimelineCut besides).
	p.Diagnosis = []schema.Finding{}

	r := &schema.Result{
		Schema: schema.ResultVersion, Kind: schema.KindProcess, Process: p,
		Environment: schema.CurrentEnvironment(), CommandLine: a.commandLine,
		StartTime:     a.start.UTC().Format(time.RFC3339),
		Interrupted:   !p.Exited,
		GOMAXPROCS:    0,
		Ledger:        []schema.LedgerRow{},
		Warnings:      warnings,
		Sampler:       &a.samp,
		FinalRSSBytes: p.Timeline.FinalRSSBytes, FinalVSZBytes: p.Timeline.FinalVSZBytes,
		PeakRSSBytes: peakRSS(p, n),
	}
	p.PeakRSSSource = "vm_hwm"
	if r.PeakRSSBytes > p.VmHWMBytes {
		p.PeakRSSSource = "wait4_maxrss"
	}
	if r.CommandLine == nil {
		r.CommandLine = []string{}
	}
	if pts := samp.AliveTimeline(); len(pts) > 0 {
		_, last := samp.Endpoints(pts)
		r.OSThreads = last.Threads
	}
	r.RSSAgreement = &schema.RSSAgreement{SamplerPeakRSSBytes: samp.Peaks.RSSBytes, VmHWMBytes: p.VmHWMBytes}
	if p.VmHWMBytes > 0 {
		r.RSSAgreement.DiffPct = 100 * (float64(samp.Peaks.RSSBytes) - float64(p.VmHWMBytes)) / float64(p.VmHWMBytes)
	}
	r.RSSReconciliation = rssReconciliation(p, int64(r.PeakRSSBytes))
	if p.Exited && p.ExitCode == nil && p.Mode == schema.ModeExec {
		r.Warnings = append(r.Warnings, fmt.Sprintf("pid %d: exit status unknown", p.PID))
	}
	return r
}

// warnShortLife warns of a process that ended before its first walk, or
// before its second sample (n, the samples taken while it lived).
func (a *assembly) warnShortLife(n int) {
	p, interval := a.p, a.interval
	if p.AtPeak == nil {
		a.notes.warnf("no smaps walk was taken: the process ended before the first (it lived %.0f ms; the first is taken at the first sample after the start, %v in)", p.DurationMs, interval)
	}
	if !p.Exited || !p.Undersampled(n) {
		return
	}
	which := "a second"
	if n == 0 {
		which = "the first"
	}
	switch {
	case p.RusageMaxRSSBytes > 0 && p.ForkImage():
		a.notes.warnf("the program exited before %s sample (every %v; it lived %.2f s): its peak is not measured; peak_rss_bytes is wait4's maxrss at exit, %s, which is no more than the probe's own size when it started the program, so an upper bound",
			which, interval, p.DurationMs/1000, iec(int64(p.RusageMaxRSSBytes)))
	case p.RusageMaxRSSBytes > 0:
		a.notes.warnf("the program exited before %s sample (every %v; it lived %.2f s): peak_rss_bytes is wait4's maxrss at exit, %s, not the timeline's",
			which, interval, p.DurationMs/1000, iec(int64(p.RusageMaxRSSBytes)))
	case n == 1:
		a.notes.warnf("the process exited before a second sample (every %v): the peak is VmHWM at the one sample, %s, its life up to then; a later peak is not measured",
			interval, iec(int64(p.VmHWMBytes)))
	}
}

// rssReconciliation is the peak walk's breakdown against the peak, vmHWM
// (the result's peak_rss_bytes); nil without a walk.
func rssReconciliation(p *schema.Process, vmHWM int64) *schema.RSSReconciliation {
	if p.AtPeak == nil {
		return nil
	}
	rr := &schema.RSSReconciliation{
		AtPeak: p.AtPeak.Reconciliation, AtPeakStep: 0, End: p.End.Reconciliation,
		VmHWMBytes:               vmHWM,
		ExplainedBytes:           p.AtPeak.Reconciliation.RSSBytes - p.AtPeak.Reconciliation.UnexplainedBytes,
		Residual:                 p.AtPeak.Reconciliation.UnexplainedMappings,
		ThreadStackReservedBytes: p.AtPeak.Reconciliation.ThreadStackReservedBytes,
		ThreadStackResidentBytes: p.AtPeak.Reconciliation.ThreadStackResidentBytes,
	}
	rr.ResidualBytes = rr.VmHWMBytes - rr.ExplainedBytes
	if rr.VmHWMBytes > 0 {
		rr.ResidualPct = 100 * float64(rr.ResidualBytes) / float64(rr.VmHWMBytes)
	}
	rr.Within10Pct = rr.ResidualPct <= 10 && rr.ResidualPct >= -10
	return rr
}

// summarize sums up the sampler's timeline.
func summarize(r sampler.Result) schema.TimelineSummary {
	t := schema.TimelineSummary{
		Samples: r.Samples, PeakRSSBytes: r.Peaks.RSSBytes, PeakVSZBytes: r.Peaks.VSZBytes,
		PeakPSSBytes: r.Peaks.PssBytes, PeakRssAnonBytes: r.Peaks.RssAnonBytes, PeakRssFileBytes: r.Peaks.RssFileBytes,
		PeakRssShmemBytes: r.Peaks.RssShmemBytes, PeakSwapBytes: r.Peaks.SwapBytes, PeakThreads: r.Peaks.Threads,
	}
	pts := r.AliveTimeline()
	if len(pts) == 0 {
		return t
	}
	first, last := r.Endpoints(pts)
	t.StartRSSBytes, t.FinalRSSBytes, t.FinalVSZBytes = first.RSSBytes, last.RSSBytes, last.VSZBytes
	t.GrowthBytes = int64(r.Peaks.RSSBytes) - int64(first.RSSBytes)
	// When the peak was sampled; a result written before the sampler
	// kept it has only the start of the peak's bucket.
	t.PeakAtMs = r.PeakRSSAtMs
	if r.PeakRSSAtMs == 0 {
		for _, p := range pts {
			if p.RSSBytes == r.Peaks.RSSBytes {
				t.PeakAtMs = p.TMs
				break
			}
		}
	}
	// Growth in the last quarter of the run: the highest point in it
	// against the highest before it.
	q := last.TMs - (last.TMs-first.TMs)/4
	var before, in uint64
	for _, p := range pts {
		if p.TMs < q {
			before = max(before, p.RSSBytes)
		} else {
			in = max(in, p.RSSBytes)
		}
	}
	t.LastQuarterGrowthBytes = int64(in) - int64(before)
	return t
}

// peakRSS is the result's peak_rss_bytes: the larger of the sampled
// VmHWM and wait4's maxrss, unless the latter is the probe's own image.
// A program that exited before a second sample (n, the samples taken
// while it lived) has no sampled peak worth the name, only its state as
// execve left it: wait4's maxrss, which covers its whole life, is the
// peak then, even where it is the probe's image (an upper bound: the
// report and a warning say so).
func peakRSS(p *schema.Process, n int) uint64 {
	if p.Undersampled(n) && p.RusageMaxRSSBytes > 0 {
		return max(p.VmHWMBytes, p.RusageMaxRSSBytes)
	}
	if p.ForkImage() {
		return p.VmHWMBytes
	}
	return max(p.VmHWMBytes, p.RusageMaxRSSBytes)
}

// TimelineCut says, once Wait has returned, that the sampler stopped
// while the process lived on: the timeline's final figure is not the
// end, which report/process.Diagnose must know.
func (s *Session) TimelineCut() bool { return s.timelineCut }
