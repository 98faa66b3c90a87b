package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"memprobe/report"
)

func newExportCmd(stdout io.Writer) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "export --format bench REPORT.json | DECODE.json",
		Short: "write a run report in another format (bench: the Go benchmark format, for benchstat)",
		Long: `export writes a run report's repetitions in another format. --format bench is
the Go benchmark format (golang.org/design/14313-benchmark-format), which
benchstat reads: the environment as configuration lines (commit, goos, cpu,
...), then one line per repetition, named after its plan with the phase and
sweep values as keys, e.g.

  BenchmarkThreads/phase=P6/threads=7 1 66743690 ns/op 37347 tokens/s 27230208 peak-rss-B ...

ns/op is the median step time; the other units are ` + fmt.Sprint(report.BenchUnits()[1:]) + `.

A decode result (probe decode --json) is written one line per timed pass
of each mode, an op being one token:

  BenchmarkDecode/mode=batch/device=cpu/B=32/T=128/C=256/V=788/probs=true 1 5587 ns/op 178973 tokens/s ...

with host-wait-ns/op, device-busy-%, syncs/op, launches/op,
host-allocs/op and device-peak-B; the passes are of one process, so
benchstat's intervals are narrower than run-to-run noise.

To compare the exports of two commits, tell benchstat to ignore the
commit: benchstat -ignore commit,commit-time BASE HEAD.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := cobra.ExactArgs(1)(cmd, args); err != nil {
				return usageError{fmt.Errorf("export: want one report file: %w", err)}
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			if format != "bench" {
				return usageError{fmt.Errorf("--format %q: the one format is bench", format)}
			}
			f, err := openFile(args[0])
			if err != nil {
				return err
			}
			if f.Decode != nil {
				return report.WriteBench(stdout, report.DecodeRows(f.Decode))
			}
			rep, err := asReport(f)
			if err != nil {
				return err
			}
			return report.WriteBench(stdout, report.ReportRows(rep))
		},
	}
	cmd.Flags().StringVar(&format, "format", "bench", "output format: bench")
	return cmd
}
