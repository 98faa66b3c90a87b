package runner

import (
	"fmt"

	"memprobe/schema"
)

// resumeKey identifies a configuration across runs of `probe run`: its
// name (plan, phase and sweep point) and its scale. The plan and phase
// decide the switches; the name holds the sweep's knobs.
func resumeKey(name string, c schema.Config) string {
	return fmt.Sprintf("%s|preset=%s|threads=%d|steps=%d|data=%s", name, c.Preset, c.Threads, c.Steps, c.Data)
}

// runIdentity is Config.identity of a run of a report.
func runIdentity(r schema.Run) string {
	k := resumeKey(r.Name, r.Config)
	if pk := processKey(r.Command, r.Env); pk != "" {
		k += "|" + pk
	}
	return k
}

// measured is the runs of rep that need not run again: finished (status
// ok) with at least count repetitions, by resumeKey.
func measured(rep *schema.Report, count int) map[string]schema.Run {
	out := map[string]schema.Run{}
	for _, r := range rep.Runs {
		if r.Status == schema.StatusOK && len(r.Repetitions) >= count {
			out[runIdentity(r)] = r
		}
	}
	return out
}

// started is the runs of rep that finished some repetitions but fewer
// than count (a run interrupted between repetitions, or one asked for
// fewer): a resumed run keeps those repetitions and runs only the rest.
func started(rep *schema.Report, count int) map[string]schema.Run {
	out := map[string]schema.Run{}
	for _, r := range rep.Runs {
		if n := len(r.Repetitions); n > 0 && n < count {
			out[runIdentity(r)] = r
		}
	}
	return out
}

// keptOutside is the parent's records of the repetitions of old that
// finished, renumbered from 1 in the order they ran.
func keptOutside(old schema.Run) []schema.Outside {
	out := []schema.Outside{}
	for _, o := range old.Outside {
		if o.Status == schema.StatusOK && len(out) < len(old.Repetitions) {
			o.Repetition = len(out) + 1
			out = append(out, o)
		}
	}
	return out
}

// resumeWarnings say what a resumed run took from the earlier report and
// what makes its figures less comparable (another commit or machine).
func resumeWarnings(path string, old, rep *schema.Report, cs []Config, done, partial map[string]schema.Run) []string {
	n, part := 0, 0
	for _, c := range cs {
		if _, ok := done[c.identity()]; ok {
			n++
		}
		if _, ok := partial[c.identity()]; ok {
			part++
		}
	}
	msg := fmt.Sprintf("resumed from %s: %d of %d configurations measured there (started %s), not run again", path, n, len(cs), old.StartTime)
	if part > 0 {
		msg += fmt.Sprintf("; %d measured in part, their repetitions kept and the rest run", part)
	}
	w := []string{msg}
	if n+part == 0 {
		return w
	}
	e, f := old.Environment, rep.Environment
	if e.VCSRevision != f.VCSRevision || e.VCSModified != f.VCSModified {
		w = append(w, fmt.Sprintf("%s was built from commit %q (modified %v), this run from %q (modified %v)", path, e.VCSRevision, e.VCSModified, f.VCSRevision, f.VCSModified))
	}
	if e.Hostname != f.Hostname || e.CPUModel != f.CPUModel || e.LogicalCores != f.LogicalCores {
		w = append(w, fmt.Sprintf("%s ran on %s (%s, %d cores), this run on %s (%s, %d cores): timings are not comparable across them", path, e.Hostname, e.CPUModel, e.LogicalCores, f.Hostname, f.CPUModel, f.LogicalCores))
	}
	return w
}

// Pool joins reports of the same configurations (repeated `probe run`s
// of one commit, say) into one whose runs hold every finished repetition
// of each configuration, summarised again: one side of a comparison with
// more repetitions than any one report has. A configuration is the same
// when its name and scale are (resumeKey); the first report's run gives
// its description, claim and plan. names label the reports in warnings.
func Pool(names []string, reps []*schema.Report) (*schema.Report, error) {
	if len(reps) == 0 {
		return nil, fmt.Errorf("pooling reports: none")
	}
	first := reps[0]
	out := &schema.Report{
		Schema: schema.ReportVersion, Environment: first.Environment,
		CommandLine: append([]string{"(pooled)"}, names...), StartTime: first.StartTime, EndTime: first.EndTime,
		Runs: []schema.Run{}, Warnings: []string{},
	}
	index := map[string]int{}
	for i, rep := range reps {
		if rep.StartTime < out.StartTime {
			out.StartTime = rep.StartTime
		}
		if rep.EndTime > out.EndTime {
			out.EndTime = rep.EndTime
		}
		e := rep.Environment
		if e.VCSRevision != first.Environment.VCSRevision || e.VCSModified != first.Environment.VCSModified || e.CPUModel != first.Environment.CPUModel {
			out.Warnings = appendOnce(out.Warnings, fmt.Sprintf("%s: commit %q on %s, %s: commit %q on %s: pooled all the same",
				names[0], first.Environment.VCSRevision, first.Environment.CPUModel, names[i], e.VCSRevision, e.CPUModel))
		}
		for _, run := range rep.Runs {
			k := runIdentity(run)
			j, ok := index[k]
			if !ok {
				j = len(out.Runs)
				index[k] = j
				c := run
				c.Repetitions = []schema.Result{}
				c.Outside = []schema.Outside{}
				c.Status, c.Reason = schema.StatusOK, ""
				out.Runs = append(out.Runs, c)
			}
			dst := &out.Runs[j]
			dst.Repetitions = append(dst.Repetitions, run.Repetitions...)
			for _, o := range keptOutside(run) {
				o.Repetition = len(dst.Outside) + 1
				dst.Outside = append(dst.Outside, o)
			}
			if run.Status != schema.StatusOK {
				out.Warnings = append(out.Warnings, fmt.Sprintf("%s: %s %s (%s): its finished repetitions are pooled", names[i], run.Name, run.Status, run.Reason))
			}
		}
	}
	for i := range out.Runs {
		run := &out.Runs[i]
		if len(run.Repetitions) == 0 {
			run.Status, run.Reason = schema.StatusFailed, "no repetition finished in any pooled report"
		}
		Summarize(run, len(run.Repetitions))
	}
	return out, nil
}
