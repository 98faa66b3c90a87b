package runner

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"memprobe/schema"
	"memprobe/trainer/phase"
)

// Merge joins the reports of shards (`probe run --shard I/N`) into one:
// every run of every report, in the order one unsharded run would have
// them (plan, phase, sweep point). names label the reports in errors and
// warnings. The reports must be of this build's schema version and run
// each plan at the same preset; a configuration in two of them is an
// error. Differences that do not forbid a merge (another commit, another
// machine, a missing shard) become warnings of the merged report.
func Merge(names []string, reps []*schema.Report, commandLine []string) (*schema.Report, error) {
	if len(reps) == 0 {
		return nil, fmt.Errorf("merge: no reports")
	}
	first := reps[0]
	out := &schema.Report{
		Schema: schema.ReportVersion, Environment: first.Environment,
		CommandLine: nonNil(commandLine), StartTime: first.StartTime, EndTime: first.EndTime,
		Runs: []schema.Run{}, Warnings: []string{},
	}
	preset := map[string]string{}     // plan → preset
	presetFrom := map[string]string{} // plan → report name
	where := map[string]string{}      // run name → report name
	var shards [][2]int
	for i, r := range reps {
		name := names[i]
		if r.Schema != schema.ReportVersion {
			return nil, fmt.Errorf("merging %s: schema %q, this build merges %q", name, r.Schema, schema.ReportVersion)
		}
		for _, run := range r.Runs {
			if p, ok := preset[run.Plan]; ok && p != run.Config.Preset {
				return nil, fmt.Errorf("merging %s: plan %s ran at preset %s, in %s at preset %s: not comparable", name, run.Plan, run.Config.Preset, presetFrom[run.Plan], p)
			}
			preset[run.Plan], presetFrom[run.Plan] = run.Config.Preset, name
			if w, ok := where[run.Name]; ok {
				return nil, fmt.Errorf("merging %s: configuration %q is also in %s", name, run.Name, w)
			}
			where[run.Name] = name
			out.Runs = append(out.Runs, run)
		}
		if i > 0 {
			e, f := r.Environment, first.Environment
			if e.VCSRevision != f.VCSRevision || e.VCSModified != f.VCSModified {
				out.Warnings = append(out.Warnings, fmt.Sprintf("%s was built from commit %q (modified %v), %s from %q (modified %v)", name, e.VCSRevision, e.VCSModified, names[0], f.VCSRevision, f.VCSModified))
			}
			if e.Hostname != f.Hostname || e.CPUModel != f.CPUModel || e.LogicalCores != f.LogicalCores {
				out.Warnings = append(out.Warnings, fmt.Sprintf("%s ran on %s (%s, %d cores), %s on %s (%s, %d cores): timings are not comparable across them", name, e.Hostname, e.CPUModel, e.LogicalCores, names[0], f.Hostname, f.CPUModel, f.LogicalCores))
			}
		}
		if earlier(r.StartTime, out.StartTime) {
			out.StartTime = r.StartTime
		}
		if earlier(out.EndTime, r.EndTime) {
			out.EndTime = r.EndTime
		}
		for _, w := range r.Warnings {
			var si, sn int
			if _, err := fmt.Sscanf(w, "shard %d/%d:", &si, &sn); err == nil {
				shards = append(shards, [2]int{si, sn})
				continue
			}
			out.Warnings = append(out.Warnings, name+": "+w)
		}
	}
	if w := missingShards(shards, len(reps)); w != "" {
		out.Warnings = append(out.Warnings, w)
	}
	out.Warnings = append(out.Warnings, fmt.Sprintf("merged from %d reports: %s", len(reps), strings.Join(names, ", ")))
	slices.SortStableFunc(out.Runs, compareRuns)
	return out, nil
}

// missingShards says which shards of an I/N split are absent ("" when
// the reports are not shards or all are there).
func missingShards(shards [][2]int, reports int) string {
	if len(shards) == 0 {
		return ""
	}
	n := shards[0][1]
	have := map[int]bool{}
	for _, s := range shards {
		if s[1] != n {
			return fmt.Sprintf("the reports are shards of different splits (/%d and /%d)", n, s[1])
		}
		have[s[0]] = true
	}
	var miss []string
	for i := range n {
		if !have[i] {
			miss = append(miss, fmt.Sprintf("%d/%d", i, n))
		}
	}
	if len(miss) > 0 || len(shards) != reports {
		return fmt.Sprintf("incomplete: shards %s missing", strings.Join(miss, ", "))
	}
	return ""
}

// compareRuns orders runs as an unsharded run makes them: by plan
// (phase.Plans order), phase (plan order), then sweep point (the axes in
// their fixed order, numbers by value).
func compareRuns(a, b schema.Run) int {
	pa, ka := runOrder(a)
	pb, kb := runOrder(b)
	if c := cmp.Or(cmp.Compare(pa, pb), cmp.Compare(ka, kb)); c != 0 {
		return c
	}
	for _, axis := range []string{AxisThreads, AxisCacheScale, AxisDecode, AxisBatchAlloc} {
		if c := compareValues(a.Sweep[axis], b.Sweep[axis]); c != 0 {
			return c
		}
	}
	return 0
}

func runOrder(r schema.Run) (plan, ph int) {
	for i, p := range phase.Plans() {
		if p.Name == r.Plan {
			k, err := p.Index(r.Phase)
			if err != nil {
				k = len(p.Phases)
			}
			return i, k
		}
	}
	return len(phase.Plans()), 0
}

func compareValues(a, b string) int {
	x, errA := strconv.ParseFloat(a, 64)
	y, errB := strconv.ParseFloat(b, 64)
	if errA == nil && errB == nil {
		return cmp.Compare(x, y)
	}
	return strings.Compare(a, b)
}

// earlier reports whether RFC 3339 time a is before b; an unreadable one
// is never earlier, and any time is earlier than an unreadable one.
func earlier(a, b string) bool {
	ta, errA := time.Parse(time.RFC3339, a)
	tb, errB := time.Parse(time.RFC3339, b)
	switch {
	case errA != nil:
		return false
	case errB != nil:
		return true
	}
	return ta.Before(tb)
}
