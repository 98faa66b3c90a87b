package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"memprobe/report"
	"memprobe/schema"
)

// diffCmdFlags are the command-line options of `probe diff`.
type diffCmdFlags struct {
	metrics []string
	failOn  string
	alpha   float64
	format  string
	reports string
}

// breachError is a --fail-on breach: exit status 1, the breaches already
// written on stderr.
type breachError struct{ n int }

func (b breachError) Error() string { return fmt.Sprintf("diff: %d regressions past --fail-on", b.n) }

func newDiffCmd(stdout, stderr io.Writer) *cobra.Command {
	var f diffCmdFlags
	cmd := &cobra.Command{
		Use:   "diff BASE HEAD | diff BASE..HEAD [--reports DIR]",
		Short: "compare two run reports configuration by configuration; --fail-on makes it a CI gate",
		Long: `diff compares two run reports (probe run's memprobe.report/v1 JSON; a job
result of probe train or probe exec is read as a report of one run), matching
configurations by plan, phase and sweep values. Per metric it prints the base
and head medians with their 95 % intervals, the change in percent and the
p-value of a Mann-Whitney U test (as benchstat does); "~" marks a change that
is not significant at --alpha, and a side with fewer than 4 repetitions gets a
warning beside the row. Deterministic metrics (go_heap_allocs_per_step,
ledger_total_bytes, syncs_per_token) are compared exactly.

--fail-on 'peak_rss_bytes:+5%,go_heap_allocs_per_step:+0' lists limits: "+"
means an increase is a regression, "-" a decrease; a limit is a percentage of
the base's median or an amount in the metric's unit. A significant change past
a limit is written on stderr, one line each, and the exit status is 1.

BASE and HEAD may be directories: the reports in each are pooled, every
repetition of a configuration counting (repeated runs of one commit). One
argument BASE..HEAD is a git range: the reports probe run wrote for those two
commits (probe-<commit>.json) are read from --reports DIR.

Reports of different schema versions, or whose matched configurations ran at
different presets, are refused. Configurations only one report ran are listed.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && isRange(args[0]) {
				return nil
			}
			if err := cobra.ExactArgs(2)(cmd, args); err != nil {
				return usageError{fmt.Errorf("diff: want two report files or directories, BASE and HEAD, or one git range BASE..HEAD: %w", err)}
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) == 1 {
				return runDiff(stdout, stderr, args[0], "", f)
			}
			return runDiff(stdout, stderr, args[0], args[1], f)
		},
	}
	cmd.Flags().StringSliceVar(&f.metrics, "metric", nil, "metrics to compare, comma-separated (default: "+strings.Join(report.DefaultDiffMetrics, ",")+")")
	cmd.Flags().StringVar(&f.failOn, "fail-on", "", "regression limits, e.g. 'peak_rss_bytes:+5%,go_heap_allocs_per_step:+0': exit 1 past one")
	cmd.Flags().Float64Var(&f.alpha, "alpha", report.DefaultAlpha, "significance level of the U test")
	cmd.Flags().StringVar(&f.format, "format", "text", "output format: "+strings.Join(report.DiffFormats, ", "))
	cmd.Flags().StringVar(&f.reports, "reports", ".", "with a range BASE..HEAD: the directory of the probe-<commit>.json reports")
	return cmd
}

func runDiff(stdout, stderr io.Writer, basePath, headPath string, f diffCmdFlags) error {
	if !slices.Contains(report.DiffFormats, f.format) {
		return usageError{fmt.Errorf("--format %q: not one of %s", f.format, strings.Join(report.DiffFormats, ", "))}
	}
	if !(f.alpha > 0 && f.alpha < 1) {
		return usageError{fmt.Errorf("--alpha %v out of range (0, 1)", f.alpha)}
	}
	ths, err := report.ParseThresholds(f.failOn)
	if err != nil {
		return usageError{fmt.Errorf("--fail-on: %w", err)}
	}
	for _, m := range f.metrics {
		if strings.TrimSpace(m) == "" {
			return usageError{fmt.Errorf("--metric: empty metric name")}
		}
	}
	var extra []string
	for _, t := range ths {
		extra = append(extra, t.Metric) // a metric with a limit is compared even when --metric leaves it out
	}
	var base, head *schema.Report
	if headPath == "" {
		base, head, basePath, headPath, err = rangeReports(basePath, f.reports)
	} else if base, err = readSide(basePath); err == nil {
		head, err = readSide(headPath)
	}
	if err != nil {
		return err
	}
	opt := report.DiffOptions{Metrics: f.metrics, Extra: extra, Alpha: f.alpha, BaseName: basePath, HeadName: headPath}
	d, err := report.Compare(base, head, opt)
	if err != nil {
		return err
	}
	if err := report.WriteDiff(stdout, d, f.format); err != nil {
		return err
	}
	breaches := d.Breaches(ths)
	for _, b := range breaches {
		if _, err := fmt.Fprintln(stderr, "regression:", b); err != nil {
			return err
		}
	}
	if len(breaches) > 0 {
		return breachError{len(breaches)}
	}
	return nil
}
