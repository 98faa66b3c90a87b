//go:build !viz

package main

import (
	"io"

	"github.com/spf13/cobra"
)

// In the lean build, plot and pprof are stand-ins that run probe-viz
// (viz.go) with the same arguments.
func init() {
	extraCommands = append(extraCommands,
		vizStandIn("plot", "chart the RSS/VSZ timeline of a result or report (runs bin/probe-viz)"),
		vizStandIn("pprof", "serve pprof's interactive web UI for profiles (runs bin/probe-viz)"))
}

func vizStandIn(name, short string) func(stdout, stderr io.Writer) *cobra.Command {
	return func(_, _ io.Writer) *cobra.Command {
		return &cobra.Command{
			Use:                name + " ...",
			Short:              short,
			DisableFlagParsing: true,
			RunE: func(_ *cobra.Command, args []string) error {
				return delegateToViz("probe "+name, append([]string{name}, args...))
			},
		}
	}
}
