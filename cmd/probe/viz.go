package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"memprobe/report"
	"memprobe/schema"
)

// The viz build. gonum/plot parses its fonts at package init and pprof's
// web UI links its own: about 12 MiB of resident memory in every process
// of a binary that links them, the `probe train` children that `probe run`
// measures included (they are this binary). So they are linked only with
// `-tags viz`: `make build` writes bin/probe (lean, measured) and
// bin/probe-viz (the same command with the charts). In the lean binary the
// commands that draw (report --html, history --chart, plot, pprof) re-exec
// probe-viz found next to it with the same arguments; without one they
// fail with a usage error (exit 2) that says what to build.

// The drawing hooks: set by viz_render.go in -tags viz builds, nil in the
// lean one.
var (
	// writeHTML writes a run report (read from reportPath) as an HTML page.
	writeHTML func(out, reportPath string, rep *schema.Report) error
	// writeDecodeHTML writes a decode result (read from path) as an HTML
	// page. It is set with writeHTML, whose nil is what makes `probe report
	// --html` delegate, whatever the file holds.
	writeDecodeHTML func(out, path string, recs []schema.DecodeRecord) error
	// writeHistoryChart writes `probe history --chart`.
	writeHistoryChart func(out string, entries []report.HistoryEntry, metric, plan string) error
)

// vizBinary is the viz build's file name, next to the lean binary.
const vizBinary = "probe-viz"

// vizDelegatedEnv is set in probe-viz's environment when a lean binary
// started it: a lean binary that finds it set does not re-exec again (a
// lean binary installed as probe-viz would otherwise loop).
const vizDelegatedEnv = "MEMPROBE_VIZ_DELEGATED"

// findViz returns the path of probe-viz next to this executable, and that
// path whether or not it exists (for the error).
var findViz = func() (path string, found bool) {
	exe, err := os.Executable()
	if err != nil {
		return vizBinary, false
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	path = filepath.Join(filepath.Dir(exe), vizBinary)
	fi, err := os.Stat(path)
	return path, err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 && !sameFile(fi, exe)
}

func sameFile(fi os.FileInfo, path string) bool {
	other, err := os.Stat(path)
	return err == nil && os.SameFile(fi, other)
}

// execViz replaces this process with probe-viz (argv[0] is its path): its
// output, exit status and signals are the command's own. It returns only
// on failure.
var execViz = func(path string, args []string) error {
	env := append(os.Environ(), vizDelegatedEnv+"=1")
	return syscall.Exec(path, append([]string{path}, args...), env)
}

// delegateToViz runs the command line args (without the program name) in
// probe-viz, for what (e.g. "probe report --html"); or, when there is no
// probe-viz next to this binary, returns the usage error that says what to
// build.
func delegateToViz(what string, args []string) error {
	path, found := findViz()
	if os.Getenv(vizDelegatedEnv) != "" {
		return usageError{fmt.Errorf("%s: %s was started for it but is not a viz build; rebuild it with go build -tags viz -o %s ./cmd/probe", what, path, path)}
	}
	if !found {
		return usageError{fmt.Errorf("%s needs the viz build (gonum/plot and pprof's UI are kept out of this binary, whose every measured probe train child would carry their ~12 MiB): no %s; run make build, or go build -tags viz -o %s ./cmd/probe", what, path, path)}
	}
	if err := execViz(path, args); err != nil {
		return fmt.Errorf("%s: starting %s: %w", what, path, err)
	}
	return nil
}

// commandArgs rebuilds the command line of a parsed command: its path
// below the root, every flag set (--name=value; a slice flag once per
// value), "--" and the arguments.
func commandArgs(cmd *cobra.Command, args []string) []string {
	out := strings.Fields(cmd.CommandPath())[1:]
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				out = append(out, "--"+f.Name+"="+v)
			}
			return
		}
		out = append(out, "--"+f.Name+"="+f.Value.String())
	})
	return append(append(out, "--"), args...)
}
