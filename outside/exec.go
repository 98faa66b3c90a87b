package outside

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"memprobe/instrument/procfs"
	"memprobe/internal/childproc"
	"memprobe/schema"
)

// ExecOptions is a program to start and watch.
type ExecOptions struct {
	Options
	// Args is the program and its arguments; Args[0] is looked up in PATH.
	Args []string
	// Env is the program's environment; nil means the probe's.
	Env []string
	// Dir is the program's working directory; "" means the probe's.
	Dir string
	// Stdin, Stdout and Stderr are the program's; nil means the probe's
	// own (os.Stdin, os.Stdout, os.Stderr).
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// OwnGroup starts the program in a process group of its own, so that
	// KillGroup reaches every process it started (probe run's plan-file
	// phases, which a timeout or memory limit kills). Off for probe exec:
	// a program in another group than the terminal's foreground one is
	// stopped when it reads the terminal, and Ctrl-C does not reach it.
	OwnGroup bool
}

// Exec starts the program and watches it: the sampler's first sample is
// taken before it returns. Call Wait for the result; Signal forwards a
// signal to the program.
func Exec(o ExecOptions) (*Session, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	if len(o.Args) == 0 {
		return nil, errors.New("exec: no program to run")
	}
	if o.Args[0] == "" {
		// exec.Command("") fails with "exec: no command", which read
		// as "exec : exec: no command" after the program's empty name.
		return nil, errors.New("exec: the program's name is empty")
	}
	cmd := exec.Command(o.Args[0], o.Args[1:]...)
	cmd.Env = o.Env
	cmd.Dir = o.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = o.Stdin, o.Stdout, o.Stderr
	// A descendant that keeps the program's output open must not keep
	// the probe waiting once the program has exited.
	cmd.WaitDelay = 2 * time.Second
	if cmd.Stdin == nil {
		cmd.Stdin = os.Stdin
	}
	if cmd.Stdout == nil {
		cmd.Stdout = os.Stdout
	}
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	// The program dies with the probe (childproc): a probe killed by
	// SIGKILL (which it cannot catch to forward) leaves no program
	// running behind it. No process group of its own: the program stays
	// in the terminal's foreground group, where Ctrl-C reaches it
	// (docs/exec.md).
	if o.OwnGroup {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	sr, err := startSites(o, cmd)
	if err != nil {
		return nil, err
	}
	var self procfs.Status
	self, _ = procfs.ReadStatus(procfs.Self)
	// The run's clock starts before the fork: Start returns after the
	// execve by the time the probe takes to be scheduled (0.2 ms to
	// 8.6 ms on a loaded machine, once 12 ms), and a start taken then put
	// sleep 0.2's life at 197.5 ms and an image begun 0.3 s in at 0.288 s.
	spawned := time.Now()
	release, err := childproc.Start(cmd)
	if err != nil {
		return nil, fmt.Errorf("exec %s: %w", o.Args[0], explainStart(cmd.Path, unwrapExec(err)))
	}
	s, err := newSession(o.Options, schema.ModeExec, cmd.Process.Pid, o.Args, spawned)
	if err != nil {
		// The program may have exited before the first sample: let it
		// be reaped, and say what happened.
		_ = cmd.Wait()
		release()
		return nil, fmt.Errorf("exec %s: watching pid %d: %w (exit status %d)", o.Args[0], cmd.Process.Pid, err, exitCode(cmd.ProcessState))
	}
	s.cmd, s.release, s.sites, s.ownGroup = cmd, release, sr, o.OwnGroup
	s.probeHWM = self.VmHWMBytes
	return s, nil
}

// PID is the watched process's id.
func (s *Session) PID() int { return s.pid }

// Signal sends sig to the program (exec) or the process (attach).
func (s *Session) Signal(sig os.Signal) error {
	if s.cmd != nil {
		return s.cmd.Process.Signal(sig)
	}
	p, err := os.FindProcess(s.pid)
	if err != nil {
		return err
	}
	return p.Signal(sig)
}

// KillGroup sends SIGKILL to the program's process group where it was
// started in one of its own (ExecOptions.OwnGroup): the program and
// every descendant that stayed in the group. Otherwise it is
// Signal(SIGKILL).
func (s *Session) KillGroup() error {
	if s.cmd != nil && s.ownGroup {
		return syscall.Kill(-s.pid, syscall.SIGKILL)
	}
	return s.Signal(syscall.SIGKILL)
}

// waitExec waits for the program and fills the exit fields of p.
func (s *Session) waitExec(p *schema.Process) {
	if s.kids != nil {
		// A last read of the descendants while the program is a zombie,
		// not yet reaped: its stat still holds the faults of the
		// children it waited for, which tell one reaped unseen since
		// the read before.
		var info unix.Siginfo
		for {
			err := unix.Waitid(unix.P_PID, s.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
			if err != unix.EINTR {
				break
			}
		}
		s.exitAt = time.Now()
		s.kids.poll()
	}
	err := s.cmd.Wait()
	if s.exitAt.IsZero() {
		s.exitAt = time.Now()
	}
	s.release()
	p.Exited = true
	st := s.cmd.ProcessState
	if st == nil {
		s.warnf("waiting for pid %d: %v", s.pid, err)
		return
	}
	code := exitCode(st)
	p.ExitCode = &code
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		p.Signal = signalName(ws.Signal())
	}
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok && ru != nil {
		p.RusageMaxRSSBytes = uint64(ru.Maxrss) * 1024 // KiB on Linux
		fromRusage(ru).set(p, rusageWait4)
	}
}

// signalName is a signal's name as the docs and probe run write it
// ("SIGKILL"), or "signal N" for one without a name.
func signalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return fmt.Sprintf("signal %d", int(sig))
}

