package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"memprobe/schema"
)

// The tests of this file start this test binary as the probe command in
// a process of its own (mainEnv), send it signals and watch its output
// and its descendants: what docs/reliability.md cites.

// markEnv marks every process a test starts, and their descendants, so
// that the test can find any of them left behind.
const markEnv = "MEMPROBE_TEST_MARK"

// probeProc is a probe command running as a child of the test.
type probeProc struct {
	cmd  *exec.Cmd
	mark string

	mu     sync.Mutex
	stderr bytes.Buffer
	lines  chan string // stderr, line by line; closed at EOF
}

// startProbe starts `probe args...` with env added to its environment.
func startProbe(t *testing.T, env []string, args ...string) *probeProc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &probeProc{mark: fmt.Sprintf("%s-%d", t.Name(), os.Getpid()), lines: make(chan string, 1024)}
	p.cmd = exec.Command(exe, args...)
	p.cmd.Env = append(append(os.Environ(), mainEnv+"=1", markEnv+"="+p.mark), env...)
	r, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.stderr.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			select {
			case p.lines <- sc.Text():
			default: // nobody waits for it
			}
		}
	}()
	return p
}

// waitLine blocks until a line of stderr matches re; it fails if stderr
// ends first (the process exited without printing it).
func (p *probeProc) waitLine(t *testing.T, re *regexp.Regexp) {
	t.Helper()
	for l := range p.lines {
		if re.MatchString(l) {
			return
		}
	}
	t.Fatalf("stderr ended without a line matching %q:\n%s", re, p.text())
}

func (p *probeProc) text() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// wait drains stderr and waits for the exit; it returns the exit status.
func (p *probeProc) wait(t *testing.T) int {
	t.Helper()
	for range p.lines {
	}
	err := p.cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return p.cmd.ProcessState.ExitCode()
}

// marked lists the live processes that carry p's mark (zombies count:
// a process nobody reaped is one left behind).
func (p *probeProc) marked() []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && bytes.Contains(b, []byte(markEnv+"="+p.mark+"\x00")) {
			out = append(out, pid)
		}
	}
	return out
}

// noneLeft fails if a process carrying p's mark outlives it. A process
// killed a moment ago may still be on its way out (init reaps an
// orphan): the loop waits for that, with a deadline that only bounds a
// failure.
func (p *probeProc) noneLeft(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := p.marked()
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes left behind by %s: %v", p.cmd.Args, left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var stepRow = regexp.MustCompile(`^\s+1\s+\d+\.\d+\s`) // the step log's row of step 1

// TestTrainInterrupt: SIGINT or SIGTERM after a step has finished stops
// `probe train` at the next step boundary; it writes the result of the
// steps that ran, marked interrupted, prints the summary, and exits 130
// or 143.
func TestTrainInterrupt(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc")
	}
	for _, c := range []struct {
		sig  syscall.Signal
		code int
		name string
	}{{syscall.SIGINT, 130, "SIGINT"}, {syscall.SIGTERM, 143, "SIGTERM"}} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "r.json")
			p := startProbe(t, nil, "train", "--preset", "tiny", "--steps", "1000000", "--data", "synthetic:100KB", "--log-every", "1", "--json", out)
			p.waitLine(t, stepRow)
			if err := p.cmd.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			if code := p.wait(t); code != c.code {
				t.Errorf("exit status %d, want %d\n%s", code, c.code, p.text())
			}
			stderr := p.text()
			last := strings.TrimSpace(stderr[strings.LastIndex(strings.TrimSpace(stderr), "\n")+1:])
			want := regexp.MustCompile(`^probe: stopped after \d+ of 1000000 steps: ` + c.name + ` received; the result of the steps that ran \(marked interrupted\) is in ` + regexp.QuoteMeta(out) + `$`)
			if !want.MatchString(last) {
				t.Errorf("last line %q, want %q", last, want)
			}
			if !strings.Contains(stderr, "peak RSS") {
				t.Errorf("no summary on stderr:\n%s", stderr)
			}
			r, err := schema.ReadResult(out)
			if err != nil {
				t.Fatal(err)
			}
			if !r.Interrupted || r.Steps < 1 || len(r.Losses) != r.Steps || r.Config.Steps != 1000000 {
				t.Errorf("result: interrupted %v, %d steps, %d losses", r.Interrupted, r.Steps, len(r.Losses))
			}
			p.noneLeft(t)
		})
	}
}

