package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"memprobe/instrument/procfs"
	"memprobe/instrument/sampler"
	"memprobe/internal/childproc"
	"memprobe/internal/table"
	"memprobe/run/job"
	"memprobe/schema"
)

// watchEvery is the period of the memory watchdog: a child growing by
// 1 GB/s passes the limit by at most 20 MB before it is killed.
const watchEvery = 20 * time.Millisecond

// stderrLines is how many of a child's last stderr lines are kept for
// reasons.
const stderrLines = 20

// child is one repetition of a configuration in its own process.
type child struct {
	exe      string
	args     []string
	env      []string
	timeout  time.Duration
	memLimit int64
	interval time.Duration // the parent's sampler period
	verbose  io.Writer     // children's stderr goes here too (nil: kept only)
	jsonPath string
}

// run starts the child, watches it until it exits (killing its process
// group at the timeout, above the memory limit or when ctx is done),
// reaps it and reads its result. It returns what the parent saw and the
// child's result (nil unless the repetition's status is ok).
func (c *child) run(ctx context.Context, rep int) (schema.Outside, *schema.Result) {
	out := schema.Outside{Repetition: rep, Timeline: []sampler.Point{}}
	tail := newTailWriter(stderrLines)
	cmd := c.command(tail)
	start := time.Now()
	release, err := childproc.Start(cmd)
	if err != nil {
		out.ExitCode, out.Status, out.Reason = -1, schema.StatusFailed, fmt.Sprintf("starting %s: %v", c.exe, err)
		return out, nil
	}
	pid := cmd.Process.Pid

	// The sampler and the watchdog read /proc/PID until the child has
	// exited; it is reaped only after they stop, so PID cannot be reused
	// under them.
	smp, _ := sampler.New(sampler.Options{PID: pid, Interval: c.interval})
	if smp != nil && smp.Start(context.Background()) != nil {
		smp = nil // exited before its first sample
	}
	statm, _ := procfs.FS{}.OpenStatm(pid)
	exited := exitOf(pid)

	// The child stops itself at the limit (probe train --mem-limit: a
	// partial result) at its next step boundary; the parent's kill is the
	// backstop past the hard margin.
	watchdog(ctx, exited, statm, c.timeout, c.memLimit, c.memLimit+job.HardMargin(c.memLimit),
		func(status schema.Status, reason string) {
			if out.Status == "" {
				out.Status, out.Reason = status, reason
				syscall.Kill(-pid, syscall.SIGKILL)
			}
		})
	out.WallSeconds = time.Since(start).Seconds()
	if statm != nil {
		statm.Close()
	}
	if smp != nil {
		if r, err := smp.Stop(); err == nil {
			out.PeakRSSBytes, out.PeakVSZBytes = int64(r.Peaks.RSSBytes), int64(r.Peaks.VSZBytes)
			out.Timeline = trimExited(r.Timeline)
		}
	}
	// Kill what the child may have left in its group, then reap it.
	syscall.Kill(-pid, syscall.SIGKILL)
	waitErr := cmd.Wait()
	release()
	ps := cmd.ProcessState
	if ps == nil {
		out.ExitCode = -1
		if out.Status == "" {
			out.Status, out.Reason = schema.StatusFailed, fmt.Sprintf("waiting for the child: %v", waitErr)
		}
		return out, nil
	}
	res := c.verdict(&out, ps, tail)
	return out, res
}

// command is the child's command: its arguments and environment, stderr
// kept in tail (and copied to c.verbose), in a process group of its own.
func (c *child) command(tail *tailWriter) *exec.Cmd {
	cmd := exec.Command(c.exe, c.args...)
	cmd.Env = append(os.Environ(), c.env...)
	cmd.Stderr = tail
	if c.verbose != nil {
		cmd.Stderr = io.MultiWriter(tail, c.verbose)
	}
	// A process group of its own, so that a kill reaches whatever it
	// started, and the terminal's Ctrl-C reaches only the parent, which
	// decides; the child dies with the parent (childproc.Start).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 5 * time.Second // stderr held open by a stray grandchild
	return cmd
}

// exitOf is closed once process pid has exited, before it is reaped
// (WNOWAIT: the PID stays its own until the caller waits for it).
func exitOf(pid int) <-chan struct{} {
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		var info unix.Siginfo
		for {
			err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
			if !errors.Is(err, unix.EINTR) {
				return
			}
		}
	}()
	return exited
}

