package profiling

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestCheckAddr(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		remote bool
		ok     bool
		want   string // in the error
	}{
		{"127.0.0.1:6060", false, true, ""},
		{"127.0.0.2:0", false, true, ""},
		{"[::1]:6060", false, true, ""},
		{"localhost:6060", false, true, ""},
		{"0.0.0.0:6060", false, false, "every interface"},
		{"[::]:6060", false, false, "every interface"},
		{":6060", false, false, "empty host listens on every interface"},
		{"192.168.1.5:6060", false, false, "not a loopback address"},
		{"example.com:6060", false, false, "not an IP literal"},
		{"0.0.0.0:6060", true, true, ""},
		{":6060", true, true, ""},
		{"127.0.0.1", false, false, "want host:port"},
		{"127.0.0.1:http", false, false, "not a number"},
		{"127.0.0.1:70000", false, false, "not a number"},
		{"0.0.0.0:x", true, false, "not a number"},
	} {
		err := CheckAddr(tc.addr, tc.remote)
		if (err == nil) != tc.ok {
			t.Errorf("CheckAddr(%q, %v) = %v, want ok=%v", tc.addr, tc.remote, err, tc.ok)
			continue
		}
		if err != nil {
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.addr) {
				t.Errorf("CheckAddr(%q): %q does not name the address and %q", tc.addr, err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		}
	}
}

func TestStartRefusesRemote(t *testing.T) {
	s, err := Start(Options{PprofAddr: "0.0.0.0:0"})
	if err == nil {
		s.Stop()
		t.Fatal("Start with 0.0.0.0: no error")
	}
	if !strings.Contains(err.Error(), "--pprof-allow-remote") {
		t.Errorf("error %q does not say how to allow it", err)
	}
}

func TestPaths(t *testing.T) {
	p := Options{Dir: "d", Name: "plan/a b", CPU: "x.prof"}.Paths()
	want := map[string]string{
		"cpu": "x.prof", "heap": filepath.Join("d", "plan_a_b.heap.pprof"), "allocs": filepath.Join("d", "plan_a_b.allocs.pprof"),
		"mutex": filepath.Join("d", "plan_a_b.mutex.pprof"), "block": filepath.Join("d", "plan_a_b.block.pprof"),
	}
	if len(p) != len(want) {
		t.Errorf("paths %v", p)
	}
	for k, v := range want {
		if p[k] != v {
			t.Errorf("%s: %q, want %q", k, p[k], v)
		}
	}
	if p := (Options{Heap: "h"}).Paths(); len(p) != 1 || p["heap"] != "h" {
		t.Errorf("heap only: %v", p)
	}
	if SafeName("") != "default" || SafeName("seed-fixed_1.2") != "seed-fixed_1.2" {
		t.Error("SafeName")
	}
}

func TestBadDir(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o644)
	if _, err := Start(Options{Dir: filepath.Join(f, "sub")}); err == nil || !strings.Contains(err.Error(), "profile dir") {
		t.Errorf("err = %v", err)
	}
	if _, err := Start(Options{CPU: filepath.Join(t.TempDir(), "no", "such", "cpu.pprof")}); err == nil || !strings.Contains(err.Error(), "cpu profile") {
		t.Errorf("err = %v", err)
	}
	if runtime.SetMutexProfileFraction(-1) != 0 {
		t.Error("failed Start left the mutex rate set")
	}
}

var keep [][]byte

// work burns CPU, contends a mutex, blocks on channels and allocates, so
// that every profile has samples.
func work() {
	var mu sync.Mutex
	var wg sync.WaitGroup
	ch := make(chan int)
	sum := 0
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				mu.Lock()
				for j := 0; j < 20000; j++ {
					sum += j * i
				}
				keep = append(keep[:0:0], make([]byte, 1024))
				mu.Unlock()
			}
			ch <- 1
		}()
	}
	for range 4 {
		time.Sleep(time.Millisecond)
		<-ch
	}
	wg.Wait()
	_ = sum
}

// TestAllProfiles writes every profile into a directory and checks each is
// a gzipped pprof protobuf that `go tool pprof -top` opens.
func TestAllProfiles(t *testing.T) {
	dir := t.TempDir()
	rate := runtime.MemProfileRate
	s, err := Start(Options{Dir: dir, Name: "seed-fixed", MemProfileRate: 1})
	if err != nil {
		t.Fatal(err)
	}
	if runtime.SetMutexProfileFraction(-1) != MutexFraction || runtime.MemProfileRate != 1 {
		t.Error("mutex or memory profile rate not set")
	}
	work()
	r, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if runtime.SetMutexProfileFraction(-1) != 0 || runtime.MemProfileRate != rate {
		t.Error("mutex or memory profile rate not restored")
	}
	kinds := map[string]string{}
	for _, f := range r.Files {
		kinds[f.Kind] = f.Path
	}
	for _, k := range []string{"cpu", "heap", "allocs", "mutex", "block"} {
		p, ok := kinds[k]
		if !ok {
			t.Errorf("no %s profile in %+v", k, r.Files)
			continue
		}
		if want := filepath.Join(dir, "seed-fixed."+k+".pprof"); p != want {
			t.Errorf("%s at %s, want %s", k, p, want)
		}
		checkProfile(t, p)
	}
	if _, err := s.Stop(); err == nil {
		t.Error("second Stop: no error")
	}
}

