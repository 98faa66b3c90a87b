package report

import (
	"fmt"
	"io"
	"path/filepath"

	"memprobe/internal/table"
	"memprobe/schema"
)

// WriteSummary prints what a job measured, after it ends: the model
// against the ledger, the resident set explained at its peak, the sampler
// against the kernel's peak, the runtime's counters, the allocations by
// site and the one-line verdict. It reads only the result, so the same
// summary comes from a run in this process or from a result file.
func WriteSummary(w io.Writer, r *schema.Result) error {
	ew := &errWriter{w: w}
	if r.Instruments {
		if err := WriteLedger(ew, r.Ledger); err != nil {
			return err
		}
		if rec := r.RSSReconciliation; rec != nil {
			fmt.Fprintf(ew, "rss at peak (step %d): named parts explain %s of VmHWM %s; residual %s (%.1f%%), unexplained at the boundary %s\n",
				rec.AtPeakStep, mib(rec.ExplainedBytes), mib(rec.VmHWMBytes), mib(rec.ResidualBytes), rec.ResidualPct, mib(rec.AtPeak.UnexplainedBytes))
			if err := WriteReconciliation(ew, rec.AtPeak); err != nil {
				return err
			}
		}
		if a := r.RSSAgreement; a != nil && r.Sampler != nil {
			fmt.Fprintf(ew, "peak rss: sampler %s, VmHWM %s (%+.2f%%); %d samples every %v\n",
				mib(int64(a.SamplerPeakRSSBytes)), mib(int64(a.VmHWMBytes)), a.DiffPct, r.Sampler.Samples, table.FormatDuration(r.Sampler.IntervalMs*1e6))
		}
		if rt := r.Runtime; rt != nil {
			fmt.Fprintf(ew, "go runtime: %.1f allocs/step (all, runtime/metrics), %.0f B/step over %d steps after %d warm-up; %d GC cycles; %d goroutines, %d OS threads at peak\n",
				rt.Steady.AllocsPerStepObjects, rt.Steady.AllocsPerStepBytes, rt.Steady.Steps, rt.Steady.WarmupSteps,
				rt.AllStepsGCCycles, rt.Peak.Goroutines, rt.Peak.OSThreads)
		}
		if s := r.AllocsBySite; s != nil {
			if err := writeAllocSites(ew, s); err != nil {
				return err
			}
		}
	}
	ratio := 0.0
	if r.FloorBytes > 0 {
		ratio = float64(r.PeakRSSBytes) / float64(r.FloorBytes)
	}
	for _, s := range r.Warnings {
		fmt.Fprintf(ew, "warning: %s\n", s)
	}
	fmt.Fprintf(ew, "done: %.0f tokens/s (%.1f GFLOPS), loss %.4f -> %.4f, peak RSS %s (floor %s, x%.2f), %.1f allocs/step\n",
		r.TokensPerSec, r.AchievedGFLOPS, r.LossFirst, r.LossLast, mib(int64(r.PeakRSSBytes)), mib(r.FloorBytes),
		ratio, r.HeapAllocsPerStep)
	return ew.err
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// errWriter keeps the first write error, so a summary of many lines checks
// once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// writeAllocSites prints the allocations by class, then a table of the
// sites that made them (at most 8 rows).
func writeAllocSites(w io.Writer, s *schema.AllocSites) error {
	exact := "every allocation recorded"
	if !s.Exact {
		exact = fmt.Sprintf("sampled at 1 per %d B, scaled", s.MemProfileRate)
	}
	steps := float64(max(s.Steps, 1))
	t := table.New(fmt.Sprintf("allocs by site over %d steps (%s): program %.2f/step (%s/step), Go runtime %.2f/step, probe %.2f/step",
		s.Steps, exact, s.ProgramObjectsPerStep(), table.FormatBytes(s.ProgramBytesPerStep()),
		float64(s.RuntimeObjects)/steps, float64(s.ProbeObjects)/steps),
		table.Column{Name: "class"},
		table.Column{Name: "objects", Kind: table.Int},
		table.Column{Name: "bytes", Kind: table.Bytes},
		table.Column{Name: "function"},
		table.Column{Name: "at"},
		table.Column{Name: "called from"},
	)
	for i, site := range s.Sites {
		if i == 8 {
			t.Note("... %d more sites", len(s.Sites)-i+s.SitesOmitted)
			break
		}
		var from any
		if site.CalledFrom != "" {
			from = site.CalledFrom
		}
		t.Add(site.Class, site.Objects, site.Bytes, site.Function, fmt.Sprintf("%s:%d", filepath.Base(site.File), site.Line), from)
	}
	if len(s.Sites) <= 8 && s.SitesOmitted > 0 {
		t.Note("... %d more sites", s.SitesOmitted)
	}
	if len(s.Sites) == 0 && s.SitesOmitted == 0 {
		_, err := fmt.Fprintln(w, t.Title) // no sites: no table
		return err
	}
	return t.Render(w, table.Text)
}
