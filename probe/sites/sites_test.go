package sites

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"memprobe/internal/cshared"
	"memprobe/schema"
)

// lib builds the library for the test, or skips without gcc.
func lib(t testing.TB) string {
	t.Helper()
	p, err := Build()
	switch {
	case errors.Is(err, cshared.ErrNoGCC):
		t.Skip("gcc not found: the allocation-site library cannot be built")
	case err != nil:
		t.Fatal(err)
	}
	return p
}

var (
	progMu  sync.Mutex
	progs   = map[string]string{}
	progDir string
)

// prog compiles testdata/NAME (C, or C++ for .cc) with flags, once per
// test binary, and returns the executable.
func prog(t testing.TB, name string, flags ...string) string {
	t.Helper()
	progMu.Lock()
	defer progMu.Unlock()
	key := name + " " + strings.Join(flags, " ")
	if p, ok := progs[key]; ok {
		return p
	}
	if progDir == "" {
		d, err := os.MkdirTemp("", "sites-progs-")
		if err != nil {
			t.Fatal(err)
		}
		progDir = d
	}
	cc := "gcc"
	if strings.HasSuffix(name, ".cc") {
		cc = "g++"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("%s not found: cannot build testdata/%s", cc, name)
	}
	out := filepath.Join(progDir, fmt.Sprintf("p%d", len(progs)))
	args := append([]string{"-O1", "-g", "-fno-omit-frame-pointer", "-pthread", "-o", out, filepath.Join("testdata", name)}, flags...)
	if b, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", cc, args, err, b)
	}
	progs[key] = out
	return out
}

// record runs argv with the library at rate and analyzes what it wrote.
func record(t testing.TB, rate int64, argv ...string) (*schema.Sites, []string, int) {
	t.Helper()
	dir := t.TempDir()
	recs := filepath.Join(dir, "records")
	if err := os.Mkdir(recs, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = Env(os.Environ(), lib(t), recs, rate)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %v", argv, err)
	}
	s, warns, err := Analyze(Options{Dir: recs, OutDir: dir, PID: cmd.Process.Pid})
	if err != nil {
		t.Fatal(err)
	}
	return s, warns, cmd.Process.Pid
}

// site finds the site named fn in sites; nil when absent.
func site(sites []schema.Site, fn string) *schema.Site {
	for i := range sites {
		if sites[i].Function == fn {
			return &sites[i]
		}
	}
	return nil
}

// leafSum sums the values (index i) of the samples of a profile whose
// innermost frame is fn.
func leafSum(t *testing.T, s *schema.Sites, kind, fn string, i int) int64 {
	t.Helper()
	for _, pf := range s.Profiles {
		if pf.Kind != kind {
			continue
		}
		p, err := readProfile(pf.Path)
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		for _, smp := range p.Sample {
			if len(smp.Location) > 0 && smp.Location[0].Line[0].Function.Name == fn {
				sum += smp.Value[i]
			}
		}
		return sum
	}
	t.Fatalf("no %s profile in %+v", kind, s.Profiles)
	return 0
}

// TestPlantedExact: at rate 1 every planted site of testdata/planted.c is
// named with its exact bytes in the right profile: the leak in exit (and
// peak), the freed peak in peak but not exit, the temporary site's count.
// A build with fewer leaked blocks moves the exit figure by their bytes.
func TestPlantedExact(t *testing.T) {
	for _, tc := range []struct {
		leaks  int64
		flags  []string
		unwind string
	}{{10, nil, ""}, {3, []string{"-DLEAK_N=3"}, ""}, {10, nil, "libgcc"}} {
		// MEMPROBE_SITES_UNWIND=libgcc: the fallback unwinder, where
		// libunwind is not installed.
		t.Setenv("MEMPROBE_SITES_UNWIND", tc.unwind)
		s, warns, pid := record(t, 1, prog(t, "planted.c", tc.flags...))
		if len(warns) > 0 {
			t.Errorf("warnings: %q", warns)
		}
		if !s.Exact || s.PID != pid {
			t.Errorf("exact %v pid %d, want true and %d", s.Exact, s.PID, pid)
		}
		leak, peak := tc.leaks*100000, int64(64<<20)
		if s.PeakInUseBytes != peak+leak || s.ExitInUseBytes != leak {
			t.Errorf("peak %d exit %d bytes, want %d and %d", s.PeakInUseBytes, s.ExitInUseBytes, peak+leak, leak)
		}
		if x := site(s.TopExit, "leak_site"); x == nil || x.Bytes != leak || x.Objects != tc.leaks {
			t.Errorf("exit: leak_site %+v, want %d bytes in %d blocks", x, leak, tc.leaks)
		}
		if x := site(s.TopExit, "peak_site"); x != nil {
			t.Errorf("exit: peak_site %+v, want none (freed)", x)
		}
		if x := site(s.TopPeak, "peak_site"); x == nil || x.Bytes != peak || x.Objects != 64 {
			t.Errorf("peak: peak_site %+v, want %d bytes in 64 blocks", x, peak)
		}
		if x := site(s.TopTemporary, "temp_site"); x == nil || x.Temporary != 5000 || x.Bytes != 5000*200 {
			t.Errorf("temporary: temp_site %+v, want 5000 temporary of 1000000 bytes", x)
		}
		if s.AllocObjects < tc.leaks+64+5000 {
			t.Errorf("allocations counted %d, want at least the %d planted", s.AllocObjects, tc.leaks+64+5000)
		}
		// The profiles say the same.
		for _, c := range []struct {
			kind, fn string
			want     int64
		}{
			{schema.SitesExit, "leak_site", leak}, {schema.SitesExit, "peak_site", 0}, {schema.SitesExit, "temp_site", 0},
			{schema.SitesPeak, "peak_site", peak}, {schema.SitesPeak, "leak_site", leak},
			{schema.SitesAlloc, "temp_site", 5000 * 200}, {schema.SitesAlloc, "peak_site", peak},
		} {
			if got := leafSum(t, s, c.kind, c.fn, 1); got != c.want {
				t.Errorf("%s profile: %s %d bytes, want %d", c.kind, c.fn, got, c.want)
			}
		}
		if got := leafSum(t, s, schema.SitesAlloc, "temp_site", 0); got != 5000 {
			t.Errorf("alloc profile: temp_site %d objects, want 5000", got)
		}
	}
}

