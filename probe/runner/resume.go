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

// measured is the runs of rep that need not run again: finished (status
// ok) with at least count repetitions, by resumeKey.
func measured(rep *schema.Report, count int) map[string]schema.Run {
	out := map[string]schema.Run{}
	for _, r := range rep.Runs {
		if r.Status == schema.StatusOK && len(r.Repetitions) >= count {
			out[resumeKey(r.Name, r.Config)] = r
		}
	}
	return out
}

// resumeWarnings say what a resumed run took from the earlier report and
// what makes its figures less comparable (another commit or machine).
func resumeWarnings(path string, old, rep *schema.Report, cs []Config, done map[string]schema.Run) []string {
	n := 0
	for _, c := range cs {
		if _, ok := done[resumeKey(c.Name, c.Schema)]; ok {
			n++
		}
	}
	w := []string{fmt.Sprintf("resumed from %s: %d of %d configurations measured there (started %s), not run again", path, n, len(cs), old.StartTime)}
	if n == 0 {
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