// KilledBy says which signal killed the program of an exec result, by
// name and number: "SIGKILL (signal 9)"; "" when no signal did.
func KilledBy(p *schema.Process) string {
	if p == nil || p.Signal == "" {
		return ""
	}
	if p.ExitCode == nil || *p.ExitCode <= 128 || !strings.HasPrefix(p.Signal, "SIG") {
		return p.Signal
	}
	return fmt.Sprintf("%s (signal %d)", p.Signal, *p.ExitCode-128)
}

// exitCode is the exit status, or 128 + the signal that killed it.
func exitCode(st *os.ProcessState) int {
	if st == nil {
		return -1
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return st.ExitCode()
}

// explainStart says why execve failed where its errno misleads: ENOENT
// for a file that exists means that the interpreter it names is missing,
// a script's #! line or an ELF binary's dynamic loader (PT_INTERP), and
// "no such file or directory" alone sends the user looking for the
// program itself.
//
// ENOEXEC ("exec format error") of a file with no #! line gets a word
// too: unlike a shell, the probe does not run such a file with /bin/sh.
func explainStart(path string, err error) error {
	if errors.Is(err, syscall.EACCES) && path != "" {
		// execve says EACCES for a directory as for a file without x.
		if fi, serr := os.Stat(path); serr == nil && fi.IsDir() {
			return fmt.Errorf("%w (it is a directory)", err)
		}
	}
	noent, noexec := errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ENOEXEC)
	if !noent && !noexec || path == "" {
		return err
	}
	fi, serr := os.Stat(path)
	if serr != nil || !fi.Mode().IsRegular() {
		return err
	}
	interp, what := interpreter(path)
	switch {
	case noexec && what == "":
		return fmt.Errorf("%w (neither a binary this machine runs nor a script with a #! line)", err)
	case noexec, interp == "":
		return err
	}
	if _, serr := os.Stat(interp); serr == nil {
		return fmt.Errorf("%w, though the file and its %s %s exist (one that %s needs in turn is missing)", err, what, interp, interp)
	}
	return fmt.Errorf("the %s it names, %s: %w (the file itself exists)", what, interp, err)
}

// interpreter is the program that execve runs for the file at path: the
// #! line's interpreter of a script, or an ELF binary's PT_INTERP (its
// dynamic loader); "" when it has none or cannot be read.
func interpreter(path string) (interp, what string) {
	f, err := os.Open(path)
	if err != nil {
		return "", ""
	}
	defer f.Close()
	var head [256]byte
	n, _ := io.ReadFull(f, head[:])
	b := head[:n]
	if bytes.HasPrefix(b, []byte("#!")) {
		line, _, _ := bytes.Cut(b[2:], []byte("\n"))
		if fields := strings.Fields(string(line)); len(fields) > 0 {
			return fields[0], "#! interpreter"
		}
		return "", "#! interpreter" // a script, naming none
	}
	ef, err := elf.NewFile(f)
	if err != nil {
		return "", ""
	}
	defer ef.Close()
	for _, p := range ef.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b, err := io.ReadAll(io.LimitReader(p.Open(), 4096))
		if err != nil {
			return "", ""
		}
		return string(bytes.TrimRight(b, "\x00")), "ELF interpreter (dynamic loader)"
	}
	return "", ""
}

// unwrapExec drops the "exec: " and path an exec error repeats.
func unwrapExec(err error) error {
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
