package sites

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"memprobe/internal/cshared"
)

// The library must not hurt its host: an end signal at any moment, a
// thread in the middle of a record at the end, a library loaded with
// RTLD_DEEPBIND (issue 43, section 4).

// oneImage reads dir's records of pid: its one image, whole or marked
// cut (torn empty or cutNote), its records aligned (every allocation's
// stack written before it, every seq below the end's).
func oneImage(t *testing.T, dir string, pid int) (*image, error) {
	t.Helper()
	ims, err := readDir(dir)
	if err != nil {
		return nil, err
	}
	var mine []*image
	for _, im := range ims {
		if im.pid == pid {
			mine = append(mine, im)
		}
	}
	if len(mine) != 1 {
		return nil, fmt.Errorf("%d images of pid %d, want 1", len(mine), pid)
	}
	im := mine[0]
	if im.torn != "" && im.torn != cutNote {
		return im, fmt.Errorf("torn: %s", im.torn)
	}
	var misread error
	err = im.each(func(e *event) {
		if _, ok := im.stacks[e.stack]; !e.free && !ok && misread == nil {
			misread = fmt.Errorf("allocation seq %d of an unwritten stack %#x: misread", e.seq, e.stack)
		}
	})
	if err != nil {
		return im, err
	}
	return im, misread
}

// TestEndSignalAnyMoment: a program whose threads allocate without
// pause, killed with SIGTERM at a random moment, 200 times, at rate 1
// and the default: it dies of the signal every time (never hangs: 20 s
// each), and its records end whole, by a signal, or say they are cut.
// The handler once took the records' lock, wrote every thread's buffer
// as it stood (a record half written among them) and mapped memory.
func TestEndSignalAnyMoment(t *testing.T) {
	if testing.Short() {
		t.Skip("200 runs")
	}
	p := prog(t, "endsignal.c")
	l := lib(t)
	runs := 200
	cut := 0
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	for i := 0; i < runs; i++ {
		rate := int64(1)
		if i%2 == 1 {
			rate = DefaultRate
		}
		dir := t.TempDir()
		cmd := exec.Command(p, "4")
		cmd.Env = Env(os.Environ(), l, dir, rate)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("run %d: read %q, want ready", i, line)
		}
		time.Sleep(time.Duration(rng.Intn(20000)) * time.Microsecond)
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("run %d (rate %d): no end 20 s after SIGTERM: hung", i, rate)
		}
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
			t.Fatalf("run %d (rate %d): ended %v, want killed by SIGTERM", i, rate, cmd.ProcessState)
		}
		im, err := oneImage(t, dir, cmd.Process.Pid)
		if err != nil {
			t.Fatalf("run %d (rate %d): %v", i, rate, err)
		}
		if !im.ended || im.endHow != 2 {
			t.Fatalf("run %d (rate %d): ended %v (how %d), want by a signal", i, rate, im.ended, im.endHow)
		}
		if im.torn == cutNote {
			cut++
		}
	}
	t.Logf("%d runs killed with SIGTERM: every one died of it, records whole; %d marked cut", runs, cut)
}

// hookedLib builds the library with its test hooks (SITES_TEST_HOOKS).
func hookedLib(t *testing.T) string {
	t.Helper()
	p, err := library.Build("SITES_TEST_HOOKS")
	switch {
	case errors.Is(err, cshared.ErrNoGCC):
		t.Skip("gcc not found: the allocation-site library cannot be built")
	case err != nil:
		t.Fatal(err)
	}
	return p
}

