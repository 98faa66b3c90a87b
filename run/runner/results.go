package runner

import (
	"fmt"
	"path/filepath"
	"time"

	"memprobe/instrument/sampler"
	"memprobe/schema"
)

// FromResults makes a run report of job results read from files (probe
// train --json, probe exec --json), so that everything that reads run
// reports (probe report, probe diff, probe export) reads a result too:
// results of one configuration are the repetitions of one run, summarised
// as probe run summarises its own. A run is named by the result's label
// ("<plan>-<phase>"), else by what it ran: "train <preset> t<threads>"
// or "process <program>". A process result's wait4 maxrss and times
// become the run's outside view, as probe run's parent records them.
// names are the files, for the report's command line; results must not
// be empty.
func FromResults(names []string, results []*schema.Result) (*schema.Report, error) {
	if len(results) == 0 {
		return nil, fmt.Errorf("no results")
	}
	rep := &schema.Report{
		Schema:      schema.ReportVersion,
		Environment: results[0].Environment,
		CommandLine: append([]string{"(results)"}, names...),
		Runs:        []schema.Run{},
		Warnings:    []string{},
	}
	index := map[string]int{}
	var first, last time.Time
	for i, r := range results {
		if t, err := time.Parse(time.RFC3339, r.StartTime); err == nil {
			if first.IsZero() || t.Before(first) {
				first = t
			}
			end := t.Add(time.Duration(resultSeconds(r) * float64(time.Second)))
			if end.After(last) {
				last = end
			}
		}
		name := resultRunName(r)
		k, ok := index[name]
		if !ok {
			k = len(rep.Runs)
			index[name] = k
			rep.Runs = append(rep.Runs, schema.Run{
				Name: name, Plan: r.Config.Plan, Phase: r.Config.Phase, Config: r.Config,
				Status: schema.StatusOK, Repetitions: []schema.Result{}, Outside: []schema.Outside{}, Expect: []schema.Expectation{},
			})
		}
		run := &rep.Runs[k]
		run.Repetitions = append(run.Repetitions, *r)
		if p := r.Process; p != nil {
			o := schema.Outside{
				Repetition: len(run.Repetitions), Status: schema.StatusOK, ExitCode: -1, Signal: p.Signal,
				WallSeconds: p.DurationMs / 1e3, UserSeconds: p.RusageUserMs / 1e3, SystemSeconds: p.RusageSystemMs / 1e3,
				MaxRSSBytes: int64(p.RusageMaxRSSBytes), PeakRSSBytes: int64(r.PeakRSSBytes), PeakVSZBytes: int64(p.Timeline.PeakVSZBytes),
				Timeline: []sampler.Point{},
			}
			if p.ExitCode != nil {
				o.ExitCode = *p.ExitCode
			}
			if r.Sampler != nil && r.Sampler.Timeline != nil {
				o.Timeline = r.Sampler.Timeline
			}
			run.Outside = append(run.Outside, o)
		}
		if r.Environment.VCSRevision != rep.Environment.VCSRevision || r.Environment.CPUModel != rep.Environment.CPUModel {
			rep.Warnings = appendOnce(rep.Warnings, fmt.Sprintf("%s: another commit or machine than %s (%s on %s)", names[i], names[0], r.Environment.VCSRevision, r.Environment.CPUModel))
		}
	}
	for i := range rep.Runs {
		run := &rep.Runs[i]
		Summarize(run, len(run.Repetitions))
	}
	if first.IsZero() {
		first = time.Now()
	}
	if last.Before(first) {
		last = first
	}
	rep.StartTime, rep.EndTime = first.UTC().Format(time.RFC3339), last.UTC().Format(time.RFC3339)
	return rep, nil
}

// resultRunName is the name of a result's run in FromResults.
func resultRunName(r *schema.Result) string {
	switch {
	case r.Label != "":
		return r.Label
	case r.Kind == schema.KindProcess && r.Process != nil && len(r.Process.Command) > 0:
		return "process " + filepath.Base(r.Process.Command[0])
	case r.Kind == schema.KindProcess:
		return "process"
	}
	return fmt.Sprintf("train %s t%d", r.Config.Preset, r.Threads)
}

// resultSeconds is how long a result's job ran, as far as it says.
func resultSeconds(r *schema.Result) float64 {
	if r.Process != nil {
		return r.Process.DurationMs / 1e3
	}
	var ns int64
	for _, s := range r.StepNs {
		ns += s
	}
	return float64(ns) / 1e9
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