// TestTrainMemLimitStop: a job whose RSS passes --mem-limit (the test
// hook leaks 4 MiB a step) stops at the next step boundary with the
// partial result and exits 1.
func TestTrainMemLimitStop(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc")
	}
	out := filepath.Join(t.TempDir(), "r.json")
	p := startProbe(t, []string{growEnv + "=decode-before"}, "train", "--plan", "decode", "--phase", "before", "--preset", "tiny",
		"--steps", "1000000", "--data", "synthetic:100KB", "--mem-limit", "256MiB", "--json", out)
	if code := p.wait(t); code != 1 {
		t.Errorf("exit status %d, want 1\n%s", code, p.text())
	}
	if !regexp.MustCompile(`probe: stopped after \d+ of 1000000 steps: RSS .* passed --mem-limit 256.0 MiB.*; the result of the steps that ran \(marked interrupted\) is in`).MatchString(p.text()) {
		t.Errorf("stderr:\n%s", p.text())
	}
	r, err := schema.ReadResult(out)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Interrupted || r.Steps < 1 || r.PeakRSSBytes < 256<<20 {
		t.Errorf("result: interrupted %v, %d steps, peak %d", r.Interrupted, r.Steps, r.PeakRSSBytes)
	}
}

// TestRunInterruptAndResume: SIGTERM while a child of `probe run` hangs
// kills it (no process of the run is left), writes the report of what
// finished and exits 143; `probe run --resume` of that report runs only
// what it lacks (the configuration it holds would crash if run again)
// and writes the merged report.
func TestRunInterruptAndResume(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc")
	}
	dir := t.TempDir()
	first := filepath.Join(dir, "first.json")
	p := startProbe(t, []string{hangEnv + "=decode-P1"},
		append([]string{"run", "--plan", "decode", "--out", first, "--verbose"}, small...)...)
	p.waitLine(t, regexp.MustCompile(hangEnv+`=decode-P1: hanging after step 1`))
	if n := len(p.marked()); n < 2 {
		t.Fatalf("%d processes of the run, want the parent and its child", n)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 143 {
		t.Errorf("exit status %d, want 143\n%s", code, p.text())
	}
	p.noneLeft(t)
	if !strings.Contains(p.text(), "probe: interrupted (SIGTERM received); the report of what finished is in "+first) {
		t.Errorf("stderr:\n%s", p.text())
	}
	rep, err := schema.ReadReport(first)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 2 || rep.Runs[0].Status != schema.StatusOK || rep.Runs[1].Status != schema.StatusKilled || !strings.Contains(rep.Runs[1].Reason, "interrupted") {
		t.Fatalf("runs of the interrupted report: %+v", rep.Runs)
	}

	// Resume: decode-before is copied (run again, it would crash).
	t.Setenv(crashEnv, "decode-before")
	rep2, _, stderr, err := probeRun(t, append([]string{"--plan", "decode", "--resume", first}, small...)...)
	if err != nil {
		t.Fatalf("resumed run: %v\n%s", err, stderr)
	}
	var names []string
	for _, r := range rep2.Runs {
		names = append(names, r.Name+":"+string(r.Status))
	}
	if strings.Join(names, " ") != "decode-before:ok decode-P1:ok decode-P2:ok decode-P3:ok" {
		t.Errorf("resumed runs %v", names)
	}
	if rep2.Runs[0].Repetitions[0].StartTime != rep.Runs[0].Repetitions[0].StartTime || rep2.Runs[0].Outside[0].WallSeconds != rep.Runs[0].Outside[0].WallSeconds {
		t.Errorf("decode-before was run again")
	}
	if !strings.Contains(strings.Join(rep2.Warnings, "\n"), "resumed from "+first+": 1 of 4 configurations") {
		t.Errorf("warnings %q", rep2.Warnings)
	}
	if !strings.Contains(stderr, "decode-before: measured in "+first+"; not run again") {
		t.Errorf("stderr:\n%s", stderr)
	}

	// A resume file that is not a report: one line naming it, nothing run.
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("{\"schema\":"), 0o644)
	_, _, err = runProbe(append([]string{"run", "--plan", "decode", "--resume", bad, "--out", filepath.Join(dir, "x.json")}, small...)...)
	if err == nil || !strings.Contains(err.Error(), "--resume") || !strings.Contains(err.Error(), bad) {
		t.Errorf("--resume of a truncated file: %v", err)
	}
}

// TestRunMemLimitChild: a child whose RSS passes --mem-limit stops itself
// (its partial result) and is recorded as killed with the reason (that
// the run goes on after it is run/runner's TestFaults).
func TestRunMemLimitChild(t *testing.T) {
	t.Setenv(growEnv, "decode-before")
	rep, _, _, err := probeRun(t, append([]string{"--plan", "decode", "--phases", "before", "--mem-limit", "256MiB"}, append(small, "--steps", "1000")...)...)
	if err == nil || !strings.Contains(err.Error(), "1 of 1 configurations did not finish") {
		t.Errorf("probe run: %v", err)
	}
	r := rep.Runs[0]
	if r.Status != schema.StatusKilled || !strings.Contains(r.Reason, "passed --mem-limit 256.0 MiB") || r.Outside[0].ExitCode != 1 {
		t.Errorf("decode-before: status %s, reason %q", r.Status, r.Reason)
	}
}
