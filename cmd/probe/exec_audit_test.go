package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"memprobe/schema"
)

// The tests of this file come from an audit of probe exec and probe
// attach: each is a fault it found.

// exitCodeOf is the exit status run's error gives probe (main's rules).
func exitCodeOf(err error) int {
	var ue usageError
	var ec interface{ ExitCode() int }
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		return 2
	case errors.As(err, &ec):
		return ec.ExitCode()
	}
	return 1
}

// TestExecClosedStdout: probe exec whose stdout is a pipe nobody reads
// (probe exec ... | true) died of SIGPIPE printing the report, before
// --json was written: exit 141, no file. Now the JSON comes first, the
// report's failure is one line that keeps the program's status, and the
// probe exits with that status (1 where it was 0). The program itself
// still dies of SIGPIPE writing to the closed pipe: the probe catches
// SIGPIPE (signal.Notify, which execve resets), it does not ignore it
// (which the program would inherit). The probe is this test binary, a
// process of its own (mainEnv), so that its own death by a signal shows.
func TestExecClosedStdout(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		script string
		code   int
		sig    string
		says   string
	}{
		{"sleep 0.2; echo to the closed pipe; echo wrote >&2", 141, "SIGPIPE", "/bin/sh was killed by SIGPIPE (signal 13), but its result was not all written: printing the report: write /dev/stdout: broken pipe"},
		{"sleep 0.2", 1, "", "/bin/sh exited with status 0, but its result was not all written: printing the report"},
	} {
		path := filepath.Join(t.TempDir(), "x.json")
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		r.Close() // nobody reads: every write to w is EPIPE, or SIGPIPE
		cmd := exec.Command(self, "exec", "--gpu=false", "--json", path, "--", "/bin/sh", "-c", c.script)
		cmd.Env = append(os.Environ(), mainEnv+"=1")
		cmd.Stdout = w
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err = cmd.Run()
		w.Close()
		ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			t.Errorf("%q: the probe was killed by %v\n%s", c.script, ws.Signal(), stderr.String())
			continue
		}
		if code := cmd.ProcessState.ExitCode(); code != c.code {
			t.Errorf("%q: exit status %d (%v), want %d\n%s", c.script, code, err, c.code, stderr.String())
		}
		if !strings.Contains(stderr.String(), "probe: exec: "+c.says) {
			t.Errorf("%q: stderr does not say %q:\n%s", c.script, c.says, stderr.String())
		}
		res, err := schema.ReadResult(path)
		if err != nil {
			t.Errorf("%q: no JSON: %v", c.script, err)
			continue
		}
		if p := res.Process; p.Signal != c.sig || c.sig != "" && strings.Contains(stderr.String(), "\nwrote\n") {
			t.Errorf("%q: the program's signal %q, want %q (it must die of SIGPIPE, not write on)\n%s", c.script, p.Signal, c.sig, stderr.String())
		}
	}
}

// TestExecJSONWriteFails: a --json that cannot be written at the end
// (its directory removed meanwhile) exited 1 with the write error alone,
// the program's status lost. The error says both, and the exit status
// is the program's, or 1 where that was 0.
func TestExecJSONWriteFails(t *testing.T) {
	for _, c := range []struct {
		exit string
		code int
	}{{"4", 4}, {"0", 1}} {
		gone := filepath.Join(t.TempDir(), "gone")
		if err := os.Mkdir(gone, 0o755); err != nil {
			t.Fatal(err)
		}
		stdout, _, err := runProbe("exec", "--gpu=false", "--json", filepath.Join(gone, "x.json"), "--", "/bin/sh", "-c", "rmdir "+gone+"; exit "+c.exit)
		want := "exec: /bin/sh exited with status " + c.exit + ", but its result was not all written: writing " + filepath.Join(gone, "x.json")
		if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("exit %s: error %v, want one line starting %q", c.exit, err, want)
		}
		if got := exitCodeOf(err); got != c.code {
			t.Errorf("exit %s: probe's exit status %d, want %d", c.exit, got, c.code)
		}
		if !strings.Contains(stdout, "probe exec: ") {
			t.Errorf("exit %s: the report was not printed:\n%s", c.exit, stdout)
		}
	}
}

// TestExecJSONStdoutClean: with --json -, stdout carries the JSON alone:
// the program's own stdout goes to stderr with the report (it was mixed
// into the JSON).
func TestExecJSONStdoutClean(t *testing.T) {
	stdout, stderr, err := runProbe("exec", "--gpu=false", "--json", "-", "--", "/bin/sh", "-c", "echo hello from the program")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := schema.DecodeResult([]byte(stdout), "stdout"); err != nil {
		t.Errorf("stdout is not the JSON alone: %v\n%.200s", err, stdout)
	}
	if !strings.Contains(stderr, "hello from the program\n") || !strings.Contains(stderr, "probe exec: ") {
		t.Errorf("stderr lacks the program's output or the report:\n%s", stderr)
	}
}

// TestExecAuditErrors: messages that blamed the wrong thing or garbled.
func TestExecAuditErrors(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "badinterp")
	if err := os.WriteFile(script, []byte("#!/nonexistent/interp\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args  []string
		want  string
		usage bool
	}{
		// The user set both: the flag given is named.
		{[]string{"exec", "--interval", "1h", "--smaps-every", "1s", "--", "true"}, "--smaps-every 1s is below the interval 1h0m0s", true},
		{[]string{"exec", "--", ""}, "exec: the program's name is empty: probe exec [flags] -- CMD [ARGS...]", true},
		{[]string{"exec", "--pprof", "not a url", "--out-dir", dir, "--", "true"}, `--pprof "not a url": not an http(s) URL with a host`, true},
		{[]string{"exec", "--", script}, "exec " + script + ": the #! interpreter it names, /nonexistent/interp: no such file or directory (the file itself exists)", false},
	} {
		_, _, err := runProbe(c.args...)
		var ue usageError
		switch {
		case err == nil:
			t.Errorf("%q: no error", c.args)
		case errors.As(err, &ue) != c.usage:
			t.Errorf("%q: %v: usage error %v, want %v", c.args, err, !c.usage, c.usage)
		case !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "\n"):
			t.Errorf("%q: error %q, want one line starting %q", c.args, err, c.want)
		}
	}
}

// TestExecLongInterval: --interval 1h alone was refused for
// --smaps-every, a flag not given; and the program, over before a second
// sample, had its one sample (taken as execve left it) reported as its
// peak. It runs, and the peak line says where its figure comes from.
func TestExecLongInterval(t *testing.T) {
	stdout, stderr, err := runProbe("exec", "--gpu=false", "--interval", "1h", "--", "/bin/sh", "-c", "sleep 0.2")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "(wait4's maxrss at exit") || !strings.Contains(stdout, "the program exited before a second sample") {
		t.Errorf("the peak line does not say its source:\n%s", stdout)
	}
}
