package outside

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"memprobe/instrument/procfs"
	"memprobe/instrument/reconcile"
	"memprobe/instrument/sampler"
	"memprobe/internal/table"
	"memprobe/report/process"
	"memprobe/schema"
)

// The tests of this file come from an audit of probe exec and probe
// attach against real programs: each is a fault it found.

// waitFor polls cond every 10 ms; the deadline bounds a failure only.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: gave up", what)
		}
	}
}

// TestRelease: a program that touches 64 MiB, gives it back
// (MADV_DONTNEED) and idles is a release, not a plateau: the diagnosis
// said "RSS grew 257 MiB in 0.15 s, then levelled off at 257.1 MiB" of a
// program that ended at 1.07 MiB. The program is let go only once the
// sampler has seen each state, and after the release it idles as long
// as it ran before it, so that the release is not in the run's last
// quarter.
func TestRelease(t *testing.T) {
	h := execHeld(t, slowWalks, nil, cprog(t, "release"), "64")
	h.waitLine(t, "touched")
	waitFor(t, "the sampler to see 64 MiB", func() bool { return h.s.smp.Peek().Peaks.RSSBytes >= 64<<20 })
	if _, err := io.WriteString(h.stdin, "release\n"); err != nil {
		t.Fatal(err)
	}
	h.waitLine(t, "released")
	var released float64
	waitFor(t, "the sampler to see the release", func() bool {
		r := h.s.smp.Peek()
		if n := len(r.Timeline); n > 0 && r.Timeline[n-1].RSSBytes < 16<<20 {
			released = r.Timeline[n-1].TMs
			return true
		}
		return false
	})
	waitFor(t, "an idle as long as the run before the release", func() bool { return h.s.smp.Peek().DurationMs >= 2*released+100 })
	h.stdin.Close()
	go io.Copy(io.Discard, h.out)
	r, err := waitDiagnosed(h.s, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p := r.Process
	tp := topics(p)
	if strings.Contains(tp["growth"], "levelled off") {
		t.Errorf("a release read as a plateau: %q", tp["growth"])
	}
	i := slices.IndexFunc(p.Diagnosis, func(d schema.Finding) bool { return d.Topic == "release" })
	if i < 0 {
		t.Fatalf("no release finding: %+v\n%s", p.Diagnosis, render(t, r))
	}
	d := p.Diagnosis[i]
	if d.Metric != "released_bytes" || d.Value < 60<<20 || !strings.Contains(d.Text, "then released") || !strings.Contains(d.Text, "at the end") {
		t.Errorf("release finding %+v: want released_bytes about 64 MiB, saying where it ended", d)
	}
}

// TestKeptSamplerWarnings: a process that exited ends every timeline with
// the sampler's reads failing, which says nothing; a sampler that stopped
// while the process lived on (seen alive after its last sample) cut the
// timeline short, and that is kept, said first. Before, finish dropped
// every warning of a process that exited: a wrapper's execve gave a
// 10-sample timeline of a 2 s run and no warning.
func TestKeptSamplerWarnings(t *testing.T) {
	start := time.Now()
	smpStart := start.Add(5 * time.Millisecond)
	res := sampler.Result{Samples: 10, DurationMs: 90, Warnings: []string{
		"sampling stopped after 10 samples: reading smaps_rollup: no such process",
		"final sample: reading /proc/9/status: no such process",
	}}
	// The normal end: last seen alive within the margin of the last sample.
	kept, note := keptSamplerWarnings(res, start, smpStart, smpStart.Add(120*time.Millisecond), 10*time.Millisecond, nil)
	if note != "" || len(kept) != 0 {
		t.Errorf("normal end: note %q, warnings %q; want none", note, kept)
	}
	// Cut short: seen alive 2 s in, the sampler's last sample at 0.095 s.
	execs := []string{"at about 0.25 s: /usr/bin/dash → /usr/bin/python3.11"}
	kept, note = keptSamplerWarnings(res, start, smpStart, start.Add(2*time.Second), 10*time.Millisecond, execs)
	if !slices.Equal(kept, res.Warnings[:1]) {
		t.Errorf("cut short: kept %q, want the sampler's reason alone", kept)
	}
	for _, want := range []string{"the timeline is incomplete: the sampler stopped at 0.10 s, after 10 samples, while the process lived until at least 2.00 s",
		"execve at about 0.25 s: /usr/bin/dash → /usr/bin/python3.11"} {
		if !strings.Contains(note, want) {
			t.Errorf("note %q does not say %q", note, want)
		}
	}
	// Any other warning of the sampler (a field it could not read) stays.
	res.Warnings = append(res.Warnings, "smaps_rollup: permission denied: PSS, swap and the private/shared split are not sampled")
	if kept, note := keptSamplerWarnings(res, start, smpStart, smpStart.Add(95*time.Millisecond), 10*time.Millisecond, nil); note != "" || !slices.Equal(kept, res.Warnings[2:]) {
		t.Errorf("normal end with a field unread: %q, %q; want that warning alone", note, kept)
	}
}

// TestGoAfterExec: a wrapper that execs a Go program (sh -c 'exec
// ./goprog') is a Go program in the result, with a warning naming the
// execve. Go detection was decided at the start, on the shell: "not a Go
// program". The program is this test binary holding on its standard
// input (holdEnv), let go once the watch has seen the execve.
func TestGoAfterExec(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The shell execs only when told (a line on its standard input), so
	// that the watch starts on the shell, whatever the machine's load.
	h := execHeld(t, slowWalks, append(os.Environ(), holdEnv+"=1"), "/bin/sh", "-c", `read x; exec "$0"`, self)
	g := h.s.loop.program()
	if g != nil {
		t.Fatal("the shell read as a Go program")
	}
	if _, err := io.WriteString(h.stdin, "exec\n"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the watch to see the execve", func() bool {
		return len(h.s.loop.seen().execs) > 0
	})
	h.stdin.Close()
	r, err := waitDiagnosed(h.s, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if r.Process.Go == nil {
		t.Errorf("a shell that exec'd a Go program: not a Go program\n%s", render(t, r))
	}
	if !slices.ContainsFunc(r.Warnings, func(w string) bool {
		return strings.Contains(w, "called execve") && strings.Contains(w, filepath.Base(self))
	}) {
		t.Errorf("no warning of the execve: %q", r.Warnings)
	}
}

// syncBuffer is a bytes.Buffer safe for the session's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestAttachThread: attach given a thread id watches the thread's process
// and says so, in the progress lines and the result's warnings. It used
// to watch the thread's /proc entry, and the watch ended when the thread
// did while the process lived on.
func TestAttachThread(t *testing.T) {
	cmd, _ := startHeld(t, "ready", cprog(t, "threads"), "4", "1", "256", "stdin")
	pid := cmd.Process.Pid
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	tid := 0
	for _, e := range ents {
		if n, _ := strconv.Atoi(e.Name()); n != pid && n > 0 {
			tid = n
			break
		}
	}
	if tid == 0 {
		t.Fatalf("no thread of pid %d besides the main one", pid)
	}
	var progress syncBuffer
	o := slowWalks
	o.Progress = &progress
	r := attachOnce(t, tid, o)
	want := fmt.Sprintf("%d is a thread of process %d (threads): watching the process", tid, pid)
	if r.Process.PID != pid || !slices.Contains(r.Warnings, want) || !strings.Contains(progress.String(), "probe: "+want) {
		t.Errorf("attach %d: pid %d, warnings %q, progress %q; want pid %d and %q", tid, r.Process.PID, r.Warnings, progress.String(), pid, want)
	}
}

// TestPermissionErrorRoot: another user's process names that user; a
// root process said "run the probe as root (uid 0), or as root
// (CAP_SYS_PTRACE)".
func TestPermissionErrorRoot(t *testing.T) {
	e := PermissionError{PID: 1, Owner: "root (uid 0)", Self: "bob (uid 1002)", Path: "/proc/1/smaps"}
	want := "attaching to pid 1: permission denied reading /proc/1/smaps: the process belongs to root (uid 0) and the probe runs as bob (uid 1002); run the probe as root (or with CAP_SYS_PTRACE)"
	if got := e.Error(); got != want {
		t.Errorf("error\n%q, want\n%q", got, want)
	}
}

// checkMarkdownBlocks fails for a table row, list item or heading
// directly under a line of another kind: GitHub's markdown takes a line
// under a table for one more row of it, and a line under a list for part
// of its last item.
func checkMarkdownBlocks(t *testing.T, out string) {
	t.Helper()
	kind := func(l string) string {
		switch {
		case l == "":
			return "blank"
		case strings.HasPrefix(l, "|"):
			return "table"
		case strings.HasPrefix(l, "- "):
			return "list"
		case strings.HasPrefix(l, "#"):
			return "heading"
		}
		return "text"
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for i := 1; i < len(lines); i++ {
		k, prev := kind(lines[i]), kind(lines[i-1])
		if k == "blank" || prev == "blank" || k == prev && k != "heading" {
			continue
		}
		t.Errorf("markdown line %d (%s) directly under a %s line, no blank line between:\n%s\n%s", i+1, k, prev, lines[i-1], lines[i])
	}
}

// fullResult is the fixture's result with every optional part of the
// report: descendants, an end walk other than the peak's, GPU lines,
// files written, warnings.
func fullResult(t *testing.T) *schema.Result {
	t.Helper()
	s, _ := fixture(t, false)
	s.TMs = 1500
	end := *s
	end.TMs = 3000
	code, pct := 0, 0.4
	util := 50.0
	p := &schema.Process{
		Mode: schema.ModeExec, Command: []string{"./app", "--train"}, PID: 4242, Exited: true, ExitCode: &code,
		DurationMs: 4000, IntervalMs: 10, SmapsEveryMs: 1000,
		Timeline: schema.TimelineSummary{Samples: 400, StartRSSBytes: 2 << 20, PeakRSSBytes: uint64(s.Reconciliation.RSSBytes),
			FinalRSSBytes: uint64(s.Reconciliation.RSSBytes), PeakThreads: 3},
		VmHWMBytes: uint64(s.Reconciliation.RSSBytes), RusageMaxRSSBytes: uint64(s.Reconciliation.RSSBytes),
		PeakAgreementPct: &pct, AtPeak: s, End: &end, Walks: 2, RusageSource: rusageProc, RusageMinorFaults: 100,
		Children: []schema.Child{{PID: 4243, PPID: 4242, Command: []string{"/usr/lib/gcc/x86_64-linux-gnu/12/cc1", "-quiet", "x.c"},
			VmHWMBytes: 60 << 20, PeakRSSBytes: 59 << 20, StartMs: 100, LastSeenMs: 900, LifetimeMs: 800, Exited: true}},
		ChildrenWatched: true, TreePeakRSSBytes: 80 << 20, DescendantPeakRSSBytes: 60 << 20, DescendantsMissed: 2,
		Files: []string{"out/smaps-peak.txt", "out/smaps-end.txt"},
		GPU:   &schema.ProcessGPU{IntervalMs: 100, Samples: 10, PeakBytes: 1 << 30, FinalBytes: 1 << 30, MeanUtilPct: &util, Timeline: []schema.GPUSample{}},
	}
	p.Diagnosis = process.Diagnose(&schema.Result{Process: p}, false)
	return &schema.Result{Kind: schema.KindProcess, Process: p, Warnings: []string{"one thing", "another"}}
}

// TestRenderMarkdownBlocks: every table, list and heading of the markdown
// report is set apart by blank lines. The line of samples came directly
// under the timeline's table (a row of it on GitHub), and "thread
// stacks: ..." directly under the list of unexplained mappings (part of
// its last item).
func TestRenderMarkdownBlocks(t *testing.T) {
	r := fullResult(t)
	var b bytes.Buffer
	if err := process.Render(&b, r, table.Markdown); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"thread stacks:", "- unexplained:", "end walk (3.00 s)", "tree peak RSS", "warning: another", "wrote out/smaps-end.txt", "### Diagnosis"} {
		if !strings.Contains(out, want) {
			t.Fatalf("the report lacks %q: the check would not see it\n%s", want, out)
		}
	}
	checkMarkdownBlocks(t, out)
	if strings.Contains(out, "\n\n\n") {
		t.Errorf("two blank lines in a row:\n%s", out)
	}
}

// TestQuoteCommand: an argument with a newline broke the report's first
// line; arguments with spaces read as several.
func TestQuoteCommand(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"./threads", "63", "8"}, "./threads 63 8"},
		{[]string{"sh", "-c", "exec python3 late.py"}, `sh -c "exec python3 late.py"`},
		{[]string{"sh", "-c", "echo a\nb", ""}, `sh -c "echo a\nb" ""`},
		{[]string{"a=$HOME", "it's"}, `"a=$HOME" "it's"`},
	} {
		if got := process.QuoteCommand(c.args); got != c.want {
			t.Errorf("process.QuoteCommand(%q) = %s, want %s", c.args, got, c.want)
		}
	}
	r := fullResult(t)
	r.Process.Command = []string{"sh", "-c", "echo `a`\necho b"}
	for _, f := range []table.Format{table.Text, table.Markdown} {
		var b bytes.Buffer
		if err := process.Render(&b, r, f); err != nil {
			t.Fatal(err)
		}
		first, _, _ := strings.Cut(b.String(), "\n")
		if !strings.Contains(first, `sh -c "echo `+"`a`"+`\necho b"`) || !strings.Contains(first, "(pid 4242) exited") {
			t.Errorf("%s: first line %q", f, first)
		}
		if f == table.Markdown && !strings.HasPrefix(first, "probe exec: `` sh -c") {
			t.Errorf("markdown: the command is not one code span: %q", first)
		}
	}
}

