package outside

import (
	"fmt"
	"io"
	"strings"

	"memprobe/internal/table"
	"memprobe/probe/reconcile"
	"memprobe/schema"
)

// Render writes a process result as text or markdown: the run in one
// line, the timeline, the reconciliation at the peak, stacks, arenas,
// anonymous mappings by size and files, the diagnosis, the cost.
func Render(w io.Writer, r *schema.Result, f table.Format) error {
	p := r.Process
	if p == nil {
		return fmt.Errorf("rendering: not a process result (kind %q)", r.Kind)
	}
	e := &errWriter{w: w}
	md := f == table.Markdown
	heading := func(s string) {
		if md {
			e.printf("\n### %s\n\n", s)
		} else {
			e.printf("\n%s\n", s)
		}
	}
	render := func(t *table.Table) {
		if e.err == nil {
			e.err = t.Render(w, f)
		}
	}

	// The run.
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
	cmd := strings.Join(p.Command, " ")
	if md {
		cmd = "`" + cmd + "`"
	}
	e.printf("probe %s: %s (pid %d) %s after %.2f s; %s\n", p.Mode, cmd, p.PID, status, p.DurationMs/1000, lang)
	peak := fmt.Sprintf("peak RSS %s (VmHWM as last sampled)", iec(int64(p.VmHWMBytes)))
	switch {
	case p.VmHWMBytes == 0 && p.RusageMaxRSSBytes > 0:
		peak = fmt.Sprintf("peak RSS %s (wait4's maxrss at exit; never sampled)", iec(int64(p.RusageMaxRSSBytes)))
	case p.RusageMaxRSSBytes > 0 && p.PeakAgreementPct != nil:
		peak = fmt.Sprintf("peak RSS %s (VmHWM as last sampled) against %s (wait4's maxrss at exit): %+.2f %%",
			iec(int64(p.VmHWMBytes)), iec(int64(p.RusageMaxRSSBytes)), *p.PeakAgreementPct)
	}
	if md {
		e.printf("\n")
	}
	e.printf("%s\n", peak)

	// The timeline.
	heading("Timeline")
	tl := p.Timeline
	if tl.Samples == 0 {
		e.printf("no samples: the process ended before the first\n")
	} else {
		tt := table.New("", table.Column{Name: "figure"}, table.Column{Name: "start", Kind: table.Bytes},
			table.Column{Name: "peak", Kind: table.Bytes}, table.Column{Name: "final", Kind: table.Bytes}, table.Column{Name: "source"})
		tt.Add("RSS", tl.StartRSSBytes, tl.PeakRSSBytes, tl.FinalRSSBytes, "statm resident (VmRSS), every sample")
		tt.Add("RSS anon", nil, tl.PeakRssAnonBytes, nil, "status RssAnon")
		tt.Add("RSS file", nil, tl.PeakRssFileBytes, nil, "status RssFile")
		tt.Add("RSS shmem", nil, tl.PeakRssShmemBytes, nil, "status RssShmem")
		tt.Add("VSZ", nil, tl.PeakVSZBytes, tl.FinalVSZBytes, "statm size (VmSize)")
		tt.Add("PSS", nil, tl.PeakPSSBytes, nil, "smaps_rollup Pss")
		tt.Add("swap", nil, tl.PeakSwapBytes, nil, "smaps_rollup Swap")
		render(tt)
		e.printf("%d samples every %.0f ms over %.2f s; threads at most %d; RSS grew %s, peak at %.2f s, %s in the last quarter\n",
			tl.Samples, p.IntervalMs, p.DurationMs/1000, tl.PeakThreads, iec(tl.GrowthBytes), tl.PeakAtMs/1000, iec(tl.LastQuarterGrowthBytes))
	}
	if p.TreePeakRSSBytes > 0 {
		e.printf("with %d descendants: tree RSS peak %s\n", len(p.Children), iec(int64(p.TreePeakRSSBytes)))
	}

	if g := p.GPU; g != nil {
		heading("GPU (NVML)")
		renderGPU(e, g)
	}

	if s := p.AtPeak; s != nil {
		rec := s.Reconciliation
		heading(fmt.Sprintf("Resident and reserved memory at the peak walk (%.2f s, RSS %s, VSZ %s)", s.TMs/1000, iec(rec.RSSBytes), iec(rec.VSZBytes)))
		render(reconcile.Table(rec))
		e.printf("thread stacks: %d found, %s reserved, %s guard, %s resident (%d threads, %d stack pointers read; default stack %s)\n",
			rec.PthreadStacks, iec(rec.ThreadStackReservedBytes), iec(rec.ThreadStackGuardBytes), iec(rec.ThreadStackResidentBytes),
			s.Threads, s.StackPointers, iec(s.ThreadStackDefaultBytes))
		arenaMax := "unset"
		if s.MallocArenaMax != "" {
			arenaMax = s.MallocArenaMax
		}
		e.printf("glibc arenas: %d besides the main one; default limit 8 × %d CPUs = %d; MALLOC_ARENA_MAX %s\n",
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
			e.printf("end walk (%.2f s): RSS %s, VSZ %s, %d stacks (%s reserved, %s resident), %d arenas, unexplained %s\n",
				end.TMs/1000, iec(er.RSSBytes), iec(er.VSZBytes), er.PthreadStacks, iec(er.ThreadStackReservedBytes),
				iec(er.ThreadStackResidentBytes), er.GlibcArenas, iec(er.UnexplainedBytes))
		}
	}

	heading("Diagnosis")
	if len(p.Diagnosis) == 0 {
		e.printf("- nothing stands out\n")
	}
	for _, d := range p.Diagnosis {
		e.printf("- %s\n", d.Text)
	}

	heading("Cost")
	o := p.Overhead
	e.printf("sampler %.1f ms reading /proc over %d samples; %d smaps walks %.1f ms; the probe's CPU %.1f ms over %.2f s (%.2f %% of one core)\n",
		o.SamplerCostMs, tl.Samples, p.Walks, o.WalkCostMs, o.ProbeCPUMs, p.DurationMs/1000, o.ProbeCPUPct)
	for _, f := range p.Files {
		e.printf("wrote %s\n", f)
	}
	for _, w := range r.Warnings {
		e.printf("warning: %s\n", w)
	}
	return e.err
}