// TestCxxSites: a C++ program's site is its own function, demangled, not
// operator new nor the std::vector and std::allocator code inlined into
// it; its line is the program's (the vector's construction, cxx.cc:12),
// and the functions inlined above it are frames of their own
// (std::make_unique, inlined into make_grids); the leak's bytes are
// exact.
func TestCxxSites(t *testing.T) {
	s, _, _ := record(t, 1, prog(t, "cxx.cc"))
	x := site(s.TopExit, "shapes::Grid<double>::Grid(unsigned long)")
	if x == nil || x.Bytes != 4*250000*8 || x.Objects != 4 {
		t.Fatalf("exit sites %+v: want shapes::Grid<double>::Grid(unsigned long) with 8000000 bytes in 4 blocks", s.TopExit)
	}
	if filepath.Base(x.File) != "cxx.cc" || x.Line != 12 {
		t.Errorf("site at %s:%d, want cxx.cc:12", x.File, x.Line)
	}
	if !slices.Contains(x.Stack, "make_grids()") || !strings.Contains(strings.Join(x.Stack, "\n"), "std::make_unique<shapes::Grid<double>") {
		t.Errorf("stack %q: want std::make_unique (inlined) and make_grids() above the site", x.Stack)
	}
}

// TestForkExec: the child of a fork writes its own records under its pid,
// and an execve starts a second image of the same pid; the headline is
// the program's last image.
func TestForkExec(t *testing.T) {
	s, warns, pid := record(t, 1, prog(t, "forkexec.c"))
	if len(warns) > 0 {
		t.Errorf("warnings: %q", warns)
	}
	if x := site(s.TopExit, "second_site"); x == nil || x.Bytes != 7*90000 {
		t.Errorf("headline exit sites %+v: want second_site 630000 bytes", s.TopExit)
	}
	var first, second, child *schema.SitesProcess
	for i, p := range s.Processes {
		switch {
		case p.PID == pid && p.Image == 0:
			first = &s.Processes[i]
		case p.PID == pid && p.Image == 1:
			second = &s.Processes[i]
		case p.PPID == pid:
			child = &s.Processes[i]
		}
	}
	switch {
	case first == nil || first.ExitInUseBytes != 3*300000 || first.Ended != "execve":
		t.Errorf("first image %+v: want 900000 bytes at its end, ended by execve", first)
	case second == nil || second.ExitInUseBytes != 7*90000 || second.Ended != "exit":
		t.Errorf("second image %+v: want 630000 bytes at exit", second)
	case child == nil || child.ExitInUseBytes != 5*70000+3*300000:
		// The child inherits the parent's three blocks, recorded in
		// the parent's file: its own file holds only its five.
		if child == nil || child.ExitInUseBytes != 5*70000 {
			t.Errorf("child %+v: want 350000 bytes of its own", child)
		}
	}
}

