package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"memprobe/outside/sites/sitestest"
	"memprobe/schema"
)

// TestExecTrainAgrees: probe exec of probe train (this test binary, which
// TestMain turns into the probe command), with and without the
// instruments, against /usr/bin/time's maxrss of the same command run on
// its own: two measurements by different means (the probe samples VmRSS
// every 10 ms; time(1) reads the kernel's high-water mark from wait4), of
// a program that lives long enough to be sampled 30 times and allocates
// the same every run. The sampled peak must come within 10 % of time's
// (a peak between two samples is missed; the run's GC pacing moves the
// peak by about 1 %), the peak is labelled the program's own, and the
// outside result is a process result the schema's reader accepts.
func TestExecTrainAgrees(t *testing.T) {
	if _, err := os.Stat("/proc/self/smaps"); err != nil {
		t.Skip("no /proc")
	}
	timeBin, err := exec.LookPath("/usr/bin/time")
	if err != nil {
		t.Skip("no /usr/bin/time (Debian's time package)")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(mainEnv, "1")
	for _, c := range []struct {
		name  string
		extra []string
	}{{"no-instruments", []string{"--no-instruments"}}, {"instruments", nil}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			inner, outer := filepath.Join(dir, "inside.json"), filepath.Join(dir, "outside.json")
			train := append([]string{self, "train", "--preset", "tiny", "--steps", "5", "--json", inner}, c.extra...)
			stdout, stderr, err := runProbe(append([]string{"exec", "--json", outer, "--"}, train...)...)
			if err != nil {
				t.Fatalf("probe exec: %v\n%s", err, stderr)
			}
			if _, err := schema.ReadResult(inner); err != nil {
				t.Fatal(err)
			}
			out, err := schema.ReadResult(outer)
			if err != nil {
				t.Fatalf("the outside result is refused: %v", err)
			}
			p := out.Process
			if p.Go == nil {
				t.Error("probe train not detected as a Go program")
			}
			if !strings.Contains(stdout, "probe exec: ") || !strings.Contains(stdout, "Diagnosis") {
				t.Errorf("no report on stdout:\n%s", stdout)
			}
			// Without children, wait4's maxrss can pass the last VmHWM
			// read (every tenth sample) only by what the program took
			// after it; peak_rss_bytes then says it is wait4's.
			switch d := 100 * (float64(p.RusageMaxRSSBytes) - float64(p.VmHWMBytes)) / float64(p.VmHWMBytes); {
			case p.PeakRSSSource == "vm_hwm" && out.PeakRSSBytes != p.VmHWMBytes,
				p.PeakRSSSource == "wait4_maxrss" && (out.PeakRSSBytes != p.RusageMaxRSSBytes || d > 5),
				p.PeakRSSSource != "vm_hwm" && p.PeakRSSSource != "wait4_maxrss":
				t.Errorf("peak_rss_bytes %d from %q: VmHWM %d, wait4 %d (%+.2f %%)", out.PeakRSSBytes, p.PeakRSSSource, p.VmHWMBytes, p.RusageMaxRSSBytes, d)
			}
			if p.Timeline.Samples < 10 {
				t.Skipf("%d samples: the run was too short to be sampled", p.Timeline.Samples)
			}

			tf := filepath.Join(dir, "time.txt")
			cmd := exec.Command(timeBin, append([]string{"-f", "%M", "-o", tf}, train...)...)
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", cmd, err, b)
			}
			b, err := os.ReadFile(tf)
			if err != nil {
				t.Fatal(err)
			}
			kib, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
			if err != nil {
				t.Fatalf("time's %%M: %v in %q", err, b)
			}
			ref := kib << 10
			d := 100 * (float64(p.Timeline.PeakRSSBytes) - float64(ref)) / float64(ref)
			t.Logf("sampled peak %d B over %d samples; /usr/bin/time's maxrss %d B: %+.2f %%", p.Timeline.PeakRSSBytes, p.Timeline.Samples, ref, d)
			if d < -10 || d > 10 {
				t.Errorf("sampled peak %d B against /usr/bin/time's %d B: %+.2f %%, want within 10 %%", p.Timeline.PeakRSSBytes, ref, d)
			}
		})
	}
}