// TestEndMidRecord: a thread stopped in the middle of a record
// (testdata/midrecord.c, at the library's test hook) while the process
// ends by exit or by SIGTERM: the end writes what of each buffer is
// committed, so the file reads whole (main's 3 blocks, the end, no half
// record); by the signal it says it is cut. Planted (the end writing
// each buffer's length as it stands): the half record misreads what
// follows it.
func TestEndMidRecord(t *testing.T) {
	l := hookedLib(t)
	p := prog(t, "midrecord.c", "-rdynamic")
	for _, how := range []string{"exit", "signal"} {
		dir := t.TempDir()
		cmd := exec.Command(p, how)
		cmd.Env = Env(os.Environ(), l, dir, 1)
		cmd.Stderr = os.Stderr
		err := cmd.Run()
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if how == "exit" && err != nil || how == "signal" && (!ws.Signaled() || ws.Signal() != syscall.SIGTERM) {
			t.Fatalf("%s: ended %v (%v)", how, cmd.ProcessState, err)
		}
		im, err := oneImage(t, dir, cmd.Process.Pid)
		if err != nil {
			t.Fatalf("%s: %v", how, err)
		}
		want, wantTorn := uint8(0), ""
		if how == "signal" {
			want, wantTorn = 2, cutNote
		}
		if !im.ended || im.endHow != want || im.torn != wantTorn {
			t.Errorf("%s: ended %v how %d torn %q, want how %d torn %q", how, im.ended, im.endHow, im.torn, want, wantTorn)
		}
		n := 0
		err = im.each(func(e *event) {
			if !e.free && e.size == 55555 {
				n++
			}
			if !e.free && e.size == 777777 {
				t.Errorf("%s: the half record of 777777 bytes was read", how)
			}
		})
		if err != nil {
			t.Fatalf("%s: %v", how, err)
		}
		if n != 3 {
			t.Errorf("%s: %d blocks of 55555 bytes recorded, want main's 3", how, n)
		}
	}
}

// TestDeepbind: a library loaded with RTLD_DEEPBIND (testdata/deeplib.c)
// frees blocks the program made and the program frees the library's,
// 2000 each, at rate 1 and the default: the program exits 0 and the
// blocks are accounted (at rate 1, each side's 5 leaks at its site; at
// both, the count at the end is the leaks, give or take the C library's
// own blocks). Planted (RTLD_DEEPBIND kept): at the default rate glibc's
// free is handed a sampled block's interior pointer and aborts; at rate
// 1 the library's blocks go unrecorded and the count ends 8 MB low.
func TestDeepbind(t *testing.T) {
	p := prog(t, "deepbind.c")
	so := filepath.Join(t.TempDir(), "deeplib.so")
	if b, err := exec.Command("gcc", "-O1", "-g", "-fno-omit-frame-pointer", "-shared", "-fPIC", "-o", so, filepath.Join("testdata", "deeplib.c")).CombinedOutput(); err != nil {
		t.Fatalf("gcc deeplib.c: %v\n%s", err, b)
	}
	const leaked = 5*30000 + 5*40000
	for _, rate := range []int64{1, DefaultRate} {
		dir := t.TempDir()
		cmd := exec.Command(p, so)
		cmd.Env = Env(os.Environ(), lib(t), dir, rate)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("rate %d: %v: %v\n%s", rate, cmd.ProcessState, err, stderr.String())
		}
		if !strings.Contains(stderr.String(), "RTLD_DEEPBIND: the flag is dropped") {
			t.Errorf("rate %d: stderr %q, want the dropped flag told", rate, stderr.String())
		}
		im, err := oneImage(t, dir, cmd.Process.Pid)
		if err != nil {
			t.Fatalf("rate %d: %v", rate, err)
		}
		if !im.counted || im.countEnd < leaked || im.countEnd > leaked+256<<10 {
			t.Errorf("rate %d: the count at the end %d bytes, want the %d leaked and at most 256 KiB of the C library's", rate, im.countEnd, leaked)
		}
		if rate != 1 {
			continue
		}
		s, _, err := Analyze(Options{Dir: dir, PID: cmd.Process.Pid})
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []struct {
			fn    string
			bytes int64
		}{{"prog_alloc", 5 * 30000}, {"lib_alloc", 5 * 40000}} {
			if x := site(s.TopExit, w.fn); x == nil || x.Objects != 5 || x.Bytes != w.bytes {
				t.Errorf("rate 1: exit site %s %+v, want 5 blocks, %d bytes", w.fn, x, w.bytes)
			}
		}
	}
}