// TestOptionsDefaults: --interval 1h alone is accepted, the walks'
// least period following it (it said "--smaps-every 1s is below the
// interval 1h0m0s" of a flag the user had not given); given below the
// interval, it is refused; --pprof must be a URL from the start.
func TestOptionsDefaults(t *testing.T) {
	o := Options{Interval: time.Hour}
	if err := o.defaults(); err != nil || o.SmapsEvery != time.Hour {
		t.Errorf("interval 1h: %v, smaps-every %v; want accepted, 1h", err, o.SmapsEvery)
	}
	o = Options{}
	if err := o.defaults(); err != nil || o.SmapsEvery != DefaultSmapsEvery {
		t.Errorf("defaults: %v, smaps-every %v", err, o.SmapsEvery)
	}
	o = Options{Interval: time.Hour, SmapsEvery: time.Second}
	if err := o.defaults(); err == nil || err.Error() != "smaps-every 1s is below the interval 1h0m0s" {
		t.Errorf("smaps-every 1s, interval 1h: %v", err)
	}
	dir := t.TempDir()
	for url, ok := range map[string]bool{
		"http://127.0.0.1:6060/debug/pprof/heap": true, "https://host/heap": true,
		"not a url": false, "127.0.0.1:6060/debug/pprof/heap": false, "http:///heap": false, "ftp://host/heap": false,
	} {
		err := (Options{PprofURL: url, OutDir: dir}).Validate()
		if (err == nil) != ok || err != nil && !strings.Contains(err.Error(), strconv.Quote(url)) {
			t.Errorf("pprof %q: %v; want accepted %v, an error naming it", url, err, ok)
		}
	}
}