// TestSampledEstimates: at the default rate, testdata/sampled.c's peak and
// exit come from the library's count of every block (peak_source
// "counted"): within 2 % of the exact ones (a block's usable size is 8
// bytes more than the 64 KiB asked for, and the count is at most 128 KiB
// behind). The sampled figures, the leak's site and site_a's share of the
// peak, are within the test's bounds of the exact ones: 5 standard errors
// of the estimate (a block of 64 KiB is sampled with p = 1 - exp(-1/8) ≈
// 0.118, and the relative error of a sum of N such blocks is
// sqrt((1-p)/(N·p))): 4.3 % for the 4096 leaked blocks, so ±21.5 %. The
// same run at rate 1 is exact.
func TestSampledEstimates(t *testing.T) {
	const block = 64 << 10
	peak, exit := float64(11520*block), float64(4096*block)
	exact, _, _ := record(t, 1, prog(t, "sampled.c"))
	if exact.PeakInUseBytes != int64(peak) || exact.ExitInUseBytes != int64(exit) {
		t.Fatalf("rate 1: peak %d exit %d, want %d and %d", exact.PeakInUseBytes, exact.ExitInUseBytes, int64(peak), int64(exit))
	}
	s, _, _ := record(t, DefaultRate, prog(t, "sampled.c"))
	if s.Exact || s.RateBytes != DefaultRate {
		t.Errorf("exact %v rate %d, want false and %d", s.Exact, s.RateBytes, DefaultRate)
	}
	within := func(what string, got, want, tol float64) {
		t.Helper()
		t.Logf("%s: %.0f against %.0f (%+.1f %%)", what, got, want, 100*(got/want-1))
		if math.Abs(got/want-1) > tol {
			t.Errorf("%s: %.0f, want %.0f ± %.1f %%", what, got, want, 100*tol)
		}
	}
	if s.PeakSource != "counted" {
		t.Errorf("peak source %q, want counted", s.PeakSource)
	}
	within("peak in use", float64(s.PeakInUseBytes), peak, 0.02)
	within("exit in use", float64(s.ExitInUseBytes), exit, 0.02)
	if x := site(s.TopExit, "leak"); x == nil {
		t.Errorf("exit sites %+v: want leak", s.TopExit)
	} else {
		within("leak at exit", float64(x.Bytes), exit, 0.215)
	}
	// site_a holds 6144 of the peak's 11520 blocks: 53.3 %. Its sampled
	// bytes over the counted peak have a standard error of
	// sqrt(6144·(1-p)/p)/11520 = 0.0186 (0.021 over 30 runs), so the
	// bound is 5 of them, ±0.093.
	if x := site(s.TopPeak, "site_a"); x == nil || s.TopPeak[0].Function != "site_a" {
		t.Errorf("peak sites %+v: want site_a first", s.TopPeak)
	} else {
		p := 1 - math.Exp(-float64(block)/DefaultRate)
		tol := 5 * math.Sqrt(6144*(1-p)/p) / 11520
		share := float64(x.Bytes) / float64(s.PeakInUseBytes)
		t.Logf("site_a's share of the peak: %.3f against %.3f", share, 6144.0/11520)
		if math.Abs(share-6144.0/11520) > tol {
			t.Errorf("site_a's share of the peak %.3f, want %.3f ± %.3f", share, 6144.0/11520, tol)
		}
	}
	if s.SampledObjects >= s.AllocObjects/4 {
		t.Errorf("%d of %d allocations sampled: want a small share at the default rate", s.SampledObjects, s.AllocObjects)
	}
}

// TestOrderBySeq: events interleaved by thread come out in seq order,
// dense or not, and with a seq twice.
func TestOrderBySeq(t *testing.T) {
	for _, seqs := range [][]uint64{
		{5, 6, 2, 3, 7, 4, 8},    // dense from 2, two threads' runs
		{10, 3, 7, 4, 12, 1},     // holes
		{4, 2, 3, 2, 5, 6},       // dense in count but 2 twice
		{1},                      // one
		{3, 1, 2, 0, 7, 6, 5, 4}, // a permutation with cycles
	} {
		ev := make([]event, len(seqs))
		for i, s := range seqs {
			ev[i] = event{seq: s, addr: s * 16}
		}
		orderBySeq(ev)
		for i := 1; i < len(ev); i++ {
			if ev[i].seq < ev[i-1].seq || ev[i].addr != ev[i].seq*16 {
				t.Errorf("%v: got %v", seqs, ev)
				break
			}
		}
	}
}

