package outside

import (
	"context"
	"fmt"
	"slices"
	"time"

	"memprobe/instrument/sampler"
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
	samp := s.finish(p.Exited)
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
	// has wound down after it.
	if !s.exitAt.IsZero() {
		end = s.exitAt
	}
	p.DurationMs = ms64(end.Sub(s.start))

	s.mu.Lock()
	defer s.mu.Unlock()
	s.writeRaw()
	// The Go build as last read: a wrapper that exec'd a Go program is one.
	p.Go = s.goBuild
	p.AtPeak, p.End, p.Walks = s.peak, s.end, s.walks
	s.finishSites(p)
	if s.mode == schema.ModeAttach && s.countersOK {
		s.counters.set(p, rusageProc)
	}
	p.Timeline = summarize(samp)
	// VmHWM ≥ VmRSS at every moment: the largest RSS sampled bounds
	// VmHWM from below (where a sample read RSS without status, with
	// sampler.Options.StatusEvery above 1, or after the last read).
	p.VmHWMBytes = max(samp.Peaks.VmHWMBytes, s.hwm, samp.Peaks.RSSBytes)
	p.ProbeVmHWMAtStartBytes = s.probeHWM
	f := struct{ aliveSamples int }{samp.AliveSamples()}
	if p.RusageMaxRSSBytes > 0 && p.VmHWMBytes > 0 {
		d := 100 * (float64(p.VmHWMBytes) - float64(p.RusageMaxRSSBytes)) / float64(p.RusageMaxRSSBytes)
		p.PeakAgreementPct = &d
	}
	var kidsCost time.Duration
	if s.kids != nil {
		kidsCost = s.kids.fill(p) + s.leadCost
		p.DescendantWalks = s.leadWalks
		for i := range p.Children {
			if p.Children[i].PID == s.leadPID && s.lead != nil {
				p.Children[i].AtPeak = s.lead
			}
		}
		// The process alone may have peaked between two of the tree's
		// reads: the tree peaked at least as high.
		p.TreePeakRSSBytes = max(p.TreePeakRSSBytes, p.Timeline.PeakRSSBytes)
	}
	p.Overhead = schema.Overhead{
		SamplerCostMs: samp.CostMs, WalkCostMs: ms64(s.walkCost), ChildrenCostMs: ms64(kidsCost),
		ProbeCPUMs: ms64(watched), ProbeCPUPct: 100 * float64(watched) / float64(max(end.Sub(s.start), 1)),
		AnalysisCPUMs: ms64(selfCPU() - s.cpu0 - watched),
	}
	for f := range s.files {
		p.Files = append(p.Files, f)
	}
	slices.Sort(p.Files)
	if p.AtPeak == nil {
		s.warnf("no smaps walk was taken: the process ended before the first (it lived %.0f ms; the first is taken at the first sample after the start, %v in)", p.DurationMs, s.opts.Interval)
	}
	if p.Exited && p.Undersampled(f.aliveSamples) {
		which := "a second"
		if f.aliveSamples == 0 {
			which = "the first"
		}
		switch {
		case p.RusageMaxRSSBytes > 0 && p.ForkImage():
			s.warnf("the program exited before %s sample (every %v; it lived %.2f s): its peak is not measured; peak_rss_bytes is wait4's maxrss at exit, %s, which is no more than the probe's own size when it started the program, so an upper bound",
				which, s.opts.Interval, p.DurationMs/1000, iec(int64(p.RusageMaxRSSBytes)))
		case p.RusageMaxRSSBytes > 0:
			s.warnf("the program exited before %s sample (every %v; it lived %.2f s): peak_rss_bytes is wait4's maxrss at exit, %s, not the timeline's",
				which, s.opts.Interval, p.DurationMs/1000, iec(int64(p.RusageMaxRSSBytes)))
		case f.aliveSamples == 1:
			s.warnf("the process exited before a second sample (every %v): the peak is VmHWM at the one sample, %s, its life up to then; a later peak is not measured",
				s.opts.Interval, iec(int64(p.VmHWMBytes)))
		}
	}
	for _, e := range s.execs {
		s.warnf("pid %d called execve %s: the figures before it are the first program's", s.pid, e)
	}
	// The diagnosis is report/process.Diagnose's, run on the result by
	// its caller (it needs TimelineCut besides).
	p.Diagnosis = []schema.Finding{}

	r := &schema.Result{
		Schema: schema.ResultVersion, Kind: schema.KindProcess, Process: p,
		Environment: schema.CurrentEnvironment(), CommandLine: s.opts.CommandLine,
		StartTime:     s.start.UTC().Format(time.RFC3339),
		Interrupted:   !p.Exited,
		GOMAXPROCS:    0,
		Ledger:        []schema.LedgerRow{},
		Warnings:      append([]string{}, s.warnings...),
		Sampler:       &samp,
		FinalRSSBytes: p.Timeline.FinalRSSBytes, FinalVSZBytes: p.Timeline.FinalVSZBytes,
		PeakRSSBytes: peakRSS(p, f.aliveSamples),
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
	if p.AtPeak != nil {
		rr := &schema.RSSReconciliation{
			AtPeak: p.AtPeak.Reconciliation, AtPeakStep: 0, End: p.End.Reconciliation,
			VmHWMBytes:               int64(r.PeakRSSBytes),
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
		r.RSSReconciliation = rr
	}
	if p.Exited && p.ExitCode == nil && s.mode == schema.ModeExec {
		r.Warnings = append(r.Warnings, fmt.Sprintf("pid %d: exit status unknown", s.pid))
	}
	return r, nil
}

// TimelineCut says, once Wait has returned, that the sampler stopped
// while the process lived on: the timeline's final figure is not the
// end, which report/process.Diagnose must know.
func (s *Session) TimelineCut() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.timelineCut
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
