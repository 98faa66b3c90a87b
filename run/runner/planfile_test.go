package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"memprobe/internal/golden"
	"memprobe/internal/table"
	"memprobe/outside/sites"
	"memprobe/outside/sites/sitestest"
	"memprobe/report"
	"memprobe/run/planfile"
	"memprobe/schema"
)

// writePlan writes a plan file into a new directory and loads it.
func writePlan(t *testing.T, src string, sweeps ...string) *planfile.Plan {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plan.toml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var sw []planfile.Sweep
	for _, s := range sweeps {
		x, err := planfile.ParseSweep(s)
		if err != nil {
			t.Fatal(err)
		}
		sw = append(sw, x)
	}
	p, err := planfile.Load(path, sw)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// planOptions runs plan p's programs, the test binary as the fake child
// where a phase names {probe}.
func planOptions(t *testing.T, p *planfile.Plan) Options {
	t.Helper()
	o := fakeOptions(t, "")
	o.Preset, o.Steps, o.Data, o.Count = "", 0, "", 0
	o.PlanFile = p
	return o
}

// TestPlanFileRun: each phase runs as a program watched from outside,
// count times; a program that exits non-zero is failed with its status
// and last stderr line, and the run goes on; the phase's environment
// sets and removes variables; the claims are judged by the report's
// claims column against the previous phase, named by its name.
func TestPlanFileRun(t *testing.T) {
	p := writePlan(t, `
name = "fake"
count = 2
[vars]
small = 8

[[phase]]
name = "small"
command = ["{probe}", "alloc", "{small}", "100"]

[[phase]]
name = "big"
description = "64 MiB more"
command = ["{probe}", "alloc", "72", "100"]
expect = [{ metric = "peak_rss_bytes", change = "+64MiB" }]

[[phase]]
name = "wrong"
command = ["{probe}", "alloc", "8", "100"]
expect = [{ metric = "peak_rss_bytes", change = "+64MiB" }]

[[phase]]
name = "fails"
command = ["/bin/sh", "-c", "echo first >&2; echo 'the last line' >&2; exit 3"]

[[phase]]
name = "env"
command = ["/bin/sh", "-c", "test -z \"$GONE\" && test \"$SET\" = v-8"]
env = { GONE = "", SET = "v-{small}" }

`)
	o := planOptions(t, p)
	o.Env = append(o.Env, "GONE=here")
	rep, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	noChildrenLeft(t)
	byName := map[string]schema.Run{}
	for _, r := range rep.Runs {
		byName[r.Phase] = r
	}
	for _, name := range []string{"small", "big", "env", "wrong"} {
		r := byName[name]
		if r.Status != schema.StatusOK || len(r.Repetitions) != 2 || len(r.Outside) != 2 {
			t.Errorf("%s: %s (%s), %d repetitions, %d outside", name, r.Status, r.Reason, len(r.Repetitions), len(r.Outside))
			continue
		}
		if x := r.Repetitions[0]; x.Kind != schema.KindProcess || x.Label != "fake-"+name || x.Config.Phase != name {
			t.Errorf("%s: repetition kind %q label %q phase %q", name, x.Kind, x.Label, x.Config.Phase)
		}
		if r.PhaseIndex == nil || r.Index == nil || len(r.Command) == 0 {
			t.Errorf("%s: phase index %v, index %v, command %q", name, r.PhaseIndex, r.Index, r.Command)
		}
	}
	if r := byName["fails"]; r.Status != schema.StatusFailed || r.Reason != "repetition 1 of 2: exit status 3: the last line" || len(r.Outside) != 1 {
		t.Errorf("fails: %s %q, %d outside", r.Status, r.Reason, len(r.Outside))
	}
	if got := byName["small"].Command[0]; got != "{probe}" {
		t.Errorf("recorded command %q, want {probe} unexpanded", got)
	}
	if env := byName["env"].Env; env["GONE"] != "" || env["SET"] != "v-8" {
		t.Errorf("recorded env %v", env)
	}
	big, small := byName["big"].Summary, byName["small"].Summary
	if d := medianOf(big, "peak_rss_bytes") - medianOf(small, "peak_rss_bytes"); d < 48<<20 || d > 80<<20 {
		t.Errorf("peak RSS big - small = %.0f, want about 64 MiB", d)
	}
	var out bytes.Buffer
	if err := report.WriteRunTables(&out, rep, table.Text); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"fails failed: repetition 1 of 2: exit status 3: the last line", "wrong, no: peak RSS changed by", "from big;"} {
		if !strings.Contains(text, want) {
			t.Errorf("tables lack %q:\n%s", want, text)
		}
	}
	if !regexpLine(text, `^big\s+64 MiB more\s+-\s+yes\s`) {
		t.Errorf("big's claim not judged yes:\n%s", text)
	}
}