// checkProfile checks that path is gzip and, where the go command is on
// PATH, that go tool pprof -top reads it.
func checkProfile(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Errorf("%s: not gzip: %v", path, err)
		return
	}
	if raw, err := io.ReadAll(zr); err != nil || len(raw) == 0 {
		t.Errorf("%s: bad gzip stream: %v", path, err)
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Logf("go not on PATH; not opening %s with pprof", path)
		return
	}
	out, err := exec.Command(goCmd, "tool", "pprof", "-top", path).CombinedOutput()
	if err != nil {
		t.Errorf("go tool pprof -top %s: %v\n%s", path, err, out)
	}
}

// TestPeakProfiles grows the live heap in three steps, each over the
// margin, and checks a heap profile is written at each crossing.
func TestPeakProfiles(t *testing.T) {
	defer func(d time.Duration) { peakMinInterval = d }(peakMinInterval)
	peakMinInterval = 0
	dir := t.TempDir()
	heap := filepath.Join(dir, "mem.pprof")
	runtime.GC() // start from a collected heap (-count > 1 leaves the last run's garbage)
	s, err := Start(Options{Heap: heap, PeakMax: 2})
	if err != nil {
		t.Fatal(err)
	}
	var live [][]byte
	defer func() { live = nil }()
	var total int64 // bytes held in live: 16, 48, then 96 MiB
	for i := 1; i <= 3; i++ {
		b := make([]byte, i*16<<20)
		total += int64(len(b))
		for j := range b {
			b[j] = 1
		}
		live = append(live, b)
		runtime.GC()
		// The watcher runs after the GC on its own goroutine: wait for
		// it by state, not by time (the deadline only stops a hang).
		deadline := time.Now().Add(time.Minute)
		for !s.peak.seen(total) {
			if time.Now().After(deadline) {
				t.Fatalf("crossing %d never handled", i)
			}
			runtime.GC()
			time.Sleep(time.Millisecond)
		}
	}
	r, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	var peaks []File
	for _, f := range r.Files {
		if f.Kind == "heap-peak" {
			peaks = append(peaks, f)
		}
	}
	if len(peaks) != 2 || r.PeakSkipped != 1 {
		t.Fatalf("%d peak profiles, %d skipped; want 2 and 1: %+v", len(peaks), r.PeakSkipped, r.Files)
	}
	if peaks[0].Path != filepath.Join(dir, "mem-peak-01.pprof") || peaks[1].HeapLiveBytes < 48<<20 {
		t.Errorf("peaks %+v", peaks)
	}
	if r.HeapLiveMaxBytes < 96<<20 {
		t.Errorf("max live %d, want >= 96 MiB", r.HeapLiveMaxBytes)
	}
	checkProfile(t, peaks[0].Path)
	runtime.KeepAlive(live)
}

func TestCrossed(t *testing.T) {
	const M = 1 << 20
	for _, tc := range []struct {
		live, mark int64
		want       bool
	}{
		{100 * M, 90 * M, true}, // +11 %, +10 MiB
		{99 * M, 90 * M, false}, // +10 % exactly: not over
		{5 * M, 0, true},        // from nothing, 5 MiB
		{3 * M, 0, false},       // under 4 MiB
		{1000 * M, 995 * M, false},
	} {
		if got := crossed(tc.live, tc.mark); got != tc.want {
			t.Errorf("crossed(%d, %d) = %v", tc.live, tc.mark, got)
		}
	}
}

