package main

import (
	"io"

	"github.com/spf13/cobra"

	"memprobe/run/job"
)

// extraCommands are subcommands linked only in some builds (plot and pprof
// with -tags viz), registered by their files' init.
var extraCommands []func(stdout, stderr io.Writer) *cobra.Command

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "probe",
		Short:         "probe measures where a training program's memory and time go",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// --version prints what `probe version` prints.
	showVersion := root.Flags().Bool("version", false, "print the build and the machine (probe version) and exit")
	root.RunE = func(cmd *cobra.Command, _ []string) error {
		if *showVersion {
			return writeEnvironment(stdout, job.Environment())
		}
		return cmd.Help()
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newTrainCmd(stdout, stderr))
	root.AddCommand(newDecodeCmd(stdout, stderr))
	root.AddCommand(newVersionCmd(stdout))
	root.AddCommand(newRunCmd(stdout, stderr))
	root.AddCommand(newMergeCmd(stdout))
	root.AddCommand(newReportCmd(stdout, stderr))
	root.AddCommand(newFlameCmd(stdout, stderr))
	for _, c := range extraCommands {
		root.AddCommand(c(stdout, stderr))
	}
	root.AddCommand(newDiffCmd(stdout, stderr))
	root.AddCommand(newExportCmd(stdout))
	root.AddCommand(newHistoryCmd(stdout, stderr))
	root.AddCommand(newExecCmd(stdout, stderr))
	root.AddCommand(newAttachCmd(stdout, stderr))
	return root
}

// noArgs is cobra.NoArgs as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if err := cobra.NoArgs(cmd, args); err != nil {
		return usageError{err}
	}
	return nil
}