// TestExecStartErrors: an empty program name said "exec : exec: no
// command"; a script whose #! interpreter is missing said "no such file
// or directory" of a file that exists; a file with no #! line that is
// not a binary gets a word on why.
func TestExecStartErrors(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "badinterp")
	plain := filepath.Join(dir, "plain")
	for path, text := range map[string]string{script: "#!/nonexistent/interp -x\necho hi\n", plain: "echo hi\n"} {
		if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{""}, "exec: the program's name is empty"},
		{[]string{script}, "exec " + script + ": the #! interpreter it names, /nonexistent/interp: no such file or directory (the file itself exists)"},
		{[]string{plain}, "exec " + plain + ": exec format error (neither a binary this machine runs nor a script with a #! line)"},
		{[]string{filepath.Join(dir, "absent")}, "exec " + filepath.Join(dir, "absent") + ": no such file or directory"},
		{[]string{dir}, "exec " + dir + ": permission denied (it is a directory)"},
	}
	// An ELF binary whose dynamic loader is missing, where a C compiler is.
	if cc, err := exec.LookPath("cc"); err == nil {
		src, bin := filepath.Join(dir, "m.c"), filepath.Join(dir, "noloader")
		os.WriteFile(src, []byte("int main(void){return 0;}\n"), 0o644)
		if out, err := exec.Command(cc, "-o", bin, "-Wl,--dynamic-linker=/nonexistent/ld.so", src).CombinedOutput(); err == nil {
			cases = append(cases, struct {
				args []string
				want string
			}{[]string{bin}, "exec " + bin + ": the ELF interpreter (dynamic loader) it names, /nonexistent/ld.so: no such file or directory (the file itself exists)"})
		} else {
			t.Logf("no ELF case: %v\n%s", err, out)
		}
	}
	for _, c := range cases {
		_, err := Exec(ExecOptions{Args: c.args, Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard})
		if err == nil || err.Error() != c.want {
			t.Errorf("%q: %v, want %q", c.args, err, c.want)
		}
	}
}