// TestExecPeakFromDescendant: a shell whose child (dd with a 64 MiB
// buffer) peaks far above it. wait4's maxrss is the child's, not the
// shell's; peak_rss_bytes takes it, and both the result and the report's
// peak line say that it came from wait4 and may be a descendant's, with the
// program's own sampled VmHWM beside it.
func TestExecPeakFromDescendant(t *testing.T) {
	if _, err := os.Stat("/proc/self/smaps"); err != nil {
		t.Skip("no /proc")
	}
	if _, err := exec.LookPath("dd"); err != nil {
		t.Skip("no dd")
	}
	// The child must peak above the probe's own image too (this test
	// process, whose peak grows with the tests run before): a wait4 maxrss
	// within 1 % of that image is taken as the image's (forkImage).
	mib := 64 + ownVmHWMBytes(t)>>20
	out := filepath.Join(t.TempDir(), "out.json")
	stdout, stderr, err := runProbe("exec", "--json", out, "--", "/bin/sh", "-c", fmt.Sprintf("dd if=/dev/zero of=/dev/null bs=%dM count=1 2>/dev/null; sleep 0.3", mib))
	if err != nil {
		t.Fatalf("probe exec: %v\n%s", err, stderr)
	}
	r, err := schema.ReadResult(out)
	if err != nil {
		t.Fatal(err)
	}
	p := r.Process
	t.Logf("peak_rss_bytes %d (%s), VmHWM %d, wait4 %d", r.PeakRSSBytes, p.PeakRSSSource, p.VmHWMBytes, p.RusageMaxRSSBytes)
	if r.PeakRSSBytes < mib<<20 || p.VmHWMBytes > 32<<20 {
		t.Fatalf("peak_rss_bytes %d, the shell's VmHWM %d: want the 64 MiB child's peak above a small shell", r.PeakRSSBytes, p.VmHWMBytes)
	}
	if p.PeakRSSSource != "wait4_maxrss" {
		t.Errorf("peak_rss_source %q, want wait4_maxrss", p.PeakRSSSource)
	}
	line := strings.SplitN(stdout, "\n", 3)[1]
	if !strings.Contains(line, "wait4's maxrss") || !strings.Contains(line, "descendant") || !strings.Contains(line, "own VmHWM") {
		t.Errorf("peak line %q does not say the peak is wait4's, maybe a descendant's, beside the program's own", line)
	}
}

// TestExecExitStatus: probe exec exits with the program's status, 128 +
// the signal when a signal killed it, and says which in one line, the
// signal by name and number as the docs write it (not strsignal's
// "killed by killed").
func TestExecExitStatus(t *testing.T) {
	for _, c := range []struct {
		script string
		code   int
		want   string
	}{
		{"exit 0", 0, ""},
		{"exit 3", 3, "exec: /bin/sh exited with status 3"},
		{"kill -TERM $$", 143, "exec: /bin/sh was killed by SIGTERM (signal 15)"},
		{"kill -KILL $$", 137, "exec: /bin/sh was killed by SIGKILL (signal 9)"},
	} {
		_, _, err := runProbe("exec", "--", "/bin/sh", "-c", c.script)
		code := 0
		var ec interface{ ExitCode() int }
		if errors.As(err, &ec) {
			code = ec.ExitCode()
		} else if err != nil {
			t.Errorf("%q: %v, want exit status %d", c.script, err, c.code)
			continue
		}
		if code != c.code {
			t.Errorf("%q: exit status %d, want %d", c.script, code, c.code)
		}
		if c.want != "" && (err == nil || err.Error() != c.want) {
			t.Errorf("%q: error %v, want %q", c.script, err, c.want)
		}
	}
}

