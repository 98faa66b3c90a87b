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
	"memprobe/report/htmlreport/profiles"
	"memprobe/schema"
)

// reportCmdFlags are the command-line options of `probe report`.
type reportCmdFlags struct {
	markdown bool
	phasesMD string
	html     string
}

func newReportCmd(stdout, stderr io.Writer) *cobra.Command {
	var f reportCmdFlags
	cmd := &cobra.Command{
		Use:   "report REPORT.json [--markdown] [--html out.html] [--phases-md docs/phases.md]",
		Short: "print a run report's before/after tables, or a decode result's; --html draws them as one HTML page; --phases-md puts them into docs/phases.md",
		Long: `report reads a run report (probe run's memprobe.report/v1 JSON), a job
result (probe train --json, probe exec --json: a report of one run) or a
decode result (below). Of a report it prints, plan by plan: the phases with their peak RSS, the changes from the previous
phase and from before, VSZ, Go heap, allocations, tokens/s, the note's
claim and whether the measurement agrees with it (footnotes say by how
much); the analytical model against the ledger and the resident set in
named parts for the first and the last phase; and the sweeps, with the
slope of peak RSS per thread. When the runs wrote profiles (probe run
--profile-dir), a last table names them.

--html FILE also writes one self-contained HTML page (no network): the
same tables, per plan the RSS timelines of the first and last phase on one
chart, the ledger against the model as bars, the resident set in parts as
stacked bars, the sweeps with their fitted lines (gonum/plot, SVG inline),
flame graphs of the heaviest phases' heap profiles, links to every profile,
and the environment. Profiles are read and linked only under the report's
directory. The page needs the viz build: a lean bin/probe runs
bin/probe-viz beside it with the same arguments, or fails (exit 2) saying
what to build.

A decode result (probe decode --json) is printed as probe decode printed
it, under a line naming where it was measured; its --html page has the
same tables, the modes' tokens/s as bars on a log scale (with the spread
of the runs, slowest to fastest, when the result pools them: probe decode
--runs N), where a token's time goes (the wall time, the host's wait and
the device's busy time per token, in µs), the device memory in its parts
(cuda), and the environment. --phases-md refuses a decode result.

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
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.html != "" && writeHTML == nil {
				return delegateToViz("probe report --html", commandArgs(cmd, args))
			}
			return runReport(stdout, stderr, args[0], f)
		},
	}
	cmd.Flags().BoolVar(&f.markdown, "markdown", false, "print the tables as markdown (default: plain text)")
	cmd.Flags().StringVar(&f.html, "html", "", "also write the report as one self-contained HTML page with charts and flame graphs (viz build: bin/probe-viz)")
	cmd.Flags().StringVar(&f.phasesMD, "phases-md", "", "also rewrite the plans' sections between marker comments in this markdown file (docs/phases.md)")
	return cmd
}

func runReport(stdout, stderr io.Writer, path string, f reportCmdFlags) error {
	if f.html != "" {
		if err := atomicfile.CheckWritable(f.html); err != nil {
			return usageError{fmt.Errorf("--html: %w", err)}
		}
	}
	// --phases-md is rewritten in place, by design; it must not be the
	// report, nor the page.
	if err := atomicfile.CheckDistinct([]atomicfile.Path{{Flag: "--html", Path: f.html}, {Flag: "--phases-md", Path: f.phasesMD}},
		[]atomicfile.Path{{Flag: "REPORT", Path: path}}); err != nil {
		return usageError{err}
	}
	format := table.Text
	if f.markdown {
		format = table.Markdown
	}
	file, err := openFile(path)
	if err != nil {
		return err
	}
	if file.Decode != nil {
		return reportDecode(stdout, stderr, file.Decode, path, format, f)
	}
	rep, err := asReport(file)
	if err != nil {
		return err
	}
	if err := writeReportTables(stdout, rep, format); err != nil {
		return err
	}
	if f.html != "" {
		if err := writeHTML(f.html, path, rep); err != nil {
			return fmt.Errorf("--html %s: %w", f.html, err)
		}
		fmt.Fprintf(stderr, "probe report: wrote %s\n", f.html)
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

// reportDecode prints a decode result's tables again (probe decode
// --json), under the line that says where they were measured, and with
// --html writes them as a page with charts, atomically, as a run report's
// (runReport has checked that the page can be written). A decode result
// has no phases section: --phases-md is refused before anything is
// written.
func reportDecode(stdout, stderr io.Writer, recs []schema.DecodeRecord, path string, format table.Format, f reportCmdFlags) error {
	if f.phasesMD != "" {
		return usageError{fmt.Errorf("--phases-md: %s is a decode result of probe decode, which has no phases section; it takes run reports and job results", path)}
	}
	fmt.Fprintln(stdout, report.DecodeProvenance(recs))
	fmt.Fprintln(stdout)
	if err := report.WriteDecode(stdout, recs, format); err != nil {
		return err
	}
	if f.html == "" {
		return nil
	}
	if err := writeDecodeHTML(f.html, path, recs); err != nil {
		return fmt.Errorf("--html %s: %w", f.html, err)
	}
	_, err := fmt.Fprintf(stderr, "probe report: wrote %s\n", f.html)
	return err
}

// writeReportTables writes a run report's tables and, when its runs wrote
// profiles (probe run --profile-dir), the table of them: what probe run
// prints at its end and probe report prints again.
func writeReportTables(w io.Writer, rep *schema.Report, format table.Format) error {
	if err := report.WriteRunTables(w, rep, format); err != nil {
		return err
	}
	if t := profiles.Table(rep); t != nil {
		fmt.Fprintln(w)
		return t.Render(w, format)
	}
	return nil
}