// TestVSZDriftWarning: reconcile's warning that VmSize differs from Σ
// smaps Size is in the report's units with its likely cause, from the
// status read before the walk (Input.StatusBefore; before, raw bytes). The warning is made by reconcile itself, from the fixture with
// a status whose VmSize is 64 MiB above the mappings' (a thread's stack
// mapped after smaps was read).
func TestVSZDriftWarning(t *testing.T) {
	ms, err := procfs.ReadSmapsFile("testdata/smaps_gpu")
	if err != nil {
		t.Fatal(err)
	}
	var st procfs.Status
	for _, m := range ms {
		st.VmRSSBytes += m.RssBytes
		st.VmSizeBytes += m.SizeBytes
	}
	st.VmSizeBytes += 64 << 20
	st.Threads = 4
	before := st
	before.Threads, before.VmSizeBytes = 3, st.VmSizeBytes-64<<20
	r := reconcile.Compute(reconcile.Input{Status: st, StatusBefore: before, Mappings: ms, ThreadStackBytes: 8 << 20})
	if !slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.HasPrefix(w, "VmSize ") }) {
		t.Fatalf("reconcile gave no VmSize warning for a 64 MiB drift: %q", r.Warnings)
	}
	want := fmt.Sprintf("VmSize %s differs from Σ smaps Size %s by +64 MiB: probably a race with threads created or ended during the walk (3 threads before it, 4 after)",
		iec(int64(st.VmSizeBytes)), iec(int64(st.VmSizeBytes-64<<20)))
	i := slices.IndexFunc(r.Warnings, func(w string) bool { return strings.HasPrefix(w, "VmSize ") })
	if got := r.Warnings[i]; !strings.HasPrefix(got, want) || strings.Contains(got, " B ") {
		t.Errorf("warning\n%q, want\n%q…", got, want)
	}
	if n := len(slices.DeleteFunc(slices.Clone(r.Warnings), func(w string) bool { return !strings.HasPrefix(w, "VmSize ") })); n != 1 {
		t.Errorf("%d VmSize warnings, want 1: %q", n, r.Warnings)
	}
}

