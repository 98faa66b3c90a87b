package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"memprobe/internal/atomicfile"
	"memprobe/internal/table"
	"memprobe/report"
)

// historyCmdFlags are the command-line options of `probe history`.
type historyCmdFlags struct {
	metric, plan, format, chart string
	// metricSet says --metric was given: without it a history of decode
	// results follows tokens_per_sec, of run reports peak_rss_bytes.
	metricSet bool
}

func newHistoryCmd(stdout, stderr io.Writer) *cobra.Command {
	var f historyCmdFlags
	cmd := &cobra.Command{
		Use:   "history DIR",
		Short: "one row per run report in DIR, oldest first, with a metric per configuration and its trend",
		Long: `history reads every *.json run report in DIR and prints one row per report,
ordered by its commit time (environment vcs_time), else its start time, else
the file's time: the commit, the time, and for each configuration (of --plan)
the median of --metric, with ↑ or ↓ where it changed significantly from the
previous report, as probe diff of the two would say (the Mann-Whitney U
test; exact for deterministic metrics where each report has 2 or more
repetitions and they agree) and ~ where it did not, a change one
repetition a side cannot judge included.

DIR may instead hold decode results (probe decode --json), one per
commit: then each column is a decode mode (with its device and shape where
those vary), --metric is a decode figure (tokens_per_sec, the default
there, host_wait_ns_per_token, device_busy_pct, host_allocs_per_token,
...), and a change is tested over the runs where both results pooled
several (probe decode --runs N), else over the passes, as probe diff does.
A directory that mixes decode results with run reports is refused.

A --metric that no report or decode result can have is a usage error (exit
2); one that no configuration in DIR measured is an error (exit 1), not a
column of dashes. DIR must be a directory: probe diff compares two files.

--chart FILE also draws the metric across the reports as a line chart
(gonum/plot), one line per configuration, SVG or PNG by FILE's extension.
It needs the viz build: a lean bin/probe runs bin/probe-viz beside it with
the same arguments, or fails (exit 2) saying what to build.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := cobra.ExactArgs(1)(cmd, args); err != nil {
				return usageError{fmt.Errorf("history: want one directory: %w", err)}
			}
			if ext := strings.ToLower(filepath.Ext(f.chart)); f.chart != "" && ext != ".svg" && ext != ".png" {
				return usageError{fmt.Errorf("--chart %s: want a .svg or .png file", f.chart)}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			f.metricSet = cmd.Flags().Changed("metric")
			if strings.TrimSpace(f.metric) == "" {
				return usageError{fmt.Errorf("--metric: empty metric name")}
			}
			if err := checkMetricName("--metric", f.metric, "probe history"); err != nil {
				return err
			}
			if f.chart != "" && writeHistoryChart == nil {
				return delegateToViz("probe history --chart", commandArgs(cmd, args))
			}
			return runHistory(stdout, stderr, args[0], f)
		},
	}
	cmd.Flags().StringVar(&f.metric, "metric", "peak_rss_bytes", "the metric to follow (for decode results the default is tokens_per_sec)")
	cmd.Flags().StringVar(&f.plan, "plan", "", "only this plan's configurations (default: all)")
	cmd.Flags().StringVar(&f.format, "format", "text", "output format: text, markdown, csv")
	cmd.Flags().StringVar(&f.chart, "chart", "", "also draw the metric across the reports into this .svg or .png file (viz build: bin/probe-viz)")
	return cmd
}

func runHistory(stdout, stderr io.Writer, dir string, f historyCmdFlags) error {
	format, err := table.ParseFormat(f.format)
	if err != nil {
		return usageError{fmt.Errorf("--format: %w", err)}
	}
	if f.chart != "" {
		if err := atomicfile.CheckWritable(f.chart); err != nil {
			return usageError{fmt.Errorf("--chart: %w", err)}
		}
	}
	if st, err := os.Stat(dir); err != nil {
		return fmt.Errorf("history: %w", err)
	} else if !st.IsDir() {
		return fmt.Errorf("history: %s is a file, not a directory: history reads the *.json reports of a directory (probe report reads one, probe diff compares two)", dir)
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return fmt.Errorf("history: no *.json report in %s", dir)
	}
	var entries []report.HistoryEntry
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		e := report.HistoryEntry{Name: filepath.Base(p), ModTime: fi.ModTime()}
		file, err := openFile(p)
		if err != nil {
			return err
		}
		if e.Decode = file.Decode; e.Decode == nil {
			if e.Report, err = asReport(file); err != nil {
				return err
			}
		}
		entries = append(entries, e)
	}
	if !f.metricSet && len(entries) > 0 && entries[0].Report == nil {
		f.metric = "tokens_per_sec" // a decode history's default: decode results have no peak_rss_bytes
	}
	if err := report.WriteHistory(stdout, entries, f.metric, f.plan, format); err != nil {
		if ue, ok := errors.AsType[*report.UnmeasuredError](err); ok {
			ue.Inputs = dir
			return fmt.Errorf("history: --metric %s: %s", f.metric, ue.Detail())
		}
		return err
	}
	if f.chart == "" {
		return nil
	}
	if err := writeHistoryChart(f.chart, entries, f.metric, f.plan); err != nil {
		return fmt.Errorf("--chart %s: %w", f.chart, err)
	}
	_, err = fmt.Fprintf(stderr, "probe history: wrote %s\n", f.chart)
	return err
}