// TestExecProbeKilled: a probe exec killed by SIGKILL, which it cannot
// catch to forward, leaves no program behind: the program gets SIGKILL
// as its parent dies (Pdeathsig). The probe runs as a process of its own
// (this test binary as the probe command); the program carries the
// test's mark in its environment, which is how it is found. The loop
// waiting for it to go bounds a failure, not the time it takes.
func TestExecProbeKilled(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc")
	}
	// The program's stderr is not the probe's pipe, which a survivor
	// would hold open.
	p := startProbe(t, nil, "exec", "--gpu=false", "--", "/bin/sh", "-c", "echo started >&2; exec sleep 60 2>/dev/null")
	reaped := false
	t.Cleanup(func() {
		for _, pid := range p.marked() { // a survivor, started by this test
			syscall.Kill(pid, syscall.SIGKILL)
		}
		if !reaped { // a failure before the wait: reap the probe, no zombie for the next test
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
	p.waitLine(t, regexp.MustCompile(`^started$`))
	// The program's environment can be unreadable for a moment (the
	// shell's exec of sleep): look again until it is there. The deadline
	// bounds a failure only.
	var prog []int
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		prog = prog[:0]
		for _, pid := range p.marked() {
			if pid != p.cmd.Process.Pid {
				prog = append(prog, pid)
			}
		}
		if len(prog) == 1 || time.Now().After(deadline) {
			break
		}
	}
	if len(prog) != 1 {
		t.Fatalf("want the probe %d and its program marked, got %v\n%s", p.cmd.Process.Pid, p.marked(), p.text())
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	code := p.wait(t)
	reaped = true
	if code != -1 {
		t.Errorf("probe exec: exit status %d, want -1 (killed)", code)
	}
	p.noneLeft(t)
}

// TestAttachKernelThread: attaching to a kernel thread says it is one,
// by name (not that it exited), exit status 1. Skipped where no kernel
// thread is in sight (a PID namespace).
func TestAttachKernelThread(t *testing.T) {
	pid, name := findKernelThread()
	if pid == 0 {
		t.Skip("no kernel thread in /proc")
	}
	_, _, err := runProbe("attach", strconv.Itoa(pid))
	var ue usageError
	want := fmt.Sprintf("pid %d is a kernel thread (%s): nothing to attach to", pid, name)
	if err == nil || err.Error() != want || errors.As(err, &ue) {
		t.Errorf("attach %d: %v, want %q (exit status 1)", pid, err, want)
	}
}

// findKernelThread is a kernel thread's pid and name (PF_KTHREAD in its
// stat's flags): kthreadd, pid 2, where it is in sight; 0 if none is.
func findKernelThread() (int, string) {
	ents, _ := os.ReadDir("/proc")
	names := []string{"2"}
	for _, e := range ents {
		names = append(names, e.Name())
	}
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", n, "stat"))
		i, j := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if err != nil || i < 0 || j < i {
			continue
		}
		f := strings.Fields(string(b[j+1:]))
		if len(f) < 7 {
			continue
		}
		if flags, _ := strconv.ParseUint(f[6], 10, 64); flags&0x00200000 != 0 {
			return pid, string(b[i+1 : j])
		}
	}
	return 0, ""
}

// TestExecAttachErrors: bad command lines are usage errors (exit 2); a
// pid that does not exist is one line and exit 1.
func TestExecAttachErrors(t *testing.T) {
	for _, c := range []struct {
		args  []string
		want  string
		usage bool
	}{
		{[]string{"exec"}, "exec: no program", true},
		{[]string{"exec", "--format", "csv", "--", "true"}, `--format "csv": want text or markdown`, true},
		{[]string{"exec", "--interval", "10us", "--", "true"}, "interval 10µs is below the minimum 1ms", true},
		{[]string{"exec", "--pprof", "http://127.0.0.1:1/debug/pprof/heap", "--", "true"}, "--pprof needs --out-dir DIR: where the heap profile goes (heap-peak.pprof)", true},
		{[]string{"exec", "--json", "/nonexistent/dir/x.json", "--", "true"}, "--json /nonexistent/dir/x.json", true},
		{[]string{"exec", "--sites", "--", "true"}, "--sites needs --out-dir DIR: where the profiles go (sites-alloc.pb.gz, sites-peak.pb.gz, sites-exit.pb.gz)", true},
		{[]string{"exec", "--sites-rate", "1", "--", "true"}, "--sites-rate: needs --sites", true},
		{[]string{"exec", "--sites", "--sites-rate", "-5", "--out-dir", "/tmp", "--", "true"}, "--sites-rate -5: want a number of bytes", true},
		{[]string{"exec", "--sites", "--sites-rate", "0", "--out-dir", "/tmp", "--", "true"}, "--sites-rate 0: want a number of bytes, 1 or more", true},
		{[]string{"attach"}, "attach: want one PID", true},
		{[]string{"attach", "abc"}, `attach: PID "abc": not a process id`, true},
		{[]string{"attach", "--duration", "-1s", "1"}, "--duration -1s", true},
		{[]string{"attach", strconv.Itoa(1 << 22)}, "attaching to pid 4194304: no such process", false},
		{[]string{"exec", "--", "/nonexistent/program"}, "exec /nonexistent/program: no such file or directory", false},
	} {
		_, _, err := runProbe(c.args...)
		var ue usageError
		switch {
		case err == nil:
			t.Errorf("%v: no error", c.args)
		case errors.As(err, &ue) != c.usage:
			t.Errorf("%v: %v: usage error %v, want %v", c.args, err, !c.usage, c.usage)
		case !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n"):
			t.Errorf("%v: error %q, want one line containing %q", c.args, err, c.want)
		}
	}
}

// TestExecOutDirKept: a second run into an --out-dir that holds the
// first one's profiles refuses before starting anything, naming them,
// and leaves them as they were; with --force it replaces them.
func TestExecOutDirKept(t *testing.T) {
	sitestest.Lib(t)
	dir := t.TempDir()
	args := []string{"exec", "--sites", "--out-dir", dir, "--", "sh", "-c", "sleep 0.1"}
	if _, stderr, err := runProbe(args...); err != nil {
		t.Fatalf("first run: %v\n%s", err, stderr)
	}
	peak := filepath.Join(dir, "sites-peak.pb.gz")
	before, err := os.ReadFile(peak)
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	again := []string{"exec", "--sites", "--out-dir", dir, "--", "sh", "-c", "touch " + marker}
	_, _, err = runProbe(again...)
	var ue usageError
	if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), "--out-dir "+dir+": holds an earlier run's") ||
		!strings.Contains(err.Error(), "sites-peak.pb.gz") || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("second run: %v, want a usage error naming %s's profiles and --force", err, dir)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the program ran although the out-dir was refused")
	}
	if after, err := os.ReadFile(peak); err != nil || !bytes.Equal(after, before) {
		t.Errorf("the first run's peak profile changed (%v)", err)
	}
	if _, stderr, err := runProbe(append([]string{"exec", "--force"}, again[1:]...)...); err != nil {
		t.Fatalf("with --force: %v\n%s", err, stderr)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("with --force the program did not run: %v", err)
	}
}

// TestAttachDuration: probe attach of a running process ends when the
// duration does, with the JSON on stdout (--json -) and the report on
// stderr; the process is left running.
func TestAttachDuration(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep:", err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	stdout, stderr, err := runProbe("attach", "--duration", "50ms", "--json", "-", strconv.Itoa(cmd.Process.Pid))
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	r, err := schema.DecodeResult([]byte(stdout), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	if p := r.Process; p.Exited || !r.Interrupted || p.PID != cmd.Process.Pid || p.End == nil {
		t.Errorf("exited %v, interrupted %v, pid %d, end walk %v", p.Exited, r.Interrupted, p.PID, p.End != nil)
	}
	if !strings.Contains(stderr, "probe attach: sleep 60") {
		t.Errorf("no report on stderr:\n%s", stderr)
	}
	if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the process did not survive the attach: %v", err)
	}
}

// ownVmHWMBytes is this process's peak RSS (VmHWM of /proc/self/status).
func ownVmHWMBytes(t *testing.T) uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmHWM:" {
			kib, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				t.Fatalf("VmHWM %q: %v", l, err)
			}
			return kib << 10
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
	return 0
}
