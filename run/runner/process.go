package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"memprobe/instrument/procfs"
	"memprobe/instrument/profiling"
	"memprobe/instrument/sampler"
	"memprobe/outside"
	"memprobe/schema"
)

// runProcess runs repetition rep (from 1) of a plan file's configuration:
// the program started and watched by outside exactly as probe exec
// watches it, and killed (SIGKILL) past the timeout, past the memory
// limit, or when ctx ends. It returns what the parent saw and the
// program's result (nil unless the repetition's status is ok: the
// program exited 0).
//
// A kill reaches the program, not what it started: outside leaves
// the program in the probe's process group, where a terminal's Ctrl-C
// reaches it too.
func runProcess(ctx context.Context, c Config, o Options, rep int) (schema.Outside, *schema.Result) {
	out := schema.Outside{Repetition: rep, ExitCode: -1, Timeline: []sampler.Point{}}
	tail := newTailWriter(stderrLines)
	var stderr, stdout io.Writer = tail, io.Discard
	if o.Verbose {
		stderr, stdout = io.MultiWriter(tail, o.Stderr), o.Stderr
	}
	opts := outside.Options{Interval: o.SampleInterval, CommandLine: o.CommandLine, Sites: outside.SitesOptions{Enabled: o.Sites}}
	dir := o.ProfileDir
	if dir == "" && o.Sites {
		dir = o.tmp // the profiles go with the run; the result has the top sites
	}
	if dir != "" {
		// The raw smaps walks at the peak and the end (and --sites'
		// profiles), as probe exec --out-dir writes them.
		opts.OutDir = filepath.Join(dir, fmt.Sprintf("%s-r%d", profiling.SafeName(c.Name), rep))
		if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
			out.Status, out.Reason = schema.StatusFailed, fmt.Sprintf("--profile-dir: %v", err)
			return out, nil
		}
	}
	env := c.Process.Environ(append(os.Environ(), o.Env...))
	args := append([]string{c.Process.Program(c.Process.Dir)}, c.Process.Command[1:]...)
	s, err := outside.Exec(outside.ExecOptions{
		Options: opts, Args: args, Env: env, Dir: c.Process.Dir,
		Stdin: strings.NewReader(""), Stdout: stdout, Stderr: stderr,
		OwnGroup: !noGroup,
	})
	if err != nil {
		out.Status, out.Reason = schema.StatusFailed, err.Error()
		return out, nil
	}

	// The watchdog: the timeout, the memory limit (no margin: the
	// program does not stop itself as probe train does), an interruption.
	// killStatus is read once the watchdog has returned.
	var killStatus schema.Status
	var killReason string
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		statm, _ := procfs.FS{}.OpenStatm(s.PID())
		if statm != nil {
			defer statm.Close()
		}
		watchdog(ctx, stop, statm, o.Timeout, o.MemLimit, o.MemLimit, func(st schema.Status, reason string) {
			if killStatus == "" && s.KillGroup() == nil {
				killStatus, killReason = st, reason
			}
		})
	}()
	res, err := s.Wait(context.Background())
	close(stop)
	<-stopped
	if err != nil {
		out.Status, out.Reason = schema.StatusFailed, "watching the program: "+err.Error()
		return out, nil
	}
	if o.Diagnose != nil {
		res.Process.Diagnosis = o.Diagnose(res, s.TimelineCut())
	}
	p := res.Process
	out.WallSeconds = p.DurationMs / 1e3
	out.UserSeconds, out.SystemSeconds = p.RusageUserMs/1e3, p.RusageSystemMs/1e3
	out.MaxRSSBytes = int64(p.RusageMaxRSSBytes)
	out.PeakRSSBytes, out.PeakVSZBytes = int64(res.PeakRSSBytes), int64(p.Timeline.PeakVSZBytes)
	if res.Sampler != nil && res.Sampler.Timeline != nil {
		out.Timeline = res.Sampler.Timeline
	}
	if p.ExitCode != nil {
		out.ExitCode = *p.ExitCode
	}
	out.Signal = p.Signal
	if out.Signal != "" {
		out.ExitCode = -1 // as the built-in plans' children record a signal
	}
	switch {
	case killStatus != "":
		out.Status, out.Reason = killStatus, killReason
	case p.Signal != "":
		out.Status = schema.StatusKilled
		out.Reason = fmt.Sprintf("killed by %s (the kernel's OOM killer sends SIGKILL)", outside.KilledBy(p))
		if l := tail.reason(); l != "" {
			out.Reason += "; stderr: " + l
		}
	case p.ExitCode == nil || *p.ExitCode != 0:
		out.Status = schema.StatusFailed
		out.Reason = fmt.Sprintf("exit status %d", out.ExitCode)
		if l := tail.reason(); l != "" {
			out.Reason += ": " + l
		}
	default:
		out.Status = schema.StatusOK
		res.Label = c.Name
		res.Config.Plan, res.Config.Phase = c.Plan, c.Phase
		return out, res
	}
	return out, nil
}

// runSetup runs a plan file's setup command once, in the plan's
// directory, before any phase (not measured). Its failure ends the run
// before any child starts: every phase depends on it.
func runSetup(ctx context.Context, o Options) error {
	if o.PlanFile == nil {
		return nil
	}
	args := o.PlanFile.SetupCommand(map[string]string{"probe": o.Executable, "tmp": o.tmp})
	if args == nil {
		return nil
	}
	tail := newTailWriter(stderrLines)
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = o.PlanFile.Dir
	cmd.Env = append(os.Environ(), o.Env...)
	cmd.Stdout, cmd.Stderr = tail, tail
	if o.Verbose {
		cmd.Stdout, cmd.Stderr = io.MultiWriter(tail, o.Stderr), io.MultiWriter(tail, o.Stderr)
	}
	fmt.Fprintf(o.Stderr, "setup: %s\n", strings.Join(args, " "))
	if err := cmd.Run(); err != nil {
		msg := err.Error()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			msg = fmt.Sprintf("exit status %d", ee.ExitCode())
		}
		if l := tail.reason(); l != "" {
			msg += ": " + l
		}
		return fmt.Errorf("%s: setup %q failed (%s); no phase was run", o.PlanFile.Path, strings.Join(args, " "), msg)
	}
	return nil
}

// noGroup runs a plan file's phases in the runner's process group (tests:
// the old behaviour, where a kill reached the program alone).
var noGroup bool
