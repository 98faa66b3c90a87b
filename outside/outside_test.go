package outside

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"memprobe/instrument/gpumem"
	"memprobe/instrument/procfs"
	"memprobe/instrument/reconcile"
	"memprobe/internal/fakenvml"
	"memprobe/report/process"
	"memprobe/schema"
)

// These tests watch real programs: C programs of testdata/cprogs compiled
// at test time (skipped, saying so, without a C compiler). The programs
// block on their standard input once they are in the state under test, so
// that the test takes its walk there and then lets them go: nothing
// depends on timing.

var (
	buildOnce sync.Map // name → *built
	buildDir  string
)

type built struct {
	once sync.Once
	path string
	err  error
}

// holdEnv makes this test binary a Go program that holds until its
// standard input ends (TestGoAfterExec): something for a wrapper to exec.
const holdEnv = "OUTSIDE_TEST_HOLD"

func TestMain(m *testing.M) {
	if os.Getenv(holdEnv) == "1" {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "outside-cprogs-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// cprog compiles testdata/cprogs/NAME.c once per test binary.
func cprog(t testing.TB, name string) string {
	t.Helper()
	cc, err := exec.LookPath("gcc")
	if err != nil {
		if cc, err = exec.LookPath("cc"); err != nil {
			t.Skip("no C compiler (gcc or cc) on PATH: the outside view is tested on C programs compiled here")
		}
	}
	v, _ := buildOnce.LoadOrStore(name, &built{})
	b := v.(*built)
	b.once.Do(func() {
		b.path = filepath.Join(buildDir, name)
		out, err := exec.Command(cc, "-O2", "-Wall", "-pthread", "-o", b.path, filepath.Join("testdata", "cprogs", name+".c")).CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("compiling %s.c: %v\n%s", name, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// held is a program started under Exec that blocks on its standard input.
type held struct {
	s     *Session
	stdin io.WriteCloser
	out   *bufio.Reader
}

// execHeld starts args under Exec with piped standard input and output.
func execHeld(t *testing.T, o Options, env []string, args ...string) *held {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s, err := Exec(ExecOptions{Options: o, Args: args, Env: env, Stdin: inR, Stdout: outW, Stderr: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inW.Close(); outW.Close(); outR.Close() })
	return &held{s: s, stdin: inW, out: bufio.NewReader(outR)}
}

// recPart is rec's part called name (zero where it has none).
func recPart(rec schema.Reconciliation, name string) schema.ReconciliationPart {
	for _, p := range rec.Parts {
		if p.Name == name {
			return p
		}
	}
	return schema.ReconciliationPart{}
}

// waitLine reads the program's output up to a line equal to want.
func (h *held) waitLine(t *testing.T, want string) {
	t.Helper()
	for {
		line, err := h.out.ReadString('\n')
		if err != nil {
			t.Fatalf("waiting for %q: %v", want, err)
		}
		if strings.TrimSpace(line) == want {
			return
		}
	}
}

// release walks now (the state under test), lets the program finish and
// returns the result.
func (h *held) release(t *testing.T) *schema.Result {
	t.Helper()
	if err := h.s.Walk(); err != nil {
		t.Fatal(err)
	}
	h.stdin.Close()
	go io.Copy(io.Discard, h.out) // the program may still write
	r, err := waitDiagnosed(h.s, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// cleanEnv is the test's environment without MALLOC_ARENA_MAX, so that
// glibc's default arena limit applies.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MALLOC_ARENA_MAX=") {
			env = append(env, kv)
		}
	}
	return env
}

// slowWalks keeps the session's own walks rare, so that the test's walk
// is the one that sees the state under test.
var slowWalks = Options{SmapsEvery: time.Hour, noHighWalks: true}

func runThreads(t *testing.T, stackMiB int) *schema.Result {
	t.Helper()
	h := execHeld(t, slowWalks, cleanEnv(), cprog(t, "threads"), "63", strconv.Itoa(stackMiB), "1024", "stdin")
	h.waitLine(t, "ready")
	r := h.release(t)
	if r.Process.ExitCode == nil || *r.Process.ExitCode != 0 {
		t.Fatalf("threads exited with %v, want 0", r.Process.ExitCode)
	}
	if r.Process.AtPeak == nil {
		t.Fatalf("no walk at the peak; warnings %v", r.Warnings)
	}
	return r
}

// waitDiagnosed is s.Wait with the result diagnosed, as probe exec and
// attach write it (report/process.Diagnose).
func waitDiagnosed(s *Session, ctx context.Context) (*schema.Result, error) {
	r, err := s.Wait(ctx)
	if err == nil {
		r.Process.Diagnosis = process.Diagnose(r, s.TimelineCut())
	}
	return r, err
}

func topics(p *schema.Process) map[string]string {
	m := map[string]string{}
	for _, d := range p.Diagnosis {
		m[d.Topic] = d.Text
	}
	return m
}

// TestThreads63: the design notes' 63 pthreads with 8 MiB stacks, each
// writing 16 KiB of its stack and 1 MiB through malloc, seen from outside:
// 63 ± 2 stacks reserving about 504 MiB and holding under 10 MiB, glibc's
// arenas counted against its limit, and a diagnosis that says so. With
// 1 MiB stacks VSZ falls by 63 × 7 MiB = 441 MiB (malloc's reservations
// apart) and RSS by under 5 MiB.
func TestThreads63(t *testing.T) {
	r := runThreads(t, 8)
	p := r.Process
	rec := p.AtPeak.Reconciliation
	if rec.PthreadStacks < 61 || rec.PthreadStacks > 65 {
		t.Errorf("%d thread stacks, want 63 ± 2\n%s", rec.PthreadStacks, render(t, r))
	}
	want := int64(63 * 8 << 20)
	if d := rec.ThreadStackReservedBytes - want; d < -2*8<<20 || d > 2*8<<20 {
		t.Errorf("stacks reserve %d B, want about %d B", rec.ThreadStackReservedBytes, want)
	}
	if rec.ThreadStackResidentBytes >= 10<<20 || rec.ThreadStackResidentBytes < 63*16<<10 {
		t.Errorf("stacks hold %d B resident, want between 63 × 16 KiB and 10 MiB", rec.ThreadStackResidentBytes)
	}
	// glibc makes a new arena for each thread's first malloc until the
	// limit, 8 × CPUs with the main arena, is reached.
	limit := p.AtPeak.GlibcArenaLimit
	if wantArenas := min(63, limit-1); rec.GlibcArenas != wantArenas {
		t.Errorf("%d glibc arenas, want min(63, %d − 1) = %d\n%s", rec.GlibcArenas, limit, wantArenas, render(t, r))
	}
	// The probe is the program's parent, so it may read the program's
	// memory (/proc/PID/mem) unless Yama forbids all ptrace (scope 3):
	// the arenas are counted by their heaps' headers, not estimated.
	if b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope"); (err != nil || strings.TrimSpace(string(b)) != "3") && !rec.GlibcArenasExact {
		t.Errorf("glibc arenas estimated, not read from the heaps' headers (%d heaps)", rec.GlibcHeaps)
	}
	tp := topics(p)
	for _, topic := range []string{"stacks", "arenas", "peak"} {
		if tp[topic] == "" {
			t.Errorf("no %s line in the diagnosis: %v", topic, p.Diagnosis)
		}
	}
	if !strings.Contains(tp["stacks"], "63 thread stacks reserve 504 MiB (VSZ)") && rec.PthreadStacks == 63 {
		t.Errorf("stacks line %q", tp["stacks"])
	}
	peakAgrees(t, p)

	// malloc's reservations move from run to run (which threads share
	// the main arena, [heap], depends on timing: 3 to 30 MiB of brk), so
	// VSZ is compared without them.
	small := runThreads(t, 1)
	sr := small.Process.AtPeak.Reconciliation
	noMalloc := func(r reconcile.Reconciliation) int64 {
		v := r.VSZBytes
		for _, name := range []string{"c.malloc.brk", "c.malloc.arenas"} {
			p, _ := part(r, name)
			v -= p.ReservedBytes
		}
		return v
	}
	dVSZ := noMalloc(rec) - noMalloc(sr)
	dRSS := rec.RSSBytes - sr.RSSBytes
	t.Logf("8 MiB → 1 MiB stacks: VSZ %+d MiB (%+d MiB without malloc's reservations, 441 MiB %+d KiB), RSS %+d KiB",
		(sr.VSZBytes-rec.VSZBytes)>>20, -dVSZ>>20, (dVSZ-441<<20)>>10, -dRSS>>10)
	if w := int64(441 << 20); dVSZ < w-4<<20 || dVSZ > w+4<<20 {
		t.Errorf("VSZ without malloc's reservations fell by %d B with 1 MiB stacks, want about %d B (63 × 7 MiB)", dVSZ, w)
		// Which part moved: a CI run once read 4 MiB + 24 KiB more.
		for _, p := range rec.Parts {
			q, _ := part(sr, p.Name)
			if p.ReservedBytes != q.ReservedBytes || p.Count != q.Count {
				t.Logf("%s: reserved %d B in %d with 8 MiB stacks, %d B in %d with 1 MiB", p.Name, p.ReservedBytes, p.Count, q.ReservedBytes, q.Count)
			}
		}
		for _, q := range sr.Parts {
			if _, ok := part(rec, q.Name); !ok {
				t.Logf("%s: reserved %d B in %d with 1 MiB stacks only", q.Name, q.ReservedBytes, q.Count)
			}
		}
		t.Logf("peak walk at %.0f ms (RSS %d B), end walk at %.0f ms (RSS %d B); 1 MiB: %.0f ms, %.0f ms", p.AtPeak.TMs, p.AtPeak.Reconciliation.RSSBytes, p.End.TMs, p.End.Reconciliation.RSSBytes, small.Process.AtPeak.TMs, small.Process.End.TMs)
		for _, c := range []struct {
			stack string
			r     reconcile.Reconciliation
		}{{"8 MiB", rec}, {"1 MiB", sr}} {
			t.Logf("%s stacks: VSZ %d B, smaps Size %d B, unexplained reserved %d B (%s)", c.stack, c.r.VSZBytes, c.r.SmapsSizeBytes, c.r.UnexplainedReservedBytes, c.r.UnexplainedNote)
			for _, m := range c.r.UnexplainedMappings {
				t.Logf("  unexplained %#x-%#x %s %s: reserved %d B, resident %d B %s", m.Start, m.End, m.Perms, m.Path, m.ReservedBytes, m.ResidentBytes, m.Note)
			}
		}
	}
	if dRSS > 5<<20 || dRSS < -5<<20 {
		t.Errorf("RSS changed by %d B with 1 MiB stacks, want under 5 MiB", dRSS)
	}
}

// TestArenas16: 16 threads that malloc and free: glibc's arenas are found
// and counted.
func TestArenas16(t *testing.T) {
	h := execHeld(t, slowWalks, cleanEnv(), cprog(t, "threads"), "16", "1", "512", "stdin")
	h.waitLine(t, "ready")
	r := h.release(t)
	s := r.Process.AtPeak
	if s == nil {
		t.Fatal("no walk")
	}
	if want := min(16, s.GlibcArenaLimit-1); s.Reconciliation.GlibcArenas != want {
		t.Errorf("%d arenas, want %d\n%s", s.Reconciliation.GlibcArenas, want, render(t, r))
	}
	if s.Reconciliation.PthreadStacks != 16 {
		t.Errorf("%d stacks, want 16", s.Reconciliation.PthreadStacks)
	}
}

// TestGrowth: a program whose RSS grows steadily by 96 MiB: the timeline
// and the diagnosis show the growth, and the peak equals the maximum
// resident set size of /usr/bin/time -v (or of wait4 alone) within 2 %.
// The growth is the timeline's peak less its first sample: the program
// grows only once let go (its gate), after the first sample, and is held
// at its peak until two samples more are taken. Left to run at once, it
// had grown 8 MiB before a first sample late on a loaded machine (growth
// 88.3 MiB), and a release soon after "done" could come before a sample
// of its last blocks.
func TestGrowth(t *testing.T) {
	prog := cprog(t, "grow")
	h := execHeld(t, Options{SmapsEvery: 50 * time.Millisecond}, nil, prog, "96", "2", "2000", "gate")
	if _, err := io.WriteString(h.stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	h.waitLine(t, "done")
	n := h.s.smp.Peek().Samples
	waitFor(t, "two samples of the grown program", func() bool { return h.s.smp.Peek().Samples >= n+2 })
	r := h.release(t)
	p := r.Process
	if p.Timeline.GrowthBytes < 90<<20 {
		t.Errorf("timeline growth %d B (from %d B to %d B), want at least 90 MiB", p.Timeline.GrowthBytes, p.Timeline.StartRSSBytes, p.Timeline.PeakRSSBytes)
	}
	if topics(p)["growth"] == "" {
		t.Errorf("no growth line in the diagnosis: %v", p.Diagnosis)
	}
	peakAgrees(t, p)

	ref, how := maxRSS(t, prog, "96", "2", "0", "0")
	for _, c := range []struct {
		name string
		v    uint64
	}{{"peak_rss_bytes", r.PeakRSSBytes}, {"VmHWM", p.VmHWMBytes}} {
		d := 100 * (float64(c.v) - float64(ref)) / float64(ref)
		t.Logf("%s %d B against %s %d B: %+.2f %%", c.name, c.v, how, ref, d)
		if d < -2 || d > 2 {
			t.Errorf("%s %d B against %s %d B: %+.2f %%, want within 2 %%", c.name, c.v, how, ref, d)
		}
	}
}

var maxRSSLine = regexp.MustCompile(`Maximum resident set size \(kbytes\): (\d+)`)

// maxRSS runs a program alone and returns its maximum resident set size:
// /usr/bin/time -v's, or else wait4's.
func maxRSS(t *testing.T, args ...string) (uint64, string) {
	t.Helper()
	if _, err := os.Stat("/usr/bin/time"); err == nil {
		out, err := exec.Command("/usr/bin/time", append([]string{"-v"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("/usr/bin/time -v: %v\n%s", err, out)
		}
		if m := maxRSSLine.FindSubmatch(out); m != nil {
			kb, _ := strconv.ParseUint(string(m[1]), 10, 64)
			return kb * 1024, "/usr/bin/time -v"
		}
	}
	cmd := exec.Command(args[0], args[1:]...)
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return uint64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) * 1024, "wait4"
}

// render is the result as text, for failure messages.
func render(t *testing.T, r *schema.Result) string {
	t.Helper()
	var b strings.Builder
	if err := process.Render(&b, r, "text"); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestResultSchema: a process result writes as memprobe.train/v3 JSON that
// the schema's reader accepts back, with the common fields filled.
func TestResultSchema(t *testing.T) {
	h := execHeld(t, slowWalks, nil, cprog(t, "threads"), "2", "1", "64", "stdin")
	h.waitLine(t, "ready")
	r := h.release(t)
	path := filepath.Join(t.TempDir(), "r.json")
	if err := schema.WriteResult(path, r); err != nil {
		t.Fatal(err)
	}
	back, err := schema.ReadResult(path)
	if err != nil {
		t.Fatalf("the schema's reader refuses a process result: %v", err)
	}
	switch {
	case back.Kind != schema.KindProcess || back.Process == nil || back.Process.PID != r.Process.PID:
		t.Errorf("kind %q, process %+v", back.Kind, back.Process)
	case back.PeakRSSBytes == 0 || back.FinalRSSBytes == 0 || back.FinalVSZBytes == 0 || back.OSThreads < 1:
		t.Errorf("peak %d, final RSS %d, VSZ %d, threads %d", back.PeakRSSBytes, back.FinalRSSBytes, back.FinalVSZBytes, back.OSThreads)
	case back.Warnings == nil || back.Ledger == nil || back.Sampler == nil || back.Process.Diagnosis == nil:
		t.Error("warnings, ledger, sampler or diagnosis is null")
	case back.RSSReconciliation == nil || back.RSSReconciliation.AtPeak.RSSBytes == 0:
		t.Error("no rss_reconciliation")
	}
}

// TestExecStatus: probe exec's result carries the program's exit status,
// and 128 + the signal when a signal killed it, the signal by its name as
// the docs and probe run write it (SIGKILL, not strsignal's "killed"),
// which the report says with its number; Signal forwards one.
func TestExecStatus(t *testing.T) {
	for _, c := range []struct {
		script string
		code   int
		sig    string
	}{{"exit 3", 3, ""}, {"kill -KILL $$", 137, "SIGKILL"}} {
		s, err := Exec(ExecOptions{Args: []string{"/bin/sh", "-c", c.script}, Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard})
		if err != nil {
			if strings.Contains(err.Error(), "watching pid") {
				continue // it ended before the first sample: nothing to watch, said in the error
			}
			t.Fatal(err)
		}
		r, err := waitDiagnosed(s, context.Background())
		if err != nil {
			t.Fatal(err)
		}
		p := r.Process
		if p.ExitCode == nil || *p.ExitCode != c.code || p.Signal != c.sig || !p.Exited {
			t.Errorf("%q: exit %v signal %q exited %v, want %d %q", c.script, p.ExitCode, p.Signal, p.Exited, c.code, c.sig)
		}
		if c.sig != "" {
			if got, want := KilledBy(p), "SIGKILL (signal 9)"; got != want {
				t.Errorf("%q: KilledBy %q, want %q", c.script, got, want)
			}
			if out := render(t, r); !strings.Contains(out, "killed by SIGKILL (signal 9, status 137) after") {
				t.Errorf("%q: the report does not say killed by SIGKILL (signal 9, status 137):\n%s", c.script, out)
			}
		}
	}

	h := execHeld(t, Options{}, nil, cprog(t, "threads"), "1", "1", "64", "stdin")
	h.waitLine(t, "ready")
	if err := h.s.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	h.stdin.Close()
	r, err := waitDiagnosed(h.s, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if p := r.Process; p.ExitCode == nil || *p.ExitCode != 143 || p.Signal != "SIGTERM" || KilledBy(p) != "SIGTERM (signal 15)" {
		t.Errorf("after SIGTERM: exit %v signal %q (%s), want 143 SIGTERM (signal 15)", p.ExitCode, p.Signal, KilledBy(p))
	}
}

// TestAttachNoProcess: a pid above pid_max never exists: one line, and
// ErrNoProcess.
func TestAttachNoProcess(t *testing.T) {
	pid := 1 << 22 // PID_MAX_LIMIT on 64-bit: no pid reaches it
	_, err := Attach(pid, Options{})
	if !errors.Is(err, ErrNoProcess) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("got %v, want one line wrapping ErrNoProcess", err)
	}
	if want := fmt.Sprintf("attaching to pid %d: no such process", pid); err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

// TestAttachKernelThread: a kernel thread (PF_KTHREAD in its stat's
// flags) has an empty smaps, as a zombie has; attach says it is a kernel
// thread, by name, not that it exited. A zombie still reads as one. The
// /proc files are fakes (a kernel thread may be out of sight in a
// container); pid 2 is tried too where it is one.
func TestAttachKernelThread(t *testing.T) {
	root := t.TempDir()
	for pid, stat := range map[int]string{
		// kthreadd as Linux 6 shows it: flags 0x208040.
		2: "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 1 0 0 0 20 0 1 0 24 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
		// A kernel thread whose name has spaces and parentheses.
		77: "77 (kworker/u8:1 (x)) I 2 0 0 0 -1 69238880 0 0 0 0 0 3 0 0 20 0 1 0 40 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
		// A zombie of a user process: flags 0x400044, no PF_KTHREAD.
		99: "99 (sleep) Z 1 99 99 0 -1 4194372 0 0 0 0 0 0 0 0 20 0 1 0 50 0 0 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
	} {
		d := filepath.Join(root, strconv.Itoa(pid))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range map[string]string{"stat": stat, "smaps": "", "cmdline": ""} {
			if err := os.WriteFile(filepath.Join(d, name), []byte(b), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	fake := Options{FS: procfs.NewFS(root)}
	for pid, want := range map[int]string{
		2:  "pid 2 is a kernel thread (kthreadd): nothing to attach to",
		77: "pid 77 is a kernel thread (kworker/u8:1 (x)): nothing to attach to",
	} {
		_, err := Attach(pid, fake)
		if !errors.Is(err, ErrKernelThread) || err.Error() != want {
			t.Errorf("pid %d: %v, want %q wrapping ErrKernelThread", pid, err, want)
		}
	}
	if _, err := Attach(99, fake); !errors.Is(err, ErrNoProcess) || !strings.Contains(err.Error(), "waits to be reaped") {
		t.Errorf("a zombie: %v, want it said to wait to be reaped", err)
	}
	if _, ok := kernelThread(procfs.FS{}, 2); !ok {
		return // pid 2 is not a kernel thread here (a PID namespace)
	}
	name, _ := kernelThread(procfs.FS{}, 2)
	_, err := Attach(2, Options{})
	if want := fmt.Sprintf("pid 2 is a kernel thread (%s): nothing to attach to", name); !errors.Is(err, ErrKernelThread) || err.Error() != want {
		t.Errorf("the real pid 2: %v, want %q", err, want)
	}
}

// startHeld starts a program outside the probe (for attach) that blocks on
// its standard input after it printed want.
func startHeld(t *testing.T, want string, args ...string) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != want {
		t.Fatalf("program printed %q, %v; want %q", line, err, want)
	}
	return cmd, stdin
}

// TestAttachExitsMidRun: a process that exits while attached ends the
// watch cleanly with what was measured: exited, no exit status (it is not
// the probe's child), the walk taken while it lived.
func TestAttachExitsMidRun(t *testing.T) {
	cmd, stdin := startHeld(t, "ready", cprog(t, "threads"), "8", "1", "256", "stdin")
	s, err := Attach(cmd.Process.Pid, slowWalks)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Walk(); err != nil {
		t.Fatal(err)
	}
	stdin.Close() // it exits; the cleanup reaps it (until then a zombie: exited all the same)
	r, err := waitDiagnosed(s, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p := r.Process
	if !p.Exited || p.ExitCode != nil || r.Interrupted || p.Mode != schema.ModeAttach {
		t.Errorf("exited %v, exit code %v, interrupted %v, mode %q", p.Exited, p.ExitCode, r.Interrupted, p.Mode)
	}
	if p.AtPeak == nil || p.AtPeak.Reconciliation.PthreadStacks != 8 {
		t.Errorf("the walk taken while it lived is missing or wrong:\n%s", render(t, r))
	}
	if len(p.Command) == 0 || !strings.HasSuffix(p.Command[0], "threads") {
		t.Errorf("command %q, want the program's cmdline", p.Command)
	}
}

// TestAttachUntilCancel: when the watch ends first (a duration, Ctrl-C),
// the process is still running: a last walk is taken and the result is
// marked interrupted.
func TestAttachUntilCancel(t *testing.T) {
	cmd, _ := startHeld(t, "ready", cprog(t, "threads"), "4", "1", "256", "stdin")
	r := attachOnce(t, cmd.Process.Pid, slowWalks)
	p := r.Process
	if p.Exited || !r.Interrupted || p.End == nil || p.End.Reconciliation.PthreadStacks != 4 {
		t.Errorf("exited %v, interrupted %v, end walk %v", p.Exited, r.Interrupted, p.End != nil)
	}
}

// TestPermissionError: attaching to a process the probe may not inspect
// says so in one line, naming the pid, the file, the users and the way
// out. The error is built directly: a real case needs a process of
// another user (or an undumpable one), which a test cannot count on
// finding, and as root every ordinary process is readable.
func TestPermissionError(t *testing.T) {
	for _, c := range []struct {
		e    PermissionError
		want string
	}{
		{PermissionError{PID: 4242, Owner: "alice (uid 1001)", Self: "bob (uid 1002)", Path: "/proc/4242/smaps"},
			"attaching to pid 4242: permission denied reading /proc/4242/smaps: the process belongs to alice (uid 1001) and the probe runs as bob (uid 1002); run the probe as alice (uid 1001), or as root (CAP_SYS_PTRACE)"},
		{PermissionError{PID: 7, Owner: "root (uid 0)", Self: "root (uid 0)", Path: "/proc/7/smaps"},
			"attaching to pid 7: permission denied reading /proc/7/smaps: the process is root (uid 0)'s, as the probe is, but may not be inspected (not dumpable, Yama's ptrace_scope, another namespace); run the probe with CAP_SYS_PTRACE"},
	} {
		if got := c.e.Error(); got != c.want {
			t.Errorf("error\n%q, want\n%q", got, c.want)
		}
		if !errors.Is(&c.e, os.ErrPermission) {
			t.Error("PermissionError does not wrap os.ErrPermission")
		}
	}
}

// TestExecGPU: on a machine with NVML (here the stand-in), exec reads the
// program's GPU memory and its GPU's utilization: the program lists
// itself in the fake's process file with 3 MiB on GPU 0, whose
// utilization line says 75 %. NVML has no per-process sample (an empty
// driver buffer), so the process's own figure is absent, not 0, and the
// diagnosis falls back to the device-wide one (TestExecGPUProcessUtilization
// has one). With --gpu=false, or where NVML is not there, the result has
// no GPU section and no warning about it.
func TestExecGPU(t *testing.T) {
	fakenvml.Use(t, "OUTSIDE_EXEC")
	dir := t.TempDir()
	procs, util := filepath.Join(dir, "procs"), filepath.Join(dir, "util")
	t.Setenv(fakenvml.EnvProcBytesFile, procs)
	t.Setenv(fakenvml.EnvUtilFile, util)
	t.Setenv(fakenvml.EnvProcUtilFile, filepath.Join(dir, "no-samples"))
	if err := fakenvml.WriteUtil(util, fakenvml.Util{GPU: 0, GPUPct: 75, MemPct: 20}); err != nil {
		t.Fatal(err)
	}
	// The program writes "pid bytes gpu" whole (write, then rename), then
	// lives long enough for a few readings at 100 ms.
	script := fmt.Sprintf(`echo "$$ %d 0" > %s.tmp && mv %s.tmp %s && sleep 0.5`, 3<<20, procs, procs, procs)
	run := func(o Options) *schema.Result {
		t.Helper()
		return execWait(t, ExecOptions{Options: o, Args: []string{"/bin/sh", "-c", script}, Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard})
	}
	r := run(Options{})
	g := r.Process.GPU
	if g == nil {
		t.Fatalf("no GPU section with NVML there; warnings %v", r.Warnings)
	}
	if g.Samples == 0 || g.PeakBytes != 3<<20 || g.FinalBytes != 3<<20 || g.MeanUtilPct == nil || *g.MeanUtilPct != 75 ||
		g.Errors != 0 || g.UtilErrors != 0 || len(g.Timeline) != g.Samples || g.IntervalMs != 100 {
		t.Errorf("GPU section %+v; want the program's 3 MiB, 75 %% utilization, no errors", g)
	}
	if topics(r.Process)["gpu"] == "" {
		t.Errorf("no gpu finding in the diagnosis: %+v", r.Process.Diagnosis)
	}
	if g.MeanProcessSMUtilPct != nil || g.MeanProcessMemUtilPct != nil || g.ProcessUtilErrors != 0 || g.ProcessUtilNoSampleReadings != g.Samples {
		t.Errorf("per process: SM %v, memory %v, errors %d, no-sample readings %d of %d; want no figure, no error, every reading without a sample",
			g.MeanProcessSMUtilPct, g.MeanProcessMemUtilPct, g.ProcessUtilErrors, g.ProcessUtilNoSampleReadings, g.Samples)
	}
	if !slices.ContainsFunc(r.Process.Diagnosis, func(d schema.Finding) bool { return d.Metric == "gpu_util_pct" && d.Value == 75 }) {
		t.Errorf("no device-wide utilization finding of 75 %%: %+v", r.Process.Diagnosis)
	}
	if r := run(Options{NoGPU: true}); r.Process.GPU != nil {
		t.Errorf("--gpu=false: GPU section %+v, want none", r.Process.GPU)
	}
	t.Setenv(gpumem.EnvLibNVML, filepath.Join(dir, "no", "libnvidia-ml.so.1"))
	if r := run(Options{}); r.Process.GPU != nil || slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.Contains(w, "GPU") }) {
		t.Errorf("no NVML: GPU section %+v, warnings %v; want neither", r.Process.GPU, r.Warnings)
	}
}

// attachOnce attaches to pid with o and ends the watch at once: the
// result of one look (the first sample and the end walk).
func attachOnce(t *testing.T, pid int, o Options) *schema.Result {
	t.Helper()
	s, err := Attach(pid, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, err := waitDiagnosed(s, ctx)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// peakAgrees checks that VmHWM and wait4's maxrss agree within 2 %, unless
// maxrss is the test process's own image (forkImage: the kernel charges
// the parent's high-water mark to a child it forks; this test process
// grows past 160 MiB under make test's load, above these programs).
func peakAgrees(t *testing.T, p *schema.Process) {
	t.Helper()
	if p.ForkImage() {
		t.Logf("wait4's maxrss %d B is the test process's image, not the program's: VmHWM %d B not compared", p.RusageMaxRSSBytes, p.VmHWMBytes)
		return
	}
	if d := p.PeakAgreementPct; d == nil || *d < -2 || *d > 2 {
		t.Errorf("VmHWM %d B against wait4's maxrss %d B: want within 2 %%", p.VmHWMBytes, p.RusageMaxRSSBytes)
	}
}

// execWait runs o under Exec to its end: its result, or the test stops.
func execWait(t testing.TB, o ExecOptions) *schema.Result {
	t.Helper()
	s, err := Exec(o)
	if err != nil {
		t.Fatal(err)
	}
	r, err := waitDiagnosed(s, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestLargeBlocks: glibc's large blocks, a mapping each, are claimed by
// their chunk headers (c.malloc.mmap), four of 8 MiB written through, and
// the diagnosis names them; before, their 32 MiB were unexplained, "large
// malloc blocks ... or another allocator's heap" (sort came out 93 %
// unexplained). memalign's blocks, placed inside larger mappings, are
// claimed by the header glibc left at the mapping's start; the program's
// own mappings, with no such header, stay unexplained.
func TestLargeBlocks(t *testing.T) {
	const blocks, size = 4, 8 << 20
	for _, how := range []string{"malloc", "memalign", "mmap"} {
		h := execHeld(t, slowWalks, nil, cprog(t, "bigblocks"), strconv.Itoa(blocks), strconv.Itoa(size>>20), how, "stdin")
		h.waitLine(t, "ready")
		r := h.release(t)
		// The walk release takes, of the program at rest with its blocks
		// (the end view): the first walk, at the start, may straddle the
		// memalign calls, and where it saw as much it stays the peak view
		// (CI: 2 of the 4 blocks claimed, the other 2 unexplained).
		s := r.Process.End
		if s == nil {
			t.Fatalf("%s: no walk", how)
		}
		var mm schema.ReconciliationPart
		for _, p := range s.Reconciliation.Parts {
			if p.Name == "c.malloc.mmap" {
				mm = p
			}
		}
		rec := s.Reconciliation
		named := false
		for _, d := range r.Process.Diagnosis {
			named = named || d.Metric == "malloc_mmap_resident_bytes" && strings.Contains(d.Text, "4 large malloc blocks")
		}
		t.Logf("%s: c.malloc.mmap %d blocks, %d B resident of %d B; unexplained %d B", how, mm.Count, mm.Bytes, mm.ReservedBytes, rec.UnexplainedBytes)
		if how == "mmap" {
			if mm.Count != 0 || rec.UnexplainedBytes < blocks*size || named {
				t.Errorf("the program's own mappings: c.malloc.mmap %+v, unexplained %d B; want none claimed, %d B unexplained\n%s", mm, rec.UnexplainedBytes, blocks*size, render(t, r))
			}
			continue
		}
		// memalign maps the block, its alignment and a chunk more.
		most := int64(blocks * (size + 4096))
		if how == "memalign" {
			most = blocks * (size + 2<<20)
		}
		if mm.Count != blocks || mm.Bytes < blocks*size || mm.ReservedBytes < blocks*size || mm.ReservedBytes > most {
			t.Errorf("%s: c.malloc.mmap %+v: want %d blocks, at least %d B resident and reserved, at most %d B reserved\n%s", how, mm, blocks, blocks*size, most, render(t, r))
		}
		if rec.UnexplainedBytes > 4<<20 {
			t.Errorf("%s: unexplained %d B: the blocks are not claimed\n%s", how, rec.UnexplainedBytes, render(t, r))
		}
		if !named {
			t.Errorf("%s: no diagnosis names the large blocks:\n%s", how, render(t, r))
		}
	}
}

// TestPythonPools: a Python program holding 300,000 small dicts keeps
// them in CPython's own allocator's pools, in arenas it maps itself: 86 %
// of RSS unexplained before (135.6 MiB of a like program's 156.6 MiB),
// claimed as python.obmalloc now. With PYTHONMALLOC=malloc the same
// objects are glibc's (c.malloc.brk), and no pool is found.
func TestPythonPools(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on PATH")
	}
	if out, err := exec.Command(py, "-c", "import sys; sys.exit(sys.version_info < (3, 8))").CombinedOutput(); err != nil {
		t.Skipf("python3 before 3.8 (another pool layout): %v %s", err, out)
	}
	const script = "import sys\nrows = [{'id': i, 'name': str(i) * 3} for i in range(300000)]\nprint('ready', flush=True)\nsys.stdin.read()\n"
	for _, alloc := range []string{"", "malloc"} {
		var env []string
		for _, kv := range cleanEnv() {
			if !strings.HasPrefix(kv, "PYTHONMALLOC=") {
				env = append(env, kv)
			}
		}
		if alloc != "" {
			env = append(env, "PYTHONMALLOC="+alloc)
		}
		h := execHeld(t, slowWalks, env, py, "-c", script)
		h.waitLine(t, "ready")
		r := h.release(t)
		rec := r.Process.AtPeak.Reconciliation
		pools := recPart(rec, "python.obmalloc")
		t.Logf("PYTHONMALLOC=%q: python.obmalloc %d pools, %d B resident; unexplained %d B of RSS %d B", alloc, pools.Count, pools.Bytes, rec.UnexplainedBytes, rec.RSSBytes)
		if alloc == "malloc" {
			if pools.Count != 0 {
				t.Errorf("PYTHONMALLOC=malloc: python.obmalloc %+v, want none", pools)
			}
			continue
		}
		if pools.Bytes < 40<<20 || rec.UnexplainedBytes*20 > rec.RSSBytes {
			t.Errorf("python.obmalloc %+v, unexplained %d B of %d B: want at least 40 MiB of pools and under 5 %% unexplained\n%s", pools, rec.UnexplainedBytes, rec.RSSBytes, render(t, r))
		}
		if f := finding(r.Process, "python"); f == nil || f.Metric != "python_obmalloc_resident_bytes" || f.Value != float64(pools.Bytes) {
			t.Errorf("diagnosis: %+v; want a python line with the pools' %d B", f, pools.Bytes)
		}
	}
}

// TestMemoryUnreadable: where the process's memory cannot be read (as
// another user, kernel.yama.ptrace_scope 1), glibc's large blocks are not
// found by their headers: their bytes stay unexplained, and the walk says
// why and what would read them (before, nothing said so). The walk reads
// a copy of a live program's /proc files with no mem among them.
func TestMemoryUnreadable(t *testing.T) {
	h := execHeld(t, slowWalks, nil, cprog(t, "bigblocks"), "4", "8", "malloc", "stdin")
	h.waitLine(t, "ready")
	root := t.TempDir()
	dir := filepath.Join(root, strconv.Itoa(h.s.pid))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"smaps", "status", "limits", "environ", "stat", "cmdline"} {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(h.s.pid), f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h.release(t)
	snap, _, _, err := newWalker(procfs.NewFS(root), h.s.pid, false).walk()
	if err != nil {
		t.Fatal(err)
	}
	rec := snap.Reconciliation
	for _, p := range rec.Parts {
		if p.Name == "c.malloc.mmap" {
			t.Errorf("c.malloc.mmap %+v without the process's memory", p)
		}
	}
	if !strings.Contains(strings.Join(rec.Warnings, "\n"), "the process's memory could not be read") || rec.UnexplainedBytes < 32<<20 {
		t.Errorf("warnings %q, unexplained %d B: want the blocks' 32 MiB unexplained and a warning saying why", rec.Warnings, rec.UnexplainedBytes)
	}
}