// TestPeakOneSample: a program that exits before the second sample (here
// --interval 1h) has one sample, taken as execve left it (a few KiB):
// the report presented it as the peak ("peak RSS 200 KiB" of a 64 MiB
// program). The peak is wait4's maxrss, and the report says so.
func TestPeakOneSample(t *testing.T) {
	r := execWait(t, ExecOptions{Options: Options{Interval: time.Hour, NoGPU: true}, Args: []string{cprog(t, "grow"), "64", "8", "0", "200"},
		Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard})
	p := r.Process
	if r.Sampler.AliveSamples() > 1 {
		t.Skipf("%d samples with a 1 h interval", r.Sampler.AliveSamples())
	}
	// Linux carries the test process's own peak across the exec: after
	// other tests (go test -count=2) it can pass the program's, and the
	// report then rightly says "at most" (the second half's case).
	if p.ProbeVmHWMAtStartBytes >= p.RusageMaxRSSBytes {
		t.Skipf("the test process's own peak, %d B, is not below wait4's maxrss %d B", p.ProbeVmHWMAtStartBytes, p.RusageMaxRSSBytes)
	}
	if r.PeakRSSBytes < 64<<20 || r.PeakRSSBytes != p.RusageMaxRSSBytes {
		t.Errorf("peak_rss_bytes %d B, wait4's maxrss %d B: want the latter, at least 64 MiB", r.PeakRSSBytes, p.RusageMaxRSSBytes)
	}
	out := render(t, r)
	if want := fmt.Sprintf("peak RSS %s (wait4's maxrss at exit): the program exited before a second sample", iec(int64(p.RusageMaxRSSBytes))); !strings.Contains(out, want) {
		t.Errorf("the report does not say %q:\n%s", want, out)
	}
	if tp := topics(p); !strings.Contains(tp["peak"], "from wait4's maxrss at exit: the program exited before a second sample (every 1h0m0s)") {
		t.Errorf("peak finding %q", tp["peak"])
	}
	if !slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.Contains(w, "exited before a second sample") }) {
		t.Errorf("no warning: %q", r.Warnings)
	}

	// Smaller than the probe: wait4's maxrss is the probe's image, an
	// upper bound, said so.
	small := &schema.Process{Mode: schema.ModeExec, Exited: true, IntervalMs: 3.6e6, VmHWMBytes: 16 << 10, RusageMaxRSSBytes: 17 << 20,
		ProbeVmHWMAtStartBytes: 17 << 20, Timeline: schema.TimelineSummary{Samples: 1, PeakRSSBytes: 16 << 10}}
	sr := &schema.Result{Process: small, Sampler: &sampler.Result{Timeline: []sampler.Point{{RSSBytes: 16 << 10, VSZBytes: 400 << 10, Samples: 1}}}}
	if got := peakRSS(small, 1); got != 17<<20 {
		t.Errorf("peak_rss_bytes %d, want wait4's 17 MiB", got)
	}
	if _, got, _ := strings.Cut(render(t, sr), "\n"); !strings.HasPrefix(got, "peak RSS at most 17 MiB (wait4's maxrss at exit, no more than the probe's own size when it started the program): the program exited before a second sample, and its one sample, at the start, read 16 KiB") {
		t.Errorf("peak line %q", got)
	}
	if d := process.Diagnose(sr, false); len(d) == 0 || !strings.HasPrefix(d[0].Text, "peak RSS at most 17 MiB: the program exited before a second sample (every 1h0m0s)") {
		t.Errorf("diagnosis %+v", d)
	}
}

