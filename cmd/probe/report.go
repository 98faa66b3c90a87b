package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"memprobe/internal/atomicfile"
	"memprobe/internal/table"
	"memprobe/report"
	"memprobe/schema"
)

// reportCmdFlags are the command-line options of `probe report`.
type reportCmdFlags struct {
	markdown bool
	phasesMD string
}

func newReportCmd(stdout, stderr io.Writer) *cobra.Command {
	var f reportCmdFlags
	cmd := &cobra.Command{
		Use:   "report REPORT.json",
		Short: "print a run report's before/after tables; --phases-md puts them into docs/phases.md",
		Long: `report reads a run report (probe run's memprobe.report/v1 JSON) and prints,
plan by plan: the phases with their peak RSS, the changes from the previous
phase and from before, VSZ, Go heap, allocations, tokens/s, the note's
claim and whether the measurement agrees with it (footnotes say by how
much); the analytical model against the ledger and the resident set in
named parts for the first and the last phase; and the sweeps, with the
slope of peak RSS per thread.

--phases-md FILE rewrites, in FILE, the section of each plan of the report:
the lines between "<!-- probe report: plan NAME -->" and the next
"<!-- end probe report -->". The rest of the file is kept; the file is
replaced atomically, and not at all when a plan's marker is missing.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := cobra.ExactArgs(1)(cmd, args); err != nil {
				return usageError{fmt.Errorf("report: want one report file: %w", err)}
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			return runReport(stdout, stderr, args[0], f)
		},
	}
	cmd.Flags().BoolVar(&f.markdown, "markdown", false, "print the tables as markdown (default: plain text)")
	cmd.Flags().StringVar(&f.phasesMD, "phases-md", "", "also rewrite the plans' sections between marker comments in this markdown file (docs/phases.md)")
	return cmd
}

func runReport(stdout, stderr io.Writer, path string, f reportCmdFlags) error {
	rep, err := schema.ReadReport(path)
	if err != nil {
		return err
	}
	format := table.Text
	if f.markdown {
		format = table.Markdown
	}
	if err := report.WriteRunTables(stdout, rep, format); err != nil {
		return err
	}
	if f.phasesMD == "" {
		return nil
	}
	doc, err := os.ReadFile(f.phasesMD)
	if err != nil {
		return fmt.Errorf("--phases-md: %w", err)
	}
	updated, err := report.UpdateDoc(doc, rep)
	if err != nil {
		return fmt.Errorf("--phases-md %s: %w", f.phasesMD, err)
	}
	if err := atomicfile.WriteBytes(f.phasesMD, updated); err != nil {
		return err
	}
	var names []string
	for _, p := range report.Plans(rep) {
		if p != "" {
			names = append(names, p)
		}
	}
	what := "no section: the report has no run of a plan"
	if len(names) > 0 {
		what = "the sections of plan " + strings.Join(names, ", ")
	}
	_, err = fmt.Fprintf(stderr, "probe report: rewrote %s in %s\n", what, f.phasesMD)
	return err
}