func medianOf(s schema.Summary, name string) float64 {
	for _, m := range s.Metrics {
		if m.Name == name {
			return m.Median
		}
	}
	return -1
}

func regexpLine(text, re string) bool {
	for _, l := range strings.Split(text, "\n") {
		if ok, _ := regexp.MatchString(re, l); ok {
			return true
		}
	}
	return false
}

// TestPlanFileLimits: a program past --timeout, past --mem-limit, or
// running when the run is interrupted is killed and recorded as such.
func TestPlanFileLimits(t *testing.T) {
	p := writePlan(t, `
name = "limits"
count = 1
[[phase]]
name = "slow"
command = ["{probe}", "alloc", "1", "60000"]
[[phase]]
name = "grows"
command = ["{probe}", "alloc", "256", "60000"]
`)
	o := planOptions(t, p)
	o.Phases = []string{"slow"}
	o.Timeout = 300 * time.Millisecond
	rep, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Runs[0]; r.Status != schema.StatusTimeout || !strings.Contains(r.Reason, "ran past --timeout 300ms") || r.Outside[0].Signal != "SIGKILL" {
		t.Errorf("slow: %s %q signal %q", r.Status, r.Reason, r.Outside[0].Signal)
	}
	o = planOptions(t, p)
	o.Phases, o.MemLimit = []string{"grows"}, 128<<20
	if rep, err = Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if r := rep.Runs[0]; r.Status != schema.StatusKilled || !strings.Contains(r.Reason, "passed --mem-limit 128.0 MiB") {
		t.Errorf("grows: %s %q", r.Status, r.Reason)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	o = planOptions(t, p)
	start := time.Now()
	rep, err = Run(ctx, o)
	if !errors.Is(err, ErrInterrupted) || len(rep.Runs) != 1 || rep.Runs[0].Status != schema.StatusKilled {
		t.Errorf("interrupted: %v, %d runs", err, len(rep.Runs))
	}
	if time.Since(start) > 30*time.Second {
		t.Errorf("the interruption took %v", time.Since(start))
	}
	noChildrenLeft(t)
}

// TestPlanFileResume: --resume copies the configurations an earlier
// report finished and runs only the rest; a changed command is another
// configuration.
func TestPlanFileResume(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "ran.log")
	src := `
name = "resume"
[vars]
log = "` + log + `"
arg = "a"
[[phase]]
name = "one"
command = ["/bin/sh", "-c", "echo one-{arg} >> {log}"]
[[phase]]
name = "two"
command = ["/bin/sh", "-c", "echo two-{arg} >> {log}"]
`
	p := writePlan(t, src)
	o := planOptions(t, p)
	o.Count = 1
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	first := o.Out
	o = planOptions(t, p)
	o.Count, o.Resume = 2, first
	rep, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Runs {
		if len(r.Repetitions) != 2 {
			t.Errorf("%s: %d repetitions", r.Name, len(r.Repetitions))
		}
	}
	b, _ := os.ReadFile(log)
	if got := strings.Fields(string(b)); !slices.Equal(got, []string{"one-a", "two-a", "one-a", "two-a"}) {
		t.Errorf("programs run %q, want each once and once more on resume", got)
	}
	os.Remove(log)
	p2 := writePlan(t, strings.Replace(src, `arg = "a"`, `arg = "b"`, 1))
	o = planOptions(t, p2)
	o.Count, o.Resume = 2, first
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(log)
	if got := strings.Fields(string(b)); len(got) != 4 || got[0] != "one-b" {
		t.Errorf("another command resumed from the report: ran %q", got)
	}
}

