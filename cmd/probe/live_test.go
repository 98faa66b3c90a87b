package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
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

	"golang.org/x/sys/unix"

	"memprobe/outside/sites/sitestest"
)

// openPTY opens a pseudo-terminal pair: the master (the user's side) and
// the slave (what the probe reads as its terminal).
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Skipf("unlocking the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Skipf("naming the pseudo-terminal: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Skipf("opening the pseudo-terminal's slave: %v", err)
	}
	t.Cleanup(func() { s.Close(); m.Close() })
	return m, s
}

// termios is the terminal's modes, to compare before and after.
func termios(t *testing.T, f *os.File) unix.Termios {
	t.Helper()
	tm, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	return *tm
}

// quitWhenRaw writes q on the master once the slave is in raw mode (no
// ICANON): the view is then reading its keys. The 20 s bound a failure.
func quitWhenRaw(t *testing.T, master, slave *os.File) {
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if tm, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS); err == nil && tm.Lflag&unix.ICANON == 0 {
			master.Write([]byte("q"))
			return
		}
	}
	t.Error("the terminal was never put in raw mode")
}

// TestLivePTY: probe exec --live and probe attach --live on a
// pseudo-terminal. The view draws frames (on stderr) and the terminal's
// modes are as before at the end, on each way out: the program ends by
// itself; q, which sends exec's program SIGINT (130); q, which ends an
// attach while the process runs on.
func TestLivePTY(t *testing.T) {
	master, slave := openPTY(t)
	before := termios(t, slave)
	saved, savedTerm := liveStdin, liveTerminal
	liveStdin = slave
	liveTerminal = func(io.Writer) bool { return true } // stderr is the test's buffer
	t.Cleanup(func() { liveStdin, liveTerminal = saved, savedTerm })
	check := func(what, stderr string) {
		t.Helper()
		if !strings.Contains(stderr, "q: quit") || !strings.Contains(stderr, "RSS ") {
			t.Errorf("%s: no frame of the live view on stderr:\n%s", what, stderr)
		}
		if after := termios(t, slave); after != before {
			t.Errorf("%s: the terminal's modes were not restored: lflag %#x, was %#x", what, after.Lflag, before.Lflag)
		}
	}

	_, stderr, err := runProbe("exec", "--live", "--", "/bin/sh", "-c", "sleep 0.3")
	if err != nil {
		t.Fatalf("program ends: %v", err)
	}
	check("program ends", stderr)

	go quitWhenRaw(t, master, slave)
	_, stderr, err = runProbe("exec", "--live", "--", "sleep", "30")
	var ec interface{ ExitCode() int }
	if !errors.As(err, &ec) || ec.ExitCode() != 130 {
		t.Errorf("exec q: %v, want the program killed by SIGINT (130)", err)
	}
	check("exec q", stderr)

	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	go quitWhenRaw(t, master, slave)
	stdout, stderr, err := runProbe("attach", "--live", strconv.Itoa(cmd.Process.Pid))
	if err != nil {
		t.Errorf("attach q: %v", err)
	}
	check("attach q", stderr)
	if !strings.Contains(stdout, "still running") {
		t.Errorf("attach q: the report does not say the process runs on:\n%s", stdout)
	}
}

// lockedBuf is a buffer that the probe writes to while the test reads it.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuf) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// TestLiveSitesExec: probe exec --live --sites draws the top sites in
// use under the figures while the program runs: a program holding 12
// blocks of 250000 bytes at planted_site (rate 1) until a signal is
// named with its bytes before the test ends it.
func TestLiveSitesExec(t *testing.T) {
	sitestest.Lib(t)
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not found")
	}
	bin := filepath.Join(t.TempDir(), "livesites")
	src := filepath.Join("..", "..", "outside", "testdata", "cprogs", "livesites.c")
	if out, err := exec.Command("gcc", "-O2", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	savedTerm := liveTerminal
	liveTerminal = func(io.Writer) bool { return true } // stderr is the test's buffer
	t.Cleanup(func() { liveTerminal = savedTerm })
	var stdout, stderr lockedBuf
	done := make(chan error, 1)
	go func() {
		done <- run(&stdout, &stderr, []string{"exec", "--live", "--sites", "--sites-rate", "1", "--out-dir", t.TempDir(), "--", bin, "pause"})
	}()
	want := regexp.MustCompile(`2\.9 MiB +12  planted_site`)
	pidRE := regexp.MustCompile(`\(pid (\d+)\)`)
	pid := 0
	// The program waits for a signal: it gets one however the test ends.
	t.Cleanup(func() {
		if pid > 0 {
			syscall.Kill(pid, syscall.SIGTERM)
			<-done
		}
	})
	var frame string
	for deadline := time.Now().Add(20 * time.Second); frame == ""; time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-done:
			pid = 0
			t.Fatalf("the probe ended before a frame named planted_site: %v\n%s", err, stderr.String())
		default:
		}
		s := stderr.String()
		if m := pidRE.FindStringSubmatch(s); m != nil && pid == 0 {
			pid, _ = strconv.Atoi(m[1])
		}
		if time.Now().After(deadline) {
			t.Fatalf("no frame named planted_site:\n%s", s)
		}
		if want.MatchString(s) {
			frame = s
		}
	}
	if !strings.Contains(frame, "sites in use: 2.9 MiB in 1 site (every block, as of the last flush)") {
		t.Errorf("the section's totals are missing:\n%s", frame)
	}
}

// TestLiveNotTerminal: with stderr not a terminal (a file, as in a CI
// log) --live draws no view: one line says so and the watch goes on as
// without it, so the file holds no escape codes, and exec's program keeps
// its stdin. The real check, on a real file.
func TestLiveNotTerminal(t *testing.T) {
	if _, err := os.Stat("/proc/self/smaps"); err != nil {
		t.Skip("no /proc")
	}
	master, slave := openPTY(t)
	_ = master
	saved := liveStdin
	liveStdin = slave // a terminal for keys: not enough without one for the view
	t.Cleanup(func() { liveStdin = saved })
	for _, args := range [][]string{
		{"exec", "--live", "--", "/bin/sh", "-c", "sleep 0.3"},
		{"attach", "--live", "--duration", "300ms", strconv.Itoa(os.Getpid())},
	} {
		errf, err := os.Create(filepath.Join(t.TempDir(), "stderr.txt"))
		if err != nil {
			t.Fatal(err)
		}
		var stdout bytes.Buffer
		if err := run(&stdout, errf, args); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		errf.Close()
		b, _ := os.ReadFile(errf.Name())
		got := string(b)
		if strings.Contains(got, "\x1b") {
			t.Errorf("%v: escape codes in a file:\n%q", args, got)
		}
		const note = "probe: --live needs a terminal on stderr, and stderr is not one: going on without the live view\n"
		if strings.Count(got, note) != 1 {
			t.Errorf("%v: stderr does not say once that --live needs a terminal:\n%s", args, got)
		}
		if !strings.Contains(stdout.String(), "Timeline") {
			t.Errorf("%v: no report:\n%s", args, stdout.String())
		}
	}
}
