//go:build viz

package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"memprobe/internal/atomicfile"
	"memprobe/report/memplot"
	"memprobe/schema"
)

// Linked only with -tags viz: gonum/plot and pprof's web UI add about 12 MiB
// to the resident set of every probe process at start-up (font parsing,
// package init), the probe train children that probe run measures included.
func init() { extraCommands = append(extraCommands, newPlotCmd) }

// plotCmdFlags are the command-line options of `probe plot`.
type plotCmdFlags struct {
	out     string
	metrics []string
	runs    []string
	outside bool
}

func newPlotCmd(stdout, stderr io.Writer) *cobra.Command {
	var f plotCmdFlags
	cmd := &cobra.Command{
		Use:   "plot RESULT.json|REPORT.json [-o out.svg|out.png] [--metric rss,vsz] [--runs A,B] [--outside]",
		Short: "chart the RSS/VSZ timeline of a result, or of chosen runs of a report, peaks marked",
		Long: `plot draws memory against time, each line's peak marked: for a result
(probe train --json) its sampler's timeline; for a run report (probe run)
the timelines of the runs named by --runs (default: every run), each run's
first repetition, or with --outside the parent's samples of that child.
The runs are lines on one chart, so a before and an after compare at a
glance. --metric picks rss, vsz or both; the file is SVG or PNG by -o's
extension (default: the input's name with .svg).`,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := cobra.ExactArgs(1)(cmd, args); err != nil {
				return usageError{fmt.Errorf("plot: want one result or report file: %w", err)}
			}
			if cmd.Flags().Changed("metric") && len(f.metrics) == 0 {
				return usageError{fmt.Errorf("--metric is empty: want rss, vsz or both")}
			}
			for _, m := range f.metrics {
				if memplot.Metrics[m] == nil {
					return usageError{fmt.Errorf("--metric %q: want rss or vsz", m)}
				}
			}
			if ext := strings.ToLower(filepath.Ext(f.out)); f.out != "" && ext != ".svg" && ext != ".png" {
				return usageError{fmt.Errorf("-o %s: want a .svg or .png file", f.out)}
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			return runPlot(stderr, args[0], f)
		},
	}
	cmd.Flags().StringVarP(&f.out, "out", "o", "", "the chart to write, .svg or .png (default: the input with .svg)")
	cmd.Flags().StringSliceVar(&f.metrics, "metric", []string{"rss", "vsz"}, "what to draw: rss, vsz or both")
	cmd.Flags().StringSliceVar(&f.runs, "runs", nil, "a report's runs to draw, by name (default: all)")
	cmd.Flags().BoolVar(&f.outside, "outside", false, "a report's runs: draw the parent's samples of the child instead of the child's own")
	return cmd
}

func runPlot(stderr io.Writer, path string, f plotCmdFlags) error {
	out := f.out
	if out == "" {
		out = strings.TrimSuffix(path, filepath.Ext(path)) + ".svg"
	}
	// The chart must not replace the file it draws, and must be writable,
	// before any work.
	if err := atomicfile.CheckDistinct([]atomicfile.Path{{Flag: "-o", Path: out}}, []atomicfile.Path{{Flag: "FILE", Path: path}}); err != nil {
		return usageError{err}
	}
	if err := atomicfile.CheckWritable(out); err != nil {
		return usageError{fmt.Errorf("-o %w", err)}
	}
	// One reader for every command (openFile: schema.DecodeFile by the
	// file's "schema"), so plot refuses what report, export and history
	// refuse, in their words, and reads a compressed file as they do.
	file, err := openFile(path)
	if err != nil {
		return err
	}
	const takes = "plot draws the memory timeline of a job result (probe train --json) or a run report (probe run)"
	var series []memplot.Series
	title := filepath.Base(path)
	switch {
	case file.Decode != nil:
		return fmt.Errorf("%s is a decode result of probe decode, which has no memory timeline: %s", path, takes)
	case file.Result != nil:
		if len(f.runs) > 0 || f.outside {
			return usageError{fmt.Errorf("%s is a result: --runs and --outside are for run reports", path)}
		}
		r := file.Result
		if r.Sampler == nil {
			return fmt.Errorf("%s: the result has no sampler timeline (instruments were off)", path)
		}
		name := r.Label
		if name == "" {
			name = "train"
		}
		series = append(series, memplot.Series{Name: name, Points: r.Sampler.Timeline})
	default:
		if series, err = reportSeries(path, file.Report, f); err != nil {
			return err
		}
	}
	c, err := memplot.New(title, series, f.metrics)
	if err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	if err := c.Save(out); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "probe plot: wrote %s (%d %s)\n", out, c.Lines, plural(c.Lines, "line", "lines"))
	return nil
}

// reportSeries picks the runs of rep named in f.runs (all when none), in
// that order, each one's first repetition's timeline or, with f.outside,
// the parent's.
func reportSeries(path string, rep *schema.Report, f plotCmdFlags) ([]memplot.Series, error) {
	byName := map[string]*schema.Run{}
	var names []string
	for i := range rep.Runs {
		byName[rep.Runs[i].Name] = &rep.Runs[i]
		names = append(names, rep.Runs[i].Name)
	}
	want := f.runs
	if len(want) == 0 {
		want = names
	}
	var series []memplot.Series
	for _, name := range want {
		run := byName[name]
		switch {
		case run == nil:
			return nil, fmt.Errorf("%s has no run %q (it has %s)", path, name, strings.Join(names, ", "))
		case f.outside && len(run.Outside) == 0:
			return nil, fmt.Errorf("%s: run %s has no outside measurements", path, name)
		case f.outside:
			series = append(series, memplot.Series{Name: name + " (outside)", Points: run.Outside[0].Timeline})
		case len(run.Repetitions) == 0 || run.Repetitions[0].Sampler == nil:
			return nil, fmt.Errorf("%s: run %s has no repetition with a sampler timeline (status %s); try --outside", path, name, run.Status)
		default:
			series = append(series, memplot.Series{Name: name, Points: run.Repetitions[0].Sampler.Timeline})
		}
	}
	return series, nil
}
