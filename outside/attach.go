package outside

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"memprobe/instrument/procfs"
	"memprobe/schema"
)

// ErrNoProcess is wrapped by Attach's error for a pid that does not exist.
var ErrNoProcess = errors.New("no such process")

// ErrKernelThread is wrapped by Attach's error for a kernel thread: it
// has no user memory (its smaps is empty, its exe and cmdline too), so
// there is nothing to watch.
var ErrKernelThread = errors.New("kernel thread")

// pfKthread is PF_KTHREAD (include/linux/sched.h), the flag of a kernel
// thread in /proc/PID/stat's field 9.
const pfKthread = 0x00200000

// kernelThread reports whether pid is a kernel thread, with its name
// (the stat file's comm), from the PF_KTHREAD flag: the one sign that
// tells a kernel thread from a zombie, whose smaps, exe and cmdline are
// as empty.
func kernelThread(fsys procfs.FS, pid int) (string, bool) {
	b, err := os.ReadFile(fsys.Path(pid, "stat"))
	if err != nil {
		return "", false
	}
	i, j := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if i < 0 || j < i {
		return "", false
	}
	f := strings.Fields(string(b[j+1:]))
	if len(f) < 7 {
		return "", false
	}
	flags, err := strconv.ParseUint(f[6], 10, 64) // field 9: f[0] is field 3
	if err != nil || flags&pfKthread == 0 {
		return "", false
	}
	return string(b[i+1 : j]), true
}

// PermissionError is Attach's error for a process whose memory maps the
// probe may not read.
type PermissionError struct {
	PID int
	// Owner is the process's user ("" when unknown); Self the probe's.
	Owner, Self string
	// Path is the file that could not be read.
	Path string
}

func (e *PermissionError) Error() string {
	owner := e.Owner
	if owner == "" {
		owner = "another user"
	}
	if owner == e.Self {
		return fmt.Sprintf("attaching to pid %d: permission denied reading %s: the process is %s's, as the probe is, but may not be inspected (not dumpable, Yama's ptrace_scope, another namespace); run the probe with CAP_SYS_PTRACE",
			e.PID, e.Path, owner)
	}
	way := fmt.Sprintf("run the probe as %s, or as root (CAP_SYS_PTRACE)", owner)
	if owner == "uid 0" || strings.HasSuffix(owner, "(uid 0)") {
		// Root's process: "as root, or as root" says one thing twice.
		way = "run the probe as root (or with CAP_SYS_PTRACE)"
	}
	return fmt.Sprintf("attaching to pid %d: permission denied reading %s: the process belongs to %s and the probe runs as %s; %s",
		e.PID, e.Path, owner, e.Self, way)
}

func (e *PermissionError) Unwrap() error { return fs.ErrPermission }

// Attach watches a running process. It fails at once, in one line, when
// the pid does not exist or its memory maps cannot be read.
//
// A thread id (what top -H, a log or gettid shows) is taken for the
// process the thread belongs to, with a note (Options.Progress, and the
// result's warnings): memory belongs to the process, which every thread
// shares, and watching a thread's /proc entry would end the watch when
// that thread exits while the process lives on.
func Attach(pid int, o Options) (*Session, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	if pid < 1 {
		return nil, fmt.Errorf("attaching to pid %d: not a process id", pid)
	}
	note := ""
	if tgid := threadGroup(o.FS, pid); tgid > 0 && tgid != pid {
		note = fmt.Sprintf("%d is a thread of process %d (%s): watching the process", pid, tgid, comm(o.FS, tgid))
		pid = tgid
		// Said now, before the watch's own lines (and before an error
		// about the process, which names its pid, not the thread's).
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "probe: %s\n", note)
		}
	}
	if err := checkReadable(o, pid); err != nil {
		return nil, err
	}
	s, err := newSession(o, schema.ModeAttach, pid, cmdline(o.FS, pid), time.Now())
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			return nil, fmt.Errorf("attaching to pid %d: %w (it exited)", pid, ErrNoProcess)
		}
		return nil, fmt.Errorf("attaching to pid %d: %w", pid, err)
	}
	if note != "" {
		s.warnf("%s", note)
	}
	return s, nil
}