// TestSummarizeEndpoints: start and final come from the sampler's first
// and last samples as taken, not from the merged buckets: a program that
// freed 100 MiB in its last bucket ends at 1 MiB (before: at the bucket's
// maximum, 101 MiB), and the release is seen.
func TestSummarizeEndpoints(t *testing.T) {
	const mib = 1 << 20
	r := sampler.Result{
		Samples: 32, Peaks: sampler.Point{RSSBytes: 101 * mib, VSZBytes: 102 * mib},
		Timeline: []sampler.Point{
			{TMs: 0, Samples: 16, RSSBytes: 101 * mib, VSZBytes: 102 * mib},
			{TMs: 16, Samples: 16, RSSBytes: 101 * mib, VSZBytes: 102 * mib},
		},
		First:       &sampler.Point{TMs: 0, Samples: 1, RSSBytes: mib / 50, VSZBytes: 2 * mib},
		Last:        &sampler.Point{TMs: 31, Samples: 1, RSSBytes: mib, VSZBytes: 2 * mib},
		PeakRSSAtMs: 9,
	}
	tl := summarize(r)
	if tl.StartRSSBytes != mib/50 || tl.FinalRSSBytes != mib || tl.FinalVSZBytes != 2*mib || tl.GrowthBytes != 101*mib-mib/50 || tl.PeakAtMs != 9 {
		t.Errorf("summary %+v", tl)
	}
	if at, end := r.ReleasedBy(); at != 31 || end != 31 {
		t.Errorf("released by %v, end %v; want 31, 31", at, end)
	}
	// A result without them (written before they existed) falls back
	// on the timeline's ends.
	r.First, r.Last = nil, nil
	if tl := summarize(r); tl.FinalRSSBytes != 101*mib {
		t.Errorf("without first/last: final %d", tl.FinalRSSBytes)
	}
}

// TestFullHeap: a thread's 80 MiB of 32-byte mallocs grow its arena's
// first heap page by page to the whole 64 MiB, which leaves it no
// PROT_NONE tail: no shape tells it from any other anonymous mapping, and
// the reconciliation left its 64 MiB unexplained. Read from the heaps'
// headers, both heaps are the arena's, and almost nothing is left over.
func TestFullHeap(t *testing.T) {
	if b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope"); err == nil && strings.TrimSpace(string(b)) == "3" {
		t.Skip("Yama ptrace_scope 3: the program's memory cannot be read, and a full heap has no shape")
	}
	h := execHeld(t, slowWalks, cleanEnv(), cprog(t, "fullheap"), "80")
	h.waitLine(t, "ready")
	r := h.release(t)
	if r.Process.AtPeak == nil {
		t.Fatalf("no walk at the peak; warnings %v", r.Warnings)
	}
	rec := r.Process.AtPeak.Reconciliation
	p, _ := part(rec, "c.malloc.arenas")
	if rec.GlibcHeaps < 2 || rec.GlibcArenas != 1 || !rec.GlibcArenasExact || p.Bytes < 78<<20 {
		t.Errorf("%d heaps of %d arenas (exact %v), %d B resident; want 2 or more heaps of 1 arena holding the 80 MiB\n%s",
			rec.GlibcHeaps, rec.GlibcArenas, rec.GlibcArenasExact, p.Bytes, render(t, r))
	}
	if rec.UnexplainedBytes > 4<<20 {
		t.Errorf("%d B unexplained, want under 4 MiB\n%s", rec.UnexplainedBytes, render(t, r))
	}
}