// TestPlanFileSetup: a setup command runs once before the phases, in the
// plan's directory, with {tmp}; one that fails ends the run before any
// phase, with its status and last line.
func TestPlanFileSetup(t *testing.T) {
	p := writePlan(t, `
name = "setup"
setup = ["/bin/sh", "-c", "printf '#!/bin/sh\nexit 0\n' > {tmp}/prog && chmod +x {tmp}/prog && touch made-here"]
[[phase]]
name = "one"
command = ["{tmp}/prog"]
`)
	o := planOptions(t, p)
	rep, err := Run(context.Background(), o)
	if err != nil || rep.Runs[0].Status != schema.StatusOK {
		t.Fatalf("%v; %+v", err, rep)
	}
	if _, err := os.Stat(filepath.Join(p.Dir, "made-here")); err != nil {
		t.Errorf("setup did not run in the plan's directory: %v", err)
	}
	bad := writePlan(t, `
name = "setup"
setup = ["/bin/sh", "-c", "echo 'cc: no such file' >&2; exit 4"]
[[phase]]
name = "one"
command = ["/bin/true"]
`)
	o = planOptions(t, bad)
	rep, err = Run(context.Background(), o)
	if err == nil || rep != nil || !strings.Contains(err.Error(), "exit status 4: cc: no such file") {
		t.Errorf("failed setup: %v, report %v", err, rep != nil)
	}
	if _, err := os.Stat(o.Out); err == nil {
		t.Error("a report was written after a failed setup")
	}
}

// TestPlanFileDryRun: --dry-run lists the programs with their
// environment changes, and predicts nothing.
func TestPlanFileDryRun(t *testing.T) {
	p := writePlan(t, `
name = "dry"
[[phase]]
name = "one"
command = ["./prog", "--n", "{n}"]
env = { A = "", B = "x y" }
`, "n=1,2")
	o := planOptions(t, p)
	o.Phases = []string{"after"} // the last phase, "one"
	cs, err := Prepare(&o)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WritePlan(&b, cs, o, "probe", table.Text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"#0  env -u A 'B=x y' ./prog --n 1", "#1  env -u A 'B=x y' ./prog --n 2", "dry-one n=2", "no memory model"} {
		if !strings.Contains(b.String(), want) && !strings.Contains(strings.Join(names(cs), ","), want) {
			t.Errorf("dry run lacks %q:\n%s", want, b.String())
		}
	}
}