// threadGroup is the process (Tgid of /proc/ID/status) that the task id
// belongs to: id itself for a process, its process for a thread; 0 when
// unreadable. /proc/TID is there for every thread, though ls /proc does
// not list it.
func threadGroup(fsys procfs.FS, id int) int {
	b, err := os.ReadFile(fsys.Path(id, "status"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return 0
			}
			return n
		}
	}
	return 0
}

// comm is the command name of pid (/proc/PID/comm); "?" when unreadable.
func comm(fsys procfs.FS, pid int) string {
	b, err := os.ReadFile(fsys.Path(pid, "comm"))
	if err != nil || len(b) == 0 {
		return "?"
	}
	return strings.TrimSpace(string(b))
}

// checkReadable says, in one line, why pid cannot be watched: it does not
// exist, or smaps (which needs ptrace read access) is not readable.
func checkReadable(o Options, pid int) error {
	dir := o.FS.Path(pid, "")
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("attaching to pid %d: %w", pid, ErrNoProcess)
	}
	if name, ok := kernelThread(o.FS, pid); ok {
		return fmt.Errorf("pid %d is a %w (%s): nothing to attach to", pid, ErrKernelThread, name)
	}
	path := o.FS.Path(pid, "smaps")
	f, err := os.Open(path)
	if err == nil {
		var b [1]byte
		_, err = f.Read(b[:])
		f.Close()
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrPermission):
		owner := ""
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			owner = userName(int(st.Uid))
		}
		return &PermissionError{PID: pid, Owner: owner, Self: userName(os.Geteuid()), Path: path}
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ESRCH):
		return fmt.Errorf("attaching to pid %d: %w", pid, ErrNoProcess)
	case errors.Is(err, io.EOF):
		return fmt.Errorf("attaching to pid %d: %w (it has exited and waits to be reaped)", pid, ErrNoProcess)
	}
	return fmt.Errorf("attaching to pid %d: %w", pid, err)
}

// userName is "name (uid N)", or "uid N" when the name is unknown.
func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return fmt.Sprintf("%s (uid %d)", u.Username, uid)
	}
	return fmt.Sprintf("uid %d", uid)
}

// exitedCh is closed when the attached process exits: a pidfd becomes
// readable then (Linux 5.3+); without one, /proc/PID is polled.
func (s *Session) exitedCh() <-chan struct{} {
	ch := make(chan struct{})
	fd, err := unix.PidfdOpen(s.pid, 0)
	if err == nil {
		go func() {
			defer close(ch)
			defer unix.Close(fd)
			pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			for {
				select {
				case <-s.stop:
					return
				default:
				}
				n, err := unix.Poll(pfd, 100)
				if n > 0 || err != nil && err != unix.EINTR {
					return
				}
			}
		}()
		return ch
	}
	go func() {
		defer close(ch)
		t := time.NewTicker(s.tick())
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
			if gone(s.opts.FS.Path(s.pid, "stat")) {
				return
			}
		}
	}()
	return ch
}

// gone says whether the process of a stat file has exited: the file is
// gone (reaped) or its state is Z (a zombie, not yet reaped) or X.
func gone(statPath string) bool {
	f := procfs.StatFields(statPath)
	return len(f) == 0 || f[0] == "Z" || f[0] == "X"
}

// waitAttach waits until the process exits or ctx ends (Ctrl-C, the
// duration); it says whether the process exited.
func (s *Session) waitAttach(ctx context.Context) bool {
	select {
	case <-s.exitedCh():
		return true
	case <-ctx.Done():
		// Exited at the same moment? Then there is nothing to walk.
		return gone(s.opts.FS.Path(s.pid, "stat"))
	}
}
