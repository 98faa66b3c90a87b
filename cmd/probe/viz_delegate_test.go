//go:build !viz

package main

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// stubViz replaces the search for probe-viz and the exec of it for the
// test: found says whether probe-viz is there; the command lines it would
// have run are returned.
func stubViz(t *testing.T, found bool) *[][]string {
	t.Helper()
	var ran [][]string
	oldFind, oldExec := findViz, execViz
	t.Cleanup(func() { findViz, execViz = oldFind, oldExec })
	findViz = func() (string, bool) { return "/opt/memprobe/bin/probe-viz", found }
	execViz = func(path string, args []string) error {
		ran = append(ran, slices.Clone(args))
		return nil
	}
	return &ran
}

// TestVizDelegation: in the lean build, the commands that draw run
// probe-viz with the same command line; without probe-viz they are a usage
// error (exit 2) that says what to build and why.
func TestVizDelegation(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		args, want []string
	}{
		{[]string{"report", "r.json", "--html", filepath.Join(dir, "r.html")}, []string{"report", "--html=" + filepath.Join(dir, "r.html"), "--", "r.json"}},
		{[]string{"report", "--markdown", "--html=x.html", "r.json"}, []string{"report", "--html=x.html", "--markdown=true", "--", "r.json"}},
		{[]string{"history", "--chart", "c.png", "--metric", "tokens_per_sec", "reports"}, []string{"history", "--chart=c.png", "--metric=tokens_per_sec", "--", "reports"}},
		{[]string{"plot", "r.json", "-o", "x.svg", "--runs", "a,b"}, []string{"plot", "r.json", "-o", "x.svg", "--runs", "a,b"}},
		{[]string{"pprof", "--http", "127.0.0.1:0", "x.pprof"}, []string{"pprof", "--http", "127.0.0.1:0", "x.pprof"}},
	}
	ran := stubViz(t, true)
	for _, c := range cases {
		*ran = nil
		if _, _, err := runProbe(c.args...); err != nil {
			t.Errorf("%v: %v", c.args, err)
		}
		if len(*ran) != 1 || !slices.Equal((*ran)[0], c.want) {
			t.Errorf("%v ran probe-viz with %q, want %q", c.args, *ran, c.want)
		}
	}
	stubViz(t, false)
	for _, c := range cases {
		_, _, err := runProbe(c.args...)
		var ue usageError
		if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), "needs the viz build") ||
			!strings.Contains(err.Error(), "make build") || !strings.Contains(err.Error(), "probe-viz") {
			t.Errorf("%v without probe-viz: %v, want a usage error saying what to build", c.args, err)
		}
	}
	// Plain report and history draw nothing and need no probe-viz.
	ran = stubViz(t, false)
	if _, _, err := runProbe("report", "../../report/testdata/run-report.json"); err != nil || len(*ran) != 0 {
		t.Errorf("report without --html: %v, ran %q", err, *ran)
	}
	// A probe-viz that is a lean binary does not loop.
	t.Setenv(vizDelegatedEnv, "1")
	stubViz(t, true)
	if _, _, err := runProbe("plot", "r.json"); err == nil || !strings.Contains(err.Error(), "is not a viz build") {
		t.Errorf("delegated twice: %v", err)
	}
}
