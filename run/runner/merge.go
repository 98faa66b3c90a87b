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
// them (plan, phase, sweep point; a plan file's configurations by their
// index). names label the reports in errors and warnings. The reports
// must be of this build's schema version, built from one commit, and run
// each plan at the same scale (preset, steps, data; a plan file's
// variables); shards (schema.Shard) must be of one plan (its digest) and
// one split, each index once; a configuration in two of them is an
// error. Differences that do not forbid a merge (another machine, a
// missing shard, named by its index) become warnings of the merged
// report.
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
	scale := map[string]string{}      // plan → scaleOf
	presetFrom := map[string]string{} // plan → report name
	where := map[string]string{}      // run name → report name
	var shards [][2]int
	if err := checkShards(names, reps); err != nil {
		return nil, err
	}
	for i, r := range reps {
		name := names[i]
		if r.Schema != schema.ReportVersion {
			return nil, fmt.Errorf("merging %s: schema %q, this build merges %q", name, r.Schema, schema.ReportVersion)
		}
		if e, f := r.Environment, first.Environment; e.VCSRevision != f.VCSRevision || e.VCSModified != f.VCSModified {
			return nil, fmt.Errorf("merging %s: built from commit %q (modified %v), %s from %q (modified %v): shards of one run come from one build", name, e.VCSRevision, e.VCSModified, names[0], f.VCSRevision, f.VCSModified)
		}
		for _, run := range r.Runs {
			if p, ok := preset[run.Plan]; ok && p != run.Config.Preset {
				return nil, fmt.Errorf("merging %s: plan %s ran at preset %s, in %s at preset %s: not comparable", name, run.Plan, run.Config.Preset, presetFrom[run.Plan], p)
			}
			if sc, ok := scale[run.Plan]; ok && sc != scaleOf(run) {
				return nil, fmt.Errorf("merging %s: plan %s ran at %s, in %s at %s: not comparable", name, run.Plan, scaleOf(run), presetFrom[run.Plan], sc)
			}
			scale[run.Plan] = scaleOf(run)
			preset[run.Plan], presetFrom[run.Plan] = run.Config.Preset, name
			if w, ok := where[run.Name]; ok {
				return nil, fmt.Errorf("merging %s: configuration %q is also in %s", name, run.Name, w)
			}
			where[run.Name] = name
			out.Runs = append(out.Runs, run)
		}
		if i > 0 {
			e, f := r.Environment, first.Environment
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
	if w := missingShards(shards, len(reps)); w != "" && reps[0].Shard == nil {
		out.Warnings = append(out.Warnings, w)
	}
	if w := MissingShards(reps); w != "" {
		out.Warnings = append(out.Warnings, w)
	}
	out.Warnings = append(out.Warnings, fmt.Sprintf("merged from %d reports: %s", len(reps), strings.Join(names, ", ")))
	slices.SortStableFunc(out.Runs, compareRuns)
	return out, nil
}

// scaleOf is what must agree between the shards' runs of one plan: the
// steps and data of a built-in plan (the preset is checked apart), the
// variables of a plan file (Run.Scale).
func scaleOf(r schema.Run) string {
	if r.Command != nil {
		return r.Scale
	}
	return fmt.Sprintf("%d steps of %s", r.Config.Steps, r.Config.Data)
}

// checkShards refuses reports that are not shards of one split of one
// plan: another plan (digest) or split (count), or one index twice.
func checkShards(names []string, reps []*schema.Report) error {
	var first *schema.Shard
	var firstName string
	seen := map[int]string{}
	for i, r := range reps {
		s := r.Shard
		if s == nil {
			continue
		}
		if first == nil {
			first, firstName = s, names[i]
		}
		switch {
		case s.PlanDigest != first.PlanDigest:
			return fmt.Errorf("merging %s: a shard of another plan than %s (%s, %d configurations; %s, %d): run every shard with the same plan, flags and build", names[i], firstName, s.Plan, s.Configurations, first.Plan, first.Configurations)
		case s.Count != first.Count:
			return fmt.Errorf("merging %s: shard %d/%d, and %s is of a split in %d", names[i], s.Index, s.Count, firstName, first.Count)
		}
		if o, ok := seen[s.Index]; ok {
			return fmt.Errorf("merging %s: shard %d/%d is also %s", names[i], s.Index, s.Count, o)
		}
		seen[s.Index] = names[i]
	}
	return nil
}

// MissingShards names the shards of the reports' split that none of
// them is ("" when none is missing or the reports are not shards), by
// index: "incomplete: shard 2/4 (--shard 2/4, JOB_COMPLETION_INDEX=2)
// missing".
func MissingShards(reps []*schema.Report) string {
	var n int
	have := map[int]bool{}
	src := ""
	for _, r := range reps {
		if r.Shard != nil {
			n, src = r.Shard.Count, r.Shard.Source
			have[r.Shard.Index] = true
		}
	}
	var miss []string
	for i := range n {
		if !have[i] {
			m := fmt.Sprintf("%d/%d", i, n)
			switch src {
			case EnvK8sIndex, EnvGitLabNode, EnvSlurmID:
				m += fmt.Sprintf(" (%s)", schedulerIndex(src, i))
			}
			miss = append(miss, m)
		}
	}
	if len(miss) == 0 {
		return ""
	}
	word := "shard"
	if len(miss) > 1 {
		word = "shards"
	}
	return fmt.Sprintf("incomplete: %s %s missing", word, strings.Join(miss, ", "))
}

// schedulerIndex is how the scheduler names shard i: its variable's
// value (a Slurm array's is its offset from the array's minimum).
func schedulerIndex(src string, i int) string {
	switch src {
	case EnvGitLabNode:
		return fmt.Sprintf("%s=%d", src, i+1)
	case EnvSlurmID:
		return fmt.Sprintf("the array's task %d from %s", i, EnvSlurmMin)
	}
	return fmt.Sprintf("%s=%d", src, i)
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
	if a.Index != nil && b.Index != nil && a.Plan == b.Plan {
		return cmp.Compare(*a.Index, *b.Index)
	}
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