func TestPprofServer(t *testing.T) {
	s, err := Start(Options{PprofAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	addr := s.Addr()
	resp, err := http.Get("http://" + addr + "/debug/pprof/heap?debug=1")
	if err != nil {
		s.Stop()
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte("heap profile")) {
		t.Errorf("status %d, body %.100q", resp.StatusCode, body)
	}
	r, err := s.Stop()
	if err != nil || r.PprofAddr != addr {
		t.Errorf("stop: %+v, %v", r, err)
	}
	if _, err := http.Get("http://" + addr + "/debug/pprof/"); err == nil {
		t.Error("server still answers after Stop")
	}
}

// TestDiscardKeepsFiles: until Stop, no file named in the options is
// touched (the CPU profile streams to a temporary file beside its path,
// the heap-peak profiles are staged the same way); Discard, what a failed
// job calls, ends the session writing nothing: the files hold what they
// held before, no peak profile appears and no temporary file is left.
// Before, Start created the CPU profile's file at once (emptying what was
// there) and a peak profile was written in place when it was taken.
func TestDiscardKeepsFiles(t *testing.T) {
	defer func(d time.Duration) { peakMinInterval = d }(peakMinInterval)
	peakMinInterval = 0
	dir := t.TempDir()
	paths := map[string]string{}
	for _, kind := range []string{"cpu", "heap", "allocs", "mutex"} {
		paths[kind] = filepath.Join(dir, kind+".pprof")
		if err := os.WriteFile(paths[kind], []byte("old "+kind), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string) {
		t.Helper()
		for kind, p := range paths {
			if b, err := os.ReadFile(p); err != nil || string(b) != "old "+kind {
				t.Errorf("%s: %s holds %.20q (%v), want %q", when, p, b, err, "old "+kind)
			}
		}
	}
	runtime.GC()
	s, err := Start(Options{CPU: paths["cpu"], Heap: paths["heap"], Allocs: paths["allocs"], Mutex: paths["mutex"], PeakMax: 1})
	if err != nil {
		t.Fatal(err)
	}
	check("after Start")
	// A live-heap peak: its profile is taken, and staged.
	b := make([]byte, 32<<20)
	for i := range b {
		b[i] = 1
	}
	deadline := time.Now().Add(time.Minute) // stops a hang only
	for {
		s.mu.Lock()
		n := len(s.staged)
		s.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no peak profile taken")
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	runtime.KeepAlive(b)
	check("with a peak profile taken")
	s.Discard()
	check("after Discard")
	ents, _ := os.ReadDir(dir)
	if len(ents) != len(paths) {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("after Discard the directory holds %v, want only the four files", names)
	}
	if runtime.SetMutexProfileFraction(-1) != 0 {
		t.Error("Discard left the mutex rate set")
	}
	s.Discard() // a second one is a no-op
	if _, err := s.Stop(); err == nil {
		t.Error("Stop after Discard: no error")
	}
}

// TestStopReplaces: Stop puts every profile in place, over what was there,
// mode 0644, and leaves no temporary file.
func TestStopReplaces(t *testing.T) {
	dir := t.TempDir()
	cpu, heap := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "heap.pprof")
	for _, p := range []string{cpu, heap} {
		os.WriteFile(p, []byte("old"), 0o600)
	}
	s, err := Start(Options{CPU: cpu, Heap: heap})
	if err != nil {
		t.Fatal(err)
	}
	work()
	r, err := s.Stop()
	if err != nil || len(r.Files) != 2 {
		t.Fatalf("Stop: %+v, %v", r.Files, err)
	}
	for _, p := range []string{cpu, heap} {
		checkProfile(t, p)
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v (%v), want 0644", p, fi.Mode(), err)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("%d files in the directory after Stop, want 2", len(ents))
	}
}

// TestCheckOutputs: every location is checked before any work, with the
// flag that named it, and nothing is created.
func TestCheckOutputs(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	os.WriteFile(file, nil, 0o644)
	nodir := filepath.Join(dir, "no", "x.pprof")
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{CPU: filepath.Join(dir, "c.pprof"), Dir: filepath.Join(dir, "new", "p")}, ""},
		{Options{CPU: nodir}, "--cpuprofile " + nodir + ": directory " + filepath.Dir(nodir)},
		{Options{Heap: dir}, "--memprofile " + dir + ": is a directory"},
		{Options{Allocs: nodir}, "--allocprofile " + nodir},
		{Options{Mutex: nodir}, "--mutexprofile " + nodir},
		{Options{Block: nodir}, "--blockprofile " + nodir},
		{Options{Dir: file}, "--profile-dir " + file + ": exists and is not a directory"},
		{Options{Dir: filepath.Join(file, "a", "b")}, "--profile-dir " + filepath.Join(file, "a", "b") + ": cannot be created: " + file + " is not a directory"},
	} {
		err := c.o.CheckOutputs()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v", c.o, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("CheckOutputs left %d entries in %s, want only f", len(ents), dir)
	}
	out := Options{Dir: "d", CPU: "c"}.Outputs()
	if len(out) != 5 || out[0].Flag != "--cpuprofile" || out[0].Path != "c" || out[1].Flag != "--profile-dir" || out[1].Path != filepath.Join("d", "default.heap.pprof") {
		t.Errorf("Outputs = %+v", out)
	}
}
