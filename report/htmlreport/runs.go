package htmlreport

import (
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"memprobe/report"
	"memprobe/schema"
)

// planRuns is a plan's runs, grouped as report groups them: by sweep
// point (the group with the most runs is the main one, the first of
// equals), each group in phase order.
type planRuns struct {
	name   string
	runs   []*schema.Run // in report order
	groups [][]*schema.Run
}

func groupPlans(rep *schema.Report) []*planRuns {
	var out []*planRuns
	for i := range rep.Runs {
		r := &rep.Runs[i]
		var p *planRuns
		for _, q := range out {
			if q.name == r.Plan {
				p = q
			}
		}
		if p == nil {
			p = &planRuns{name: r.Plan}
			out = append(out, p)
		}
		p.runs = append(p.runs, r)
		k := slices.IndexFunc(p.groups, func(g []*schema.Run) bool { return point(g[0].Sweep) == point(r.Sweep) })
		if k < 0 {
			p.groups = append(p.groups, nil)
			k = len(p.groups) - 1
		}
		p.groups[k] = append(p.groups[k], r)
	}
	for _, p := range out {
		for _, g := range p.groups {
			slices.SortStableFunc(g, func(a, b *schema.Run) int { return phaseOrder(a.Phase) - phaseOrder(b.Phase) })
		}
	}
	return out
}

// outside reports whether the plan's programs are watched from outside:
// a plan file's phases (the report keeps their command and place, run or
// not) or process results. The plan's kind, not which phase finished,
// decides how its charts are captioned.
func (p *planRuns) outside() bool {
	return slices.ContainsFunc(p.runs, func(r *schema.Run) bool {
		if len(r.Command) > 0 || r.PhaseIndex != nil {
			return true
		}
		res := representative(r)
		return res != nil && res.Kind == schema.KindProcess
	})
}

// ends are the first and last phase of the plan's main group (one run when
// the group has one).
func (p *planRuns) ends() []*schema.Run {
	var g []*schema.Run
	for _, h := range p.groups {
		if len(h) > len(g) {
			g = h
		}
	}
	if len(g) < 2 {
		return g
	}
	return []*schema.Run{g[0], g[len(g)-1]}
}

// phaseOrder is 0 for before, k for Pk, and a large number otherwise.
func phaseOrder(phase string) int {
	if phase == "before" {
		return 0
	}
	if k, err := strconv.Atoi(strings.TrimPrefix(phase, "P")); err == nil && strings.HasPrefix(phase, "P") && k > 0 {
		return k
	}
	return math.MaxInt32
}

// point writes sweep values as "a=1, b=2", axes in name order.
func point(sweep map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(sweep)) {
		parts = append(parts, k+"="+sweep[k])
	}
	return strings.Join(parts, ", ")
}

// label is how charts name a run: its phase, with its sweep point.
func label(r *schema.Run) string {
	s := r.Phase
	if s == "" {
		s = r.Name
	}
	if p := point(r.Sweep); p != "" {
		s += " (" + p + ")"
	}
	return s
}

// ok says whether the run has figures.
func ok(r *schema.Run) bool { return r.Status == schema.StatusOK && len(r.Repetitions) > 0 }

// peakMedian is the run's median peak RSS as report's tables show it
// (report.RunMedian; 0 without any).
func peakMedian(r *schema.Run) float64 {
	m, _ := report.RunMedian(r, "peak_rss_bytes")
	return m
}

// representative is the repetition whose peak RSS is nearest the run's
// median (the first of equals), as report's detail tables choose it; nil
// when none finished.
func representative(r *schema.Run) *schema.Result {
	if !ok(r) {
		return nil
	}
	return &r.Repetitions[repIndex(r)]
}

// repIndex is the index of representative(r) (report.Representative);
// r has a repetition.
func repIndex(r *schema.Run) int { return report.Representative(r) }