// verdict puts in out how the reaped child ended (its exit code, times,
// peak RSS, signal) and the repetition's status, and returns its result,
// read from c.jsonPath, where the status is ok.
func (c *child) verdict(out *schema.Outside, ps *os.ProcessState, tail *tailWriter) *schema.Result {
	out.ExitCode = ps.ExitCode()
	out.UserSeconds, out.SystemSeconds = ps.UserTime().Seconds(), ps.SystemTime().Seconds()
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		out.MaxRSSBytes = ru.Maxrss << 10 // KiB on Linux
	}
	ws, _ := ps.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		out.Signal = unix.SignalName(ws.Signal())
	}
	switch {
	case out.Status != "": // killed by the parent: the reason says why
	case ws.Signaled():
		out.Status = schema.StatusKilled
		out.Reason = fmt.Sprintf("killed by %s (the kernel's OOM killer sends SIGKILL)", out.Signal)
		if l := tail.reason(); l != "" {
			out.Reason += "; stderr: " + l
		}
	case out.ExitCode != 0:
		out.Status = schema.StatusFailed
		out.Reason = fmt.Sprintf("exit status %d", out.ExitCode)
		if l := tail.reason(); l != "" {
			out.Reason += ": " + l
		}
		// A child that stopped itself at --mem-limit wrote the result
		// of the steps that ran, marked interrupted.
		if r, err := schema.ReadResult(c.jsonPath); err == nil && r.Interrupted {
			out.Status = schema.StatusKilled
		}
	default:
		r, err := schema.ReadResult(c.jsonPath)
		if err != nil {
			out.Status, out.Reason = schema.StatusFailed, "exit status 0 but no readable result: "+err.Error()
			return nil
		}
		out.Status = schema.StatusOK
		return r
	}
	return nil
}

// trimExited drops the samples taken after the child had exited (a zombie
// has no memory: RSS and VSZ read 0).
func trimExited(pts []sampler.Point) []sampler.Point {
	for len(pts) > 1 && pts[len(pts)-1].RSSBytes == 0 && pts[len(pts)-1].VSZBytes == 0 {
		pts = pts[:len(pts)-1]
	}
	if pts == nil {
		return []sampler.Point{}
	}
	return pts
}

// tailWriter keeps the last n lines written to it, and the first line
// that starts a Go panic or fatal error (the informative one of a crash;
// the goroutine traces that follow it are not).
type tailWriter struct {
	mu      sync.Mutex
	n       int
	lines   []string
	partial []byte
	panic   string
}

func newTailWriter(n int) *tailWriter { return &tailWriter{n: n} }

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.partial = append(t.partial, p...)
	for {
		i := bytes.IndexByte(t.partial, '\n')
		if i < 0 {
			break
		}
		t.add(string(t.partial[:i]))
		t.partial = t.partial[i+1:]
	}
	if len(t.partial) > 1<<16 { // a very long line: keep its start
		t.add(string(t.partial[:1<<10]))
		t.partial = t.partial[:0]
	}
	return len(p), nil
}

func (t *tailWriter) add(l string) {
	l = strings.TrimRight(l, "\r")
	if t.panic == "" && (strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ")) {
		t.panic = l
	}
	t.lines = append(t.lines, l)
	if len(t.lines) > t.n {
		t.lines = t.lines[1:]
	}
}

// Lines returns the kept lines, oldest first, with a final partial line.
func (t *tailWriter) Lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]string{}, t.lines...)
	if len(t.partial) > 0 {
		out = append(out, string(t.partial))
	}
	return out
}

// reason is the line that says why the child failed: a panic's first
// line, else the last non-empty line.
func (t *tailWriter) reason() string {
	t.mu.Lock()
	p := t.panic
	t.mu.Unlock()
	if p != "" {
		return p
	}
	ls := t.Lines()
	for i := len(ls) - 1; i >= 0; i-- {
		if s := strings.TrimSpace(ls[i]); s != "" {
			return s
		}
	}
	return ""
}

// iec formats bytes in the runner's messages as probe train's do
// ("256.0 MiB"): table.FormatBytesFixed.
func iec(b int64) string { return table.FormatBytesFixed(b) }

// watchdog calls kill once the program runs past timeout (0: none), once
// its RSS (statm, read every watchEvery; nil: not read) passes killAt
// where a memory limit is set (limit > 0, the --mem-limit its reason
// names), and once ctx ends; it returns when exited is closed. kill is
// called from watchdog's goroutine, possibly more than once.
func watchdog(ctx context.Context, exited <-chan struct{}, statm *procfs.StatmReader, timeout time.Duration, limit, killAt int64, kill func(schema.Status, string)) {
	var timer <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timer = t.C
	}
	tick := time.NewTicker(watchEvery)
	defer tick.Stop()
	var sm procfs.Statm
	done := ctx.Done()
	for {
		select {
		case <-exited:
			return
		case <-timer:
			kill(schema.StatusTimeout, fmt.Sprintf("ran past --timeout %v; killed", timeout))
			timer = nil
		case <-done:
			kill(schema.StatusKilled, "interrupted; killed")
			done = nil
		case <-tick.C:
			if statm != nil && limit > 0 && statm.Read(&sm) == nil && int64(sm.ResidentBytes) > killAt {
				kill(schema.StatusKilled, fmt.Sprintf("RSS %s passed --mem-limit %s; killed", iec(int64(sm.ResidentBytes)), iec(limit)))
			}
		}
	}
}
