package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"memprobe/instrument/procfs"
	"memprobe/schema"
)

// The runner's tests start this test binary as the child: with fakeEnv
// set, TestMain plays `probe train` without training. It reads the flags
// the runner passes, and fakeModeEnv ("MODE:<plan>-<phase>;...") picks
// what the named configurations do instead of writing a result:
//
//	crash    print a panic's first line and traces to stderr, exit 2
//	badjson  write a result file that is not JSON, exit 0
//	sleep    sleep for a minute (a timeout, or an interruption)
//	grow     touch 400 MiB, then sleep (the memory watchdog)
//	signal   kill itself with SIGKILL (the OOM killer's signal)
//	garbage  write binary garbage to stderr and stdout and half a
//	         result, exit 0
//	memstop  write a result marked interrupted and say it passed the
//	         --mem-limit it was given, exit 1 (probe train's watchdog)
//	spawn    start a grandchild in its process group that sleeps, write
//	         its pid to the file fakePidEnv names, then sleep
//
// A configuration not named writes a result whose peak_rss_bytes is
// 1e6 × (its position in the plan) + its repetition, and exits 0.
const (
	fakeEnv     = "MEMPROBE_RUNNER_FAKE_CHILD"
	fakeModeEnv = "MEMPROBE_RUNNER_FAKE_MODE"
	// fakePidEnv names the file where spawn writes its grandchild's pid.
	fakePidEnv = "MEMPROBE_RUNNER_FAKE_PIDFILE"
)

func TestMain(m *testing.M) {
	if os.Getenv(fakeEnv) != "" {
		os.Exit(fakeChild(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func fakeChild(args []string) int {
	if len(args) > 0 && args[0] == "sleeper" {
		time.Sleep(time.Minute)
		return 0
	}
	if len(args) == 3 && args[0] == "alloc" {
		// A plan file's program: make MiB resident, hold it for ms,
		// exit 0. MAP_POPULATE faults the pages in without a Go write,
		// which under -race would make as much shadow memory resident.
		mib, _ := strconv.Atoi(args[1])
		ms, _ := strconv.Atoi(args[2])
		b, err := syscall.Mmap(-1, 0, mib<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE|syscall.MAP_POPULATE)
		if err != nil {
			fmt.Fprintln(os.Stderr, "alloc:", err)
			return 1
		}
		time.Sleep(time.Duration(ms) * time.Millisecond)
		syscall.Munmap(b)
		return 0
	}
	flags := map[string]string{}
	for i := 1; i+1 < len(args); i += 2 {
		flags[strings.TrimPrefix(args[i], "--")] = args[i+1]
	}
	name := flags["plan"] + "-" + flags["phase"]
	mode := ""
	for _, m := range strings.Split(os.Getenv(fakeModeEnv), ";") {
		if k, v, ok := strings.Cut(m, ":"); ok && v == name {
			mode = k
		}
	}
	path := flags["json"]
	switch mode {
	case "crash":
		fmt.Fprintln(os.Stderr, "step 1 loss 6.7")
		fmt.Fprintln(os.Stderr, "panic: fake crash of "+name)
		fmt.Fprintln(os.Stderr, "\ngoroutine 1 [running]:\nmain.main()\n\t/fake/main.go:1 +0x1")
		return 2
	case "badjson":
		os.WriteFile(path, []byte("{not json"), 0o644)
		return 0
	case "signal":
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Minute)
		return 0
	case "garbage":
		junk := []byte{0, 0xff, 0xfe, '\n', 0x1b, '[', '2', 'J', 0x80}
		os.Stderr.Write(junk)
		os.Stdout.Write(junk)
		os.WriteFile(path, []byte(`{"schema": "memprobe.train/v3", "steps": 3, "los`), 0o644)
		return 0
	case "memstop":
		r := &schema.Result{Config: schema.Config{Plan: flags["plan"], Phase: flags["phase"], Threads: 1, Steps: 3}, Environment: schema.Environment{GoVersion: runtime.Version()},
			CommandLine: os.Args, StartTime: time.Now().Format(time.RFC3339), Params: 1, Steps: 1, Interrupted: true}
		if err := schema.WriteResult(path, r); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		fmt.Fprintf(os.Stderr, "probe: stopped after 1 of 3 steps: RSS 1.2 GiB passed --mem-limit %s; the result of the steps that ran (marked interrupted) is in %s\n", flags["mem-limit"], path)
		return 1
	case "sleep":
		time.Sleep(time.Minute)
		return 0
	case "grow":
		b := make([]byte, 400<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		time.Sleep(time.Minute)
		runtime.KeepAlive(b)
		return 0
	case "spawn":
		exe, _ := os.Executable()
		p, err := os.StartProcess(exe, []string{exe, "sleeper"}, &os.ProcAttr{Env: os.Environ()})
		if err == nil {
			os.WriteFile(os.Getenv(fakePidEnv), []byte(strconv.Itoa(p.Pid)), 0o644)
		}
		time.Sleep(time.Minute)
		return 0
	}
	// A result: the position from the phase and plan, the repetition
	// from the file name (<index>-r<rep>.json).
	base := strings.TrimSuffix(filepath.Base(path), ".json")
	idx, rep, _ := strings.Cut(base, "-r")
	i, _ := strconv.Atoi(idx)
	k, _ := strconv.Atoi(rep)
	threads, _ := strconv.Atoi(flags["threads"])
	steps, _ := strconv.Atoi(flags["steps"])
	r := &schema.Result{
		Config:      schema.Config{Preset: flags["preset"], Threads: threads, Steps: steps, Plan: flags["plan"], Phase: flags["phase"], Data: flags["data"]},
		Environment: schema.Environment{GoVersion: runtime.Version()}, CommandLine: os.Args,
		StartTime: time.Now().Format(time.RFC3339), Params: 1, Steps: steps,
		PeakRSSBytes: uint64(1e6*(i+1) + k), TokensPerSec: float64(1000 * k), StepNsMedian: int64(k),
	}
	if err := schema.WriteResult(path, r); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// fakeOptions runs the fake child for the micro preset's configurations
// (each predicted at about 50 MiB), modes as fakeModeEnv reads them.
func fakeOptions(t *testing.T, modes string) Options {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Options{
		Executable: exe, Env: []string{fakeEnv + "=1", fakeModeEnv + "=" + modes},
		Preset: "micro", Steps: 1, Data: "synthetic:100KB", Count: 1,
		MemLimit: 1 << 30, Out: filepath.Join(t.TempDir(), "report.json"),
	}
}

// children lists the processes whose parent is this one (zombies
// included: a child the runner did not reap is one).
func children(t *testing.T) []int {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	var out []int
	for _, p := range (procfs.FS{}).Descendants(os.Getpid()) {
		if p.PPID == os.Getpid() {
			out = append(out, p.PID)
		}
	}
	return out
}

// alive reports whether pid exists (and is not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z"
}

func noChildrenLeft(t *testing.T) {
	t.Helper()
	if c := children(t); len(c) > 0 {
		t.Errorf("child processes left after Run: %v", c)
	}
}