// TestDlopen: a block allocated in a library the program dlopened and
// then closed is named by that library's symbols (the library writes the
// maps before dlclose unmaps it).
func TestDlopen(t *testing.T) {
	plugin := filepath.Join(t.TempDir(), "libplugin.so")
	if out, err := exec.Command("gcc", "-O1", "-g", "-shared", "-fPIC", "-o", plugin, filepath.Join("testdata", "plugin.c")).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	s, warns, _ := record(t, 1, prog(t, "dlopen.c", "-ldl"), plugin)
	if len(warns) > 0 {
		t.Errorf("warnings: %q", warns)
	}
	x := site(s.TopExit, "plugin_alloc")
	if x == nil || x.Bytes != 5*12345 || x.Objects != 5 || filepath.Base(x.Object) != "libplugin.so" {
		t.Fatalf("exit sites %+v: want plugin_alloc in libplugin.so, 61725 bytes in 5 blocks", s.TopExit)
	}
	if len(x.Stack) < 2 || x.Stack[1] != "main" {
		t.Errorf("stack %q: want main above plugin_alloc", x.Stack)
	}
}

// TestStress: testdata/stress.c at test scale (4 threads, 20000
// allocations each, and one 64 KiB block every 64th) at rate 1: every
// allocation of every thread is recorded and matched, so the records of
// four threads' interleaved buffers are put back in order: the exit holds
// nothing of the three sites, and each is named.
func TestStress(t *testing.T) {
	const n, threads = 20000, 4
	s, warns, _ := record(t, 1, prog(t, "stress.c"), fmt.Sprint(n), fmt.Sprint(threads))
	if len(warns) > 0 {
		t.Errorf("warnings: %q", warns)
	}
	perThread := int64(n + (n+63)/64 + 2) // the window's, the big ones, the two arrays
	if s.SampledObjects < threads*perThread || s.AllocObjects != s.SampledObjects {
		t.Errorf("%d allocations counted, %d recorded: want every one, at least %d", s.AllocObjects, s.SampledObjects, threads*perThread)
	}
	for _, fn := range []string{"small_site", "medium_site", "big_site"} {
		if x := site(s.TopPeak, fn); x == nil || x.Bytes <= 0 {
			t.Errorf("peak sites %+v: want %s", s.TopPeak, fn)
		}
		if x := site(s.TopExit, fn); x != nil {
			t.Errorf("exit: %s %+v, want none (all freed)", fn, x)
		}
	}
	// At most each thread's window and big blocks: 4096 blocks of at
	// most 4095 B and 256 of 64 KiB.
	if limit := int64(threads * (4096*4095 + 256*65536 + 64<<10)); s.PeakInUseBytes > limit || s.PeakInUseBytes < 16<<20 {
		t.Errorf("peak in use %d, want between 16 MiB and %d", s.PeakInUseBytes, limit)
	}
}

// TestBusyExit: a program that exits while four threads are inside the
// allocator (testdata/busyexit.c) ends cleanly: its records end with the
// maps and the end record, and main's leak is named with its bytes.
func TestBusyExit(t *testing.T) {
	s, _, pid := record(t, 1, prog(t, "busyexit.c"))
	if x := site(s.TopExit, "leak_site"); x == nil || x.Bytes != 10*30000 {
		t.Errorf("exit sites %+v: want leak_site 300000 bytes", s.TopExit)
	}
	for _, p := range s.Processes {
		if p.PID == pid && p.Ended != "exit" {
			t.Errorf("pid %d ended %q, want exit", pid, p.Ended)
		}
	}
}

// TestMarkedBlocks runs testdata/marked.c, which checks what a program
// relies on of every wrapped entry point (alignment, realloc keeping the
// contents, malloc_usable_size, glibc's errors) and exits 1 where one
// fails. At rate 2 nearly every block is sampled, so with glibc's
// allocator nearly every block is marked (a prefix before it) and each
// entry point takes its marked path; rate 64 mixes marked and unmarked
// blocks in realloc; rate 1 and the default take the others. The blocks
// kept to the exit are exact at rates 1 and 2 (a 4096-byte block is
// sampled at rate 2 with p = 1 - exp(-2048)).
func TestMarkedBlocks(t *testing.T) {
	p := prog(t, "marked.c")
	for _, rate := range []int64{2, 64, DefaultRate, 1} {
		s, _, _ := record(t, rate, p)
		t.Logf("rate %d: %d of %d allocations sampled", rate, s.SampledObjects, s.AllocObjects)
		// Only the 1-byte blocks are often left (p = 0.39): 94.6 % sampled.
		if rate == 2 && float64(s.SampledObjects) < 0.9*float64(s.AllocObjects) {
			t.Errorf("rate 2: %d of %d allocations sampled, want nearly all", s.SampledObjects, s.AllocObjects)
		}
		if rate > 2 {
			continue
		}
		if x := site(s.TopExit, "kept_site"); x == nil || x.Bytes != 8*4096 || x.Objects != 8 {
			t.Errorf("rate %d: exit sites %+v: want kept_site with 8 blocks of 4096 bytes", rate, s.TopExit)
		}
	}
}