// TestPlanFileSites: with Sites each program runs under the
// allocation-site library, as probe exec --sites runs it, and each
// repetition's result holds its sites; the profiles go to ProfileDir.
func TestPlanFileSites(t *testing.T) {
	lib := sitestest.Lib(t)
	src, _ := filepath.Abs(filepath.Join("..", "..", "examples", "c-threads", "threads.c"))
	p := writePlan(t, `
name = "sites"
count = 1
setup = ["cc", "-O2", "-pthread", "-o", "{tmp}/threads", "`+src+`"]
[[phase]]
name = "one"
command = ["{tmp}/threads", "--threads", "4", "--hold-ms", "50"]
`)
	o := planOptions(t, p)
	o.Sites, o.ProfileDir = true, t.TempDir()
	t.Setenv(sites.EnvLib, filepath.Join(t.TempDir(), "missing.so"))
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "--sites") {
		t.Errorf("a missing library: %v, want a refusal before any child", err)
	}
	t.Setenv(sites.EnvLib, lib)
	rep, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Runs[0]
	if r.Status != schema.StatusOK || r.Repetitions[0].Process.Sites == nil {
		t.Fatalf("%s (%s): no sites", r.Status, r.Reason)
	}
	// 63 batches of 48 KiB (3 MiB), then 4 threads x 1 MiB in 16 KiB
	// blocks: sampled at one per 512 KiB on average, an estimate.
	if s := r.Repetitions[0].Process.Sites; s.PeakInUseBytes < 1<<20 {
		t.Errorf("sites: %d bytes in use at the peak, want some of the program's 7 MiB", s.PeakInUseBytes)
	}
	if m, _ := filepath.Glob(filepath.Join(o.ProfileDir, "sites-one-r1", "sites-*.pb.gz")); len(m) == 0 {
		t.Errorf("no sites profiles in %s", o.ProfileDir)
	}
	o.Sites, o.PlanFile = true, nil
	if _, err := Prepare(&o); err == nil || !strings.Contains(err.Error(), "--sites needs --plan-file") {
		t.Errorf("--sites with the built-in plans: %v", err)
	}
}

// TestPlanFileDryRunGolden compares --dry-run of examples/c-threads.toml
// with testdata/dryrun-planfile.golden (the plan's directory written as
// $PLAN_DIR: it is where the checkout is).
func TestPlanFileDryRunGolden(t *testing.T) {
	p, err := planfile.Load(filepath.Join("..", "..", "examples", "c-threads.toml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{MemLimit: 2 << 30, PlanFile: p, Executable: "/some/bin/probe"}
	cs, err := Prepare(&o)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WritePlan(&b, cs, o, "/some/bin/probe", table.Text); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "dryrun-planfile.golden", []byte(strings.ReplaceAll(b.String(), p.Dir, "$PLAN_DIR")))
}

// TestPlanFileKillsTheGroup: a phase killed past --timeout takes the
// processes it started with it (its own process group), not only the
// program: a shell's background sleep, whose pid it writes down, is gone
// once Run returns. Planted: killing only the program (no group of its
// own) leaves the sleep running, which the test shows first.
func TestPlanFileKillsTheGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "bg.pid")
	p := writePlan(t, `
name = "group"
count = 1
[[phase]]
name = "spawns"
command = ["/bin/sh", "-c", "sleep 60 & echo $! > `+pidFile+`; wait"]
`)
	alive := func(pid int) bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		// A zombie (state Z) has exited: only its parent (init, here) has
		// not reaped it yet.
		return err == nil && !strings.Contains(string(b), ") Z ")
	}
	for _, planted := range []bool{true, false} {
		_ = os.Remove(pidFile)
		o := planOptions(t, p)
		o.Timeout = 300 * time.Millisecond
		noGroup = planted
		rep, err := Run(context.Background(), o)
		noGroup = false
		if err != nil {
			t.Fatal(err)
		}
		if r := rep.Runs[0]; r.Status != schema.StatusTimeout {
			t.Fatalf("planted %v: %s %q, want a timeout", planted, r.Status, r.Reason)
		}
		b, err := os.ReadFile(pidFile)
		if err != nil {
			t.Fatalf("planted %v: the shell wrote no pid: %v", planted, err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		// The kill is sent before Run returns; give the kernel a moment
		// to finish the sleep off.
		deadline := time.Now().Add(5 * time.Second)
		for alive(pid) && !planted && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		switch {
		case planted && !alive(pid):
			t.Errorf("planted (the program alone killed): the background sleep %d is gone too; the test cannot tell", pid)
		case planted:
			_ = syscall.Kill(pid, syscall.SIGKILL)
		case alive(pid):
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("the background sleep %d outlived its phase's timeout", pid)
		}
	}
}