// renderGPU writes NVML's view of the process in a line or two.
func renderGPU(e *errWriter, g *schema.ProcessGPU) {
	if g.Samples == 0 {
		why := g.NoEntryReason
		if why == "" {
			why = g.FirstError
		}
		e.printf("no GPU memory figure for the process in %d readings (every %.0f ms): %s\n", g.NoEntrySamples+g.Errors, g.IntervalMs, why)
		return
	}
	e.printf("device memory NVML charges to the process: peak %s, final %s over %d readings every %.0f ms\n",
		iec(g.PeakBytes), iec(g.FinalBytes), g.Samples, g.IntervalMs)
	switch {
	case g.MeanUtilPct != nil:
		e.printf("GPU utilization (device-wide, NVML's window): mean %.1f %% over the readings\n", *g.MeanUtilPct)
	case g.UtilErrors > 0:
		e.printf("GPU utilization: not reported (%s)\n", g.UtilFirstError)
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
		e.printf("the process's own utilization (NVML's per-process samples): SM %.1f %%%s, mean over the readings with a new NVML sample%s\n",
			*g.MeanProcessSMUtilPct, mem, none)
	case g.ProcessUtilErrors > 0:
		e.printf("the process's own utilization: not reported (%s)\n", g.ProcessUtilFirstError)
	case g.ProcessUtilNoSampleReadings > 0:
		e.printf("the process's own utilization: NVML recorded no sample in %d readings (no process busy on its GPUs, or a run shorter than NVML's period)\n",
			g.ProcessUtilNoSampleReadings)
	}
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}
