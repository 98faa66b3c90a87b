package sites

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
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
	return recordTop(t, rate, 0, argv...)
}

// recordTop is record with at most top sites listed (0: Analyze's default).
func recordTop(t testing.TB, rate int64, top int, argv ...string) (*schema.Sites, []string, int) {
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
	s, warns, err := Analyze(Options{Dir: recs, OutDir: dir, PID: cmd.Process.Pid, Top: top})
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
		if x := site(s.TopPeak, "peak_site"); x == nil || x.Bytes != peak || x.Objects != 64 || x.Mapped {
			t.Errorf("peak: peak_site %+v, want %d bytes in 64 blocks, not mapped", x, peak)
		}
		if s.PeakMappedBytes != 0 {
			t.Errorf("%d bytes of the peak mapped, want none (malloc only)", s.PeakMappedBytes)
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
// the program's last image. The first image, with more in use at its
// peak than the headline (900000 bytes against 630000), lists its own
// top sites: parent_site's 900000; the others list none.
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
	if first != nil {
		if x := site(first.TopPeak, "parent_site"); x == nil || x.Bytes != 3*300000 || len(first.TopPeak) != 1 {
			t.Errorf("first image's sites at its peak %+v: want parent_site's 900000 bytes alone", first.TopPeak)
		}
	}
	for _, p := range []*schema.SitesProcess{second, child} {
		if p != nil && len(p.TopPeak) > 0 {
			t.Errorf("pid %d image %d: sites %+v, want none (not more in use than the headline's)", p.PID, p.Image, p.TopPeak)
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
		// Its standard error, estimated from the samples, against the
		// estimate's own: block·sqrt(4096·(1-p)/p) = 11.5 MiB; the
		// estimated one moves by about 2 % with the count of samples.
		p := -math.Expm1(-float64(block) / DefaultRate)
		within("leak's standard error", float64(x.BytesSE), block*math.Sqrt(4096*(1-p)/p), 0.15)
	}
	if x := site(exact.TopExit, "leak"); x == nil || x.BytesSE != 0 {
		t.Errorf("rate 1: exit sites %+v: want leak with no standard error", exact.TopExit)
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

// TestClosedDescriptor: a program that closes every descriptor above
// stderr and opens a file of its own (testdata/closefds.c) gets its file
// as it wrote it, and the records are whole: the library opens its file
// again by its path. Planted (the library's descriptor kept by number),
// the records went into the program's file at exit, and its "hello"
// was lost (the library closed its descriptor before stdio's flush);
// planted without errno kept across the library's writes, the program's
// mallocs after the closes left EBADF in errno (it exits 3).
func TestClosedDescriptor(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.txt")
	s, warns, _ := record(t, 1, prog(t, "closefds.c"), out)
	if b, err := os.ReadFile(out); err != nil || string(b) != "hello\n" {
		t.Fatalf("the program's file: %q (%v), want \"hello\\n\"", b, err)
	}
	var kept, blocks int64 // main's blocks of 1000 bytes: a site a line, before the closes and after
	for _, st := range s.TopExit {
		if st.Function == "main" && st.Bytes == 1000*st.Objects {
			kept, blocks = kept+st.Bytes, blocks+st.Objects
		}
	}
	if kept != 100*1000 || blocks != 100 {
		t.Errorf("main's blocks of 1000 bytes at exit: %d bytes in %d, want 100000 in 100: the records lack those made after the closes (top exit %+v)", kept, blocks, s.TopExit)
	}
	for _, p := range s.Processes {
		if p.Ended != "exit" {
			t.Errorf("pid %d ended %q, want exit", p.PID, p.Ended)
		}
	}
	if len(warns) > 0 {
		t.Errorf("warnings: %q", warns)
	}
}

// TestOwnAllocator: a program that defines malloc itself
// (testdata/ownmalloc.c, as one with jemalloc linked in) is recorded
// with none of its 1000 blocks, and a warning says why, naming it; the
// plant is the allocator: testdata/planted.c, whose blocks reach the
// library, gets no such warning.
func TestOwnAllocator(t *testing.T) {
	p := prog(t, "ownmalloc.c")
	s, warns, _ := record(t, 1, p)
	var mine []string
	for _, w := range warns {
		if strings.Contains(w, p+" defines malloc itself") {
			mine = append(mine, w)
		}
	}
	if len(mine) != 1 || !strings.Contains(mine[0], "its heap blocks are not recorded") {
		t.Errorf("warnings %q, want one saying %s defines malloc itself", warns, p)
	}
	if s.AllocObjects >= 1000 {
		t.Errorf("%d blocks recorded: the program's own malloc reached the library", s.AllocObjects)
	}
	_, warns, _ = record(t, 1, prog(t, "planted.c"))
	for _, w := range warns {
		if strings.Contains(w, "defines") {
			t.Errorf("planted.c, whose allocations reach the library: %q", w)
		}
	}
}

// TestQuickExit: a program that ends with _exit or _Exit (as dash's
// exit builtin does), past exit's handlers, still writes its records:
// its leak is named with its bytes, its maps are there, it ended "exit".
// A vfork child's _exit, in the parent's memory, writes nothing of the
// parent's. Planted (no _exit wrapper): the leak's buffer was never
// written, the image ended "unflushed", its frames were addresses.
func TestQuickExit(t *testing.T) {
	for _, how := range []string{"_exit", "_Exit", "vfork"} {
		s, warns, pid := record(t, 1, prog(t, "quickexit.c"), how)
		if x := site(s.TopExit, "leak_site"); x == nil || x.Bytes != 10*30000 || x.Objects != 10 {
			t.Errorf("%s: exit sites %+v: want leak_site's 10 blocks, 300000 bytes", how, s.TopExit)
		}
		for _, p := range s.Processes {
			if p.PID == pid && p.Ended != "exit" {
				t.Errorf("%s: pid %d ended %q, want exit", how, pid, p.Ended)
			}
		}
		if len(warns) > 0 {
			t.Errorf("%s: warnings %q", how, warns)
		}
	}
}

// TestSignalEnd: a program ended by a signal whose default action ends
// it (Ctrl-C, kill, a closed pipe) still writes its records: the leak is
// named with its bytes, the image ended "signal", and the program dies
// of the signal as it would have. One started with the signal ignored
// (a shell's trap "" TERM) keeps it ignored and exits 0. Planted (no
// handler): "unflushed", 1 of the 10 blocks, frames as addresses, as
// probe exec of a program stopped with Ctrl-C read.
func TestSignalEnd(t *testing.T) {
	p := prog(t, "quickexit.c")
	for _, c := range []struct {
		name string
		argv []string
		sig  syscall.Signal // the death, 0: exit 0
	}{
		{"SIGTERM", []string{p, "SIGTERM"}, syscall.SIGTERM},
		{"SIGPIPE", []string{p, "SIGPIPE"}, syscall.SIGPIPE},
		{"SIGTERM ignored", []string{"sh", "-c", `trap "" TERM; exec "$0" SIGTERM`, p}, 0},
	} {
		dir := t.TempDir()
		cmd := exec.Command(c.argv[0], c.argv[1:]...)
		cmd.Env = Env(os.Environ(), lib(t), dir, 1)
		err := cmd.Run()
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if c.sig != 0 && (!ws.Signaled() || ws.Signal() != c.sig) || c.sig == 0 && err != nil {
			t.Errorf("%s: ended %v (%v), want the program's own end (%v)", c.name, cmd.ProcessState, err, c.sig)
		}
		s, warns, err := Analyze(Options{Dir: dir, PID: cmd.Process.Pid})
		if err != nil {
			t.Fatal(err)
		}
		if x := site(s.TopExit, "leak_site"); x == nil || x.Bytes != 10*30000 || x.Objects != 10 {
			t.Errorf("%s: exit sites %+v: want leak_site's 10 blocks, 300000 bytes", c.name, s.TopExit)
		}
		want := "signal"
		if c.sig == 0 {
			want = "exit"
		}
		for _, pr := range s.Processes {
			if pr.PID == cmd.Process.Pid && pr.Executable == p && pr.Ended != want {
				t.Errorf("%s: pid %d ended %q, want %s", c.name, pr.PID, pr.Ended, want)
			}
		}
		if len(warns) > 0 {
			t.Errorf("%s: warnings %q", c.name, warns)
		}
	}
}

// TestSignalView: sigaction and signal tell the program of the end
// signals' dispositions as it found or set them, not of the library's
// handler (testdata/sigview.c checks SIGINT found at its default, SIGHUP
// set to it, SIGUSR1's handler of its own set, run and told back,
// SIGPIPE ignored and told so, SIGINT's handler of its own kept whatever
// a vfork child sets, exit 19 planted); its handler that sets SIGTERM back to
// its default and raises it ends it with the records written ("signal",
// its 10 blocks), and so does one set with SA_RESETHAND that raises it
// again, as Node's does (planted without the trampoline: "unflushed",
// no blocks). And CPython, which installs its KeyboardInterrupt
// handler only where SIGINT is at its default, installs it. Planted (the
// library's handler seen), sigview exits 11 and Python's SIGINT handler
// is None.
func TestSignalView(t *testing.T) {
	p := prog(t, "sigview.c")
	for _, mode := range []string{"cleanup", "resethand"} {
		dir := t.TempDir()
		cmd := exec.Command(p, mode)
		cmd.Env = Env(os.Environ(), lib(t), dir, 1)
		err := cmd.Run()
		if ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
			t.Fatalf("sigview %s ended %v (%v), want killed by SIGTERM (exit 1x: check x failed)", mode, cmd.ProcessState, err)
		}
		s, warns, err := Analyze(Options{Dir: dir, PID: cmd.Process.Pid})
		if err != nil {
			t.Fatal(err)
		}
		if x := site(s.TopExit, "hold_site"); x == nil || x.Bytes != 10*1000 || x.Objects != 10 {
			t.Errorf("%s: exit sites %+v: want hold_site's 10 blocks, 10000 bytes", mode, s.TopExit)
		}
		for _, pr := range s.Processes {
			if pr.Ended != "signal" {
				t.Errorf("%s: pid %d ended %q, want signal", mode, pr.PID, pr.Ended)
			}
		}
		if len(warns) > 0 {
			t.Errorf("%s: warnings %q", mode, warns)
		}
	}

	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found")
	}
	cmd := exec.Command(py, "-c", "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler, signal.getsignal(signal.SIGTERM))")
	cmd.Env = Env(os.Environ(), lib(t), t.TempDir(), DefaultRate)
	out, err := cmd.Output()
	if got := strings.TrimSpace(string(out)); err != nil || got != "True Handlers.SIG_DFL" && got != "True 0" {
		t.Errorf("python3 under the library: SIGINT's handler is Python's, SIGTERM's: %q (%v), want \"True 0\"", got, err)
	}
}

// TestMunmapCuts: testdata/munmap.c's mappings cut by munmaps at rate 1:
// a munmap of a mapping's head and tail, of its middle, of all of it,
// and one across two mappings each leave what the kernel left, at the
// peak and at exit, per site; the alloc profile counts each mapping once
// at its whole size. Planted, the matching of record version 1 (a munmap
// ends the mapping that starts at its address, all of it) moves every
// figure: aligned_site's head munmap ends it, the cuts of middle_site and
// pair_site are missed.
func TestMunmapCuts(t *testing.T) {
	const MiB = 1 << 20
	type want struct {
		peak, exit                 int64
		aligned, middle, pair      int64 // at the peak
		alignedExit, pairExit      int64
		pairExitBlocks, middleBlks int64
		alignedTemp                int64
	}
	for _, tc := range []struct {
		planted bool
		want    want
	}{
		{false, want{53 * MiB, 17 * MiB, 4 * MiB, 4 * MiB, 13 * MiB, 4 * MiB, 13 * MiB, 2, 2, 0}},
		{true, want{54 * MiB, 16 * MiB, 0, 6 * MiB, 16 * MiB, 0, 16 * MiB, 2, 1, 1}},
	} {
		munmapStartOnly = tc.planted
		s, warns, _ := record(t, 1, prog(t, "munmap.c"))
		munmapStartOnly = false
		if len(warns) > 0 {
			t.Errorf("warnings: %q", warns)
		}
		w := tc.want
		got := func(sites []schema.Site, fn string) (int64, int64) {
			if x := site(sites, fn); x != nil {
				return x.Bytes, x.Objects
			}
			return 0, 0
		}
		ab, _ := got(s.TopPeak, "aligned_site")
		mb, mo := got(s.TopPeak, "middle_site")
		pb, _ := got(s.TopPeak, "pair_site")
		kb, _ := got(s.TopPeak, "peak_site")
		aeb, _ := got(s.TopExit, "aligned_site")
		peb, peo := got(s.TopExit, "pair_site")
		t.Logf("planted %v: peak %d exit %d; at the peak aligned %d middle %d (%d blocks) pair %d peak_site %d; at exit aligned %d pair %d (%d blocks)",
			tc.planted, s.PeakInUseBytes, s.ExitInUseBytes, ab, mb, mo, pb, kb, aeb, peb, peo)
		if s.PeakInUseBytes != w.peak || s.ExitInUseBytes != w.exit {
			t.Errorf("planted %v: peak %d exit %d, want %d and %d", tc.planted, s.PeakInUseBytes, s.ExitInUseBytes, w.peak, w.exit)
		}
		if ab != w.aligned || mb != w.middle || mo != w.middleBlks || pb != w.pair || kb != 32*MiB {
			t.Errorf("planted %v: at the peak aligned %d middle %d in %d blocks pair %d peak_site %d; want %d, %d in %d, %d, %d",
				tc.planted, ab, mb, mo, pb, kb, w.aligned, w.middle, w.middleBlks, w.pair, 32*MiB)
		}
		if aeb != w.alignedExit || peb != w.pairExit || peo != w.pairExitBlocks {
			t.Errorf("planted %v: at exit aligned %d pair %d in %d blocks; want %d, %d in %d", tc.planted, aeb, peb, peo, w.alignedExit, w.pairExit, w.pairExitBlocks)
		}
		if x := site(s.TopExit, "middle_site"); x != nil {
			t.Errorf("planted %v: middle_site at exit %+v, want none (one munmap ended both pieces)", tc.planted, x)
		}
		// What was allocated: each mapping once, whole, cut or not.
		for _, c := range []struct {
			fn         string
			bytes, obj int64
		}{{"aligned_site", 8 * MiB, 1}, {"middle_site", 6 * MiB, 1}, {"pair_site", 16 * MiB, 2}, {"whole_site", 5 * MiB, 1}} {
			if b, o := leafSum(t, s, schema.SitesAlloc, c.fn, 1), leafSum(t, s, schema.SitesAlloc, c.fn, 0); b != c.bytes || o != c.obj {
				t.Errorf("planted %v: alloc profile %s %d bytes in %d, want %d in %d", tc.planted, c.fn, b, o, c.bytes, c.obj)
			}
		}
		// The head munmap of aligned_site follows its mmap at once (the
		// library flags it): a cut that leaves a piece is no temporary
		// block; whole_site's is one.
		var at, wt int64
		if x := site(s.TopTemporary, "aligned_site"); x != nil {
			at = x.Temporary
		}
		if x := site(s.TopTemporary, "whole_site"); x != nil {
			wt = x.Temporary
		}
		if at != w.alignedTemp || wt != 1 {
			t.Errorf("planted %v: temporary aligned_site %d whole_site %d, want %d and 1", tc.planted, at, wt, w.alignedTemp)
		}
	}
}

// TestMunmapSampled: testdata/munmap.c at the default rate. Each of its
// mappings (5 MiB and more) is sampled with a chance p of at least
// 1 - e^-10 and stands for its bytes × 1/p: the figures are within
// e^-10/(1-e^-10) = 4.6e-5 of the exact ones (the chance that some
// mapping goes unsampled and the test fails is below 1e-4 a run). The
// pieces keep the whole mapping's weight per byte.
func TestMunmapSampled(t *testing.T) {
	const MiB = 1 << 20
	s, _, _ := record(t, DefaultRate, prog(t, "munmap.c"))
	tol := math.Exp(-10) / (1 - math.Exp(-10))
	within := func(what string, got, want int64) {
		t.Helper()
		if d := float64(got)/float64(want) - 1; d < 0 || d > tol {
			t.Errorf("%s: %d, want %d to %.0f", what, got, want, float64(want)*(1+tol))
		}
	}
	within("peak in use", s.PeakInUseBytes, 53*MiB)
	within("exit in use", s.ExitInUseBytes, 17*MiB)
	for _, c := range []struct {
		sites []schema.Site
		fn    string
		want  int64
	}{{s.TopPeak, "middle_site", 4 * MiB}, {s.TopPeak, "pair_site", 13 * MiB}, {s.TopExit, "aligned_site", 4 * MiB}, {s.TopExit, "pair_site", 13 * MiB}} {
		x := site(c.sites, c.fn)
		if x == nil {
			t.Errorf("%s: no %s in %+v", c.fn, c.fn, c.sites)
			continue
		}
		within(c.fn, x.Bytes, c.want)
	}
}

// TestFragmentationHeaps: outside's fragment.c in its arenas mode
// (two threads, an arena each: one frees 15 of every 16 of its 40000
// blocks of 512 B, the other keeps its 10000) split at its end by heap,
// with each heap's read-write bytes (from the maps written at exit) for
// its resident ones: the holes thread's heap is mostly free, the other's
// mostly in use. Planted, a maps record that names all memory [heap]
// puts every block in the main arena: both heaps read all free.
func TestFragmentationHeaps(t *testing.T) {
	recs := t.TempDir()
	cmd := exec.Command(prog(t, "../../testdata/cprogs/fragment.c"), "arenas")
	cmd.Env = Env(os.Environ(), lib(t), recs, 1)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("fragment arenas: %v\n%s", err, out)
	}
	ims, err := readDir(recs)
	if err != nil || len(ims) != 1 || len(ims[0].maps) == 0 {
		t.Fatalf("records: %v, %d images", err, len(ims))
	}
	w := heapsWalk(ims[0])
	var worst int64
	split := func() (holes, kept schema.SitesHeap) {
		t.Helper()
		s, _, err := Analyze(Options{Dir: recs, PID: cmd.Process.Pid, Walks: []Walk{w}})
		if err != nil {
			t.Fatal(err)
		}
		f := s.Fragmentation
		if f == nil || len(f.Heaps) != 3 || f.Heaps[0].Heap != "[heap]" {
			t.Fatalf("fragmentation %+v: want [heap] and the two threads' heaps", f)
		}
		for _, h := range f.Heaps {
			t.Logf("heap %s: resident %d in use %d (%.1f %% free)", h.Heap, h.ResidentBytes, h.InUseBytes, h.FreeResidentPct)
		}
		worst = f.MaxHeapFreeResidentBytes
		// The holes thread's heap has grown the most.
		return f.Heaps[1], f.Heaps[2]
	}
	holes, kept := split()
	if holes.InUseBytes != 2500*512 || holes.FreeResidentPct < 80 || kept.InUseBytes != 10000*512 || kept.FreeResidentPct > 30 {
		t.Errorf("holes thread's heap %+v, kept thread's %+v: want 1280000 B in use and above 80 %% free, 5120000 B and below 30 %%", holes, kept)
	}
	if worst != holes.FreeResidentBytes {
		t.Errorf("the worst heap's free but resident bytes %d, want the holes thread's %d", worst, holes.FreeResidentBytes)
	}
	// A walk that saw less of the kept thread's heap resident than its
	// blocks in use (pages never written): in use stays the sites'
	// figure, free but resident 0. (It read the resident bytes as in
	// use: 1 MiB of the 5120000 B.)
	heaps := slices.Clone(w.Heaps)
	for i := range w.Heaps {
		if fmt.Sprintf("%#x", w.Heaps[i].Start) == kept.Heap {
			w.Heaps[i].ResidentBytes = 1 << 20
		}
	}
	_, kept1 := split()
	if kept1.InUseBytes != 10000*512 || kept1.FreeResidentBytes != 0 || kept1.ResidentBytes != 1<<20 {
		t.Errorf("kept thread's heap with 1 MiB resident: %+v; want 5120000 B in use, 0 free but resident", kept1)
	}
	w.Heaps = heaps
	// The plant: a last maps record whose [heap] spans all memory.
	var rec bytes.Buffer
	text := "0-7fffffffffff rw-p 00000000 00:00 0 [heap]\n"
	rec.WriteByte('M')
	binary.Write(&rec, binary.LittleEndian, uint64(len(text)))
	rec.WriteString(text)
	f, err := os.OpenFile(ims[0].path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(rec.Bytes()); err != nil {
		t.Fatal(err)
	}
	f.Close()
	holes, kept = split()
	if holes.InUseBytes != 0 || kept.InUseBytes != 0 || kept.FreeResidentPct != 100 {
		t.Errorf("planted: holes thread's heap %+v, kept thread's %+v: want nothing in use, all free", holes, kept)
	}
}

// TestFragmentationSampled: fragment.c's arenas mode at a sampled rate
// (16 KiB: 78 and 312 samples' worth in the two threads' heaps). Each
// heap's in use is an estimate with its standard error: the estimate is
// within five true standard errors of the exact figure (1280000 B in
// the holes thread's heap, 5120000 in the kept thread's; for blocks of
// 512 B the true one is about √(exact × rate)), and the error reported
// is within a factor of two of the true one. The main arena's heap,
// where no block in use was sampled, has one rate's worth, not 0: its
// split (read as 100 % free before) cannot be told at the rate. At rate
// 1 there is no error. (Judged by the reported error instead, a heap
// with few samples fails now and then: at 64 KiB, 8 samples of 19.5
// expected, about one run in 250.)
func TestFragmentationSampled(t *testing.T) {
	const rate = 16 << 10
	for _, r := range []int64{1, rate} {
		recs := t.TempDir()
		cmd := exec.Command(prog(t, "../../testdata/cprogs/fragment.c"), "arenas")
		cmd.Env = Env(os.Environ(), lib(t), recs, r)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("fragment arenas: %v\n%s", err, out)
		}
		ims, err := readDir(recs)
		if err != nil || len(ims) != 1 || len(ims[0].maps) == 0 {
			t.Fatalf("records: %v, %d images", err, len(ims))
		}
		s, _, err := Analyze(Options{Dir: recs, PID: cmd.Process.Pid, Walks: []Walk{heapsWalk(ims[0])}})
		if err != nil {
			t.Fatal(err)
		}
		f := s.Fragmentation
		if f == nil || len(f.Heaps) != 3 || f.Heaps[0].Heap != "[heap]" {
			t.Fatalf("rate %d: fragmentation %+v: want [heap] and the two threads' heaps", r, f)
		}
		for _, h := range f.Heaps {
			t.Logf("rate %d: heap %s: resident %d in use %d ± %d", r, h.Heap, h.ResidentBytes, h.InUseBytes, h.InUseSEBytes)
		}
		if r == 1 {
			for _, h := range f.Heaps {
				if h.InUseSEBytes != 0 {
					t.Errorf("rate 1: heap %s: standard error %d, want 0 (exact)", h.Heap, h.InUseSEBytes)
				}
			}
			if f.InUseSEBytes != 0 {
				t.Errorf("rate 1: all: standard error %d, want 0", f.InUseSEBytes)
			}
			continue
		}
		// The main arena's 8800 B in use are sampled with chance 0.42.
		if main := f.Heaps[0]; main.InUseBytes == 0 && main.InUseSEBytes != rate {
			t.Errorf("heap [heap] with no block sampled: standard error %d, want the rate %d", main.InUseSEBytes, rate)
		}
		if se := (estimate{}).se(rate); se != rate {
			t.Errorf("no sample: standard error %g, want the rate %d", se, rate)
		}
		for _, c := range []struct {
			h     schema.SitesHeap
			exact int64
		}{{f.Heaps[1], 2500 * 512}, {f.Heaps[2], 10000 * 512}} {
			se := math.Sqrt(float64(c.exact) * rate)
			if got := float64(c.h.InUseSEBytes); got < se/2 || got > 2*se {
				t.Errorf("heap %s: standard error %d, want within a factor of two of %.0f", c.h.Heap, c.h.InUseSEBytes, se)
			}
			if d := math.Abs(float64(c.h.InUseBytes - c.exact)); d > 5*se {
				t.Errorf("heap %s: %d in use, want within five standard errors (%.0f) of %d", c.h.Heap, c.h.InUseBytes, se, c.exact)
			}
		}
		if f.InUseSEBytes < f.Heaps[2].InUseSEBytes {
			t.Errorf("all: standard error %d, below the kept thread's heap's %d", f.InUseSEBytes, f.Heaps[2].InUseSEBytes)
		}
	}
}

// heapsWalk is a walk at the end of im that finds its brk heap and its
// other arenas' heaps all resident, from the maps it wrote at exit.
func heapsWalk(im *image) Walk {
	w := Walk{At: "end", MonoNs: ^uint64(0) >> 1}
	for _, m := range parseMaps(im.maps[len(im.maps)-1]) {
		switch {
		case m.path == "[heap]":
			w.BrkBytes += int64(m.end - m.start)
		case m.path == "" && m.perms == "rw-p" && m.start%heapMaxBytes == 0:
			w.Heaps = append(w.Heaps, WalkHeap{Start: m.start, ResidentBytes: int64(m.end - m.start)})
			w.ArenasBytes += int64(m.end - m.start)
		}
	}
	return w
}

// TestReplayCuts: replay's cuts on made-up events at rate 1. A munmap
// covering glibc's own mapped chunk (kindChunk: free ends it) leaves it;
// a munmap off a page boundary or of no bytes cuts nothing (the kernel
// refuses it); one range across two mappings shortens both; a new
// mapping recorded over a sampled one ends what it covers.
func TestReplayCuts(t *testing.T) {
	pg := pageSize
	const chunk, mapA, mapB = 0x100000, 0x200000, 0x300000
	alloc := func(seq uint64, kind uint8, addr, size uint64) event {
		return event{seq: seq, kind: kind, addr: addr, size: size, stack: 2 + uint64(kind)}
	}
	unmap := func(seq, addr, n uint64) event {
		return event{seq: seq, free: true, flags: flagMunmap, addr: addr, size: n}
	}
	im := &image{rate: 1, events: []event{
		alloc(1, kindChunk, chunk+16, 64*pg),
		alloc(2, kindMmap, mapA, 16*pg),
		alloc(3, kindMmap, mapA+16*pg, 16*pg), // right above mapA
		unmap(4, chunk, 128*pg),               // glibc's chunk: not the program's to unmap
		unmap(5, mapA+pg+1, pg),               // off a page: EINVAL
		unmap(6, mapA, 0),                     // no bytes: EINVAL
		unmap(7, mapA+12*pg, 8*pg-100),        // across both: 4 pages of each, the length rounded up
		alloc(8, kindMmap, mapA+30*pg, 4*pg),  // over mapA+16's last 2 pages and beyond
	}}
	r := replay(im, nil)
	want := float64((64 + 12 + (16 - 4 - 2) + 4) * pg)
	if r.exit != want || r.exitObj != 4 {
		t.Errorf("exit %.0f bytes in %.0f blocks, want %.0f in 4", r.exit, r.exitObj, want)
	}
	if a := r.byStack[2+kindMmap]; a == nil || a.allocBytes != float64(36*pg) || a.allocObj != 3 || a.exitBytes != float64((12+10+4)*pg) {
		t.Errorf("mappings' stack %+v: want 36 pages allocated in 3, 26 pages at exit", a)
	}
	// Planted, start-address matching misses the cut across both.
	munmapStartOnly = true
	defer func() { munmapStartOnly = false }()
	if r := replay(im, nil); r.exit != float64((64+16+14+4)*pg) {
		t.Errorf("planted: exit %.0f, want %d", r.exit, (64+16+14+4)*pg)
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

// TestSiteShowsHeaviestStack: testdata/callers.c reaches one site from two
// callers, a light one (8 blocks) and a heavy one (24). The site's stack
// in the report is the heavy caller's in every run; taken from the first
// stack a map gives, it was either, run to run.
func TestSiteShowsHeaviestStack(t *testing.T) {
	p := prog(t, "callers.c")
	for run := 0; run < 4; run++ {
		s, _, _ := record(t, 1, p)
		x := site(s.TopExit, "the_site")
		if x == nil || x.Bytes != 32*64<<10 {
			t.Fatalf("exit sites %+v: want the_site with 32 blocks of 64 KiB", s.TopExit)
		}
		if len(x.Stack) < 2 || x.Stack[1] != "heavy_caller" {
			t.Errorf("run %d: the_site's stack %v, want heavy_caller's", run, x.Stack)
		}
	}
}

// TestSiteShowsStackByFigure: testdata/wrapper.c's xmalloc is reached
// by keeper (8 MiB kept) and churn (64 MiB allocated, each block freed at
// once). Each table shows the wrapper's stack with the most of its own
// figure and that stack's share: keeper's in the peak table (8 of 9 MiB),
// keeper's alone at exit, churn's among the temporaries. Shown by bytes
// allocated, the peak table named churn, whose blocks were freed.
func TestSiteShowsStackByFigure(t *testing.T) {
	p := prog(t, "wrapper.c")
	s, _, _ := record(t, 1, p)
	check := func(table string, rows []schema.Site, caller string, stacks int, share float64) {
		t.Helper()
		x := site(rows, "xmalloc")
		if x == nil {
			t.Fatalf("%s: no xmalloc in %+v", table, rows)
		}
		if len(x.Stack) < 2 || x.Stack[1] != caller || x.Stacks != stacks || math.Abs(x.StackSharePct-share) > 0.1 {
			t.Errorf("%s: xmalloc's stack %v, %d stacks, %.1f %%; want %s's, %d, %.1f %%", table, x.Stack, x.Stacks, x.StackSharePct, caller, stacks, share)
		}
	}
	check("peak", s.TopPeak, "keeper", 2, 100*8/9.0)
	check("exit", s.TopExit, "keeper", 0, 0)
	check("temporary", s.TopTemporary, "churn", 0, 0)
}

// TestPeakWithMappings: testdata/mappeak.c holds a mapping of 32 MiB
// while its heap blocks peak at 1 MiB. At the default rate the headline
// peak is the library's count of heap blocks plus the mappings'
// estimate; where no sample came while the count was near its peak (most
// runs here), the mapping was left out, and the peak read 1 MiB.
func TestPeakWithMappings(t *testing.T) {
	p := prog(t, "mappeak.c")
	exact, _, _ := record(t, 1, p)
	const want = 32<<20 + 256*4096
	if exact.PeakInUseBytes != want || exact.PeakMappedBytes != 32<<20 {
		t.Fatalf("rate 1: peak %d, %d of it mapped; want %d, %d", exact.PeakInUseBytes, exact.PeakMappedBytes, want, 32<<20)
	}
	// The image's own row says the same (the largest image's figure,
	// where it is not the headline's, is this one).
	if len(exact.Processes) != 1 || exact.Processes[0].PeakMappedBytes != 32<<20 {
		t.Errorf("rate 1: images %+v, want one with 32 MiB of its peak mapped", exact.Processes)
	}
	for run := 0; run < 3; run++ {
		s, _, _ := record(t, DefaultRate, p)
		t.Logf("default rate: peak %d (%s), %d of it mapped, against %d", s.PeakInUseBytes, s.PeakSource, s.PeakMappedBytes, want)
		if math.Abs(float64(s.PeakInUseBytes)/want-1) > 0.05 {
			t.Errorf("default rate: peak %d (%s), want %d ± 5 %%", s.PeakInUseBytes, s.PeakSource, want)
		}
		if math.Abs(float64(s.PeakMappedBytes)/(32<<20)-1) > 0.05 {
			t.Errorf("default rate: %d of the peak mapped, want 32 MiB ± 5 %%", s.PeakMappedBytes)
		}
	}
}

// TestPeakWithLateMappings: testdata/latemap.c's heap peaks at 8 MiB and
// is freed before its mappings of 32 MiB are made. At the default rate
// the peak is where the count and the mappings' estimate together are
// largest: taken at the count's own peak it read 8261632 B, below the
// 32 MiB in use at exit.
func TestPeakWithLateMappings(t *testing.T) {
	p := prog(t, "latemap.c")
	exact, _, _ := record(t, 1, p)
	const want = 32 << 20
	if exact.PeakInUseBytes != want {
		t.Fatalf("rate 1: peak %d, want %d", exact.PeakInUseBytes, want)
	}
	for run := 0; run < 3; run++ {
		s, _, _ := record(t, DefaultRate, p)
		t.Logf("default rate: peak %d (%s) at %.1f ms, exit %d", s.PeakInUseBytes, s.PeakSource, s.PeakAtMs, s.ExitInUseBytes)
		if s.PeakSource != "counted" || math.Abs(float64(s.PeakInUseBytes)/want-1) > 0.05 {
			t.Errorf("default rate: peak %d (%s), want counted and %d ± 5 %%", s.PeakInUseBytes, s.PeakSource, want)
		}
		if s.PeakInUseBytes < s.ExitInUseBytes {
			t.Errorf("default rate: peak %d below the %d in use at exit", s.PeakInUseBytes, s.ExitInUseBytes)
		}
	}
}

// TestSmallHeapPeak: testdata/smallheap.c holds 64000 bytes to its exit,
// less than a thread's count moves by before it is published. The
// count's peak within the run is then the thread's first publish, its
// first block; the end, where every thread's count is published, is a
// moment of the run too, and the peak is at least what is in use there.
// Before the end was taken as a candidate the peak read 4008 bytes
// against 64128 at exit, and bash and env under `probe exec --sites`
// showed peaks of 24 B beside tens of KiB at exit.
func TestSmallHeapPeak(t *testing.T) {
	p := prog(t, "smallheap.c")
	exact, _, _ := record(t, 1, p)
	if exact.PeakInUseBytes < 64000 || exact.PeakInUseBytes > 64000+1024 {
		t.Fatalf("rate 1: peak %d, want 64000 and at most 1024 more", exact.PeakInUseBytes)
	}
	for run := 0; run < 3; run++ {
		s, _, _ := record(t, DefaultRate, p)
		t.Logf("default rate: peak %d (%s) at %.1f ms, exit %d", s.PeakInUseBytes, s.PeakSource, s.PeakAtMs, s.ExitInUseBytes)
		if s.PeakInUseBytes < s.ExitInUseBytes {
			t.Errorf("default rate: peak %d below the %d in use at exit", s.PeakInUseBytes, s.ExitInUseBytes)
		}
		if math.Abs(float64(s.PeakInUseBytes)/float64(exact.PeakInUseBytes)-1) > 0.05 {
			t.Errorf("default rate: peak %d, want rate 1's %d ± 5 %%", s.PeakInUseBytes, exact.PeakInUseBytes)
		}
	}
}

// TestFreeOnlyThread: testdata/freeonly.c's thread frees 1000 blocks and
// exits, allocating nothing, at a rate (1 TiB) where no block is
// sampled: a sampled block's free would give the thread a buffer (as
// it did in one run in three at the default rate). Its frees are fewer
// bytes than a thread's count is published by: they reach the count only
// because the thread's first count makes it a buffer, whose end at the
// thread's exit publishes the rest. Without that the exit read twice the
// 100000 bytes kept (208208 B).
func TestFreeOnlyThread(t *testing.T) {
	const kept = 1000 * 100
	// At rate 1, the kept blocks and glibc's own for the thread (its
	// TLS: a few hundred bytes).
	exact, _, _ := record(t, 1, prog(t, "freeonly.c"))
	want := exact.ExitInUseBytes
	if want < kept || want > kept+1024 {
		t.Fatalf("rate 1: exit %d, want %d and at most 1024 more", want, kept)
	}
	s, _, _ := record(t, 1<<40, prog(t, "freeonly.c"))
	t.Logf("rate 1 TiB: exit %d (%s) against %d", s.ExitInUseBytes, s.PeakSource, want)
	// The count takes usable sizes (104 bytes for 100 asked) where no
	// sample gives the ratio of asked to usable bytes: +4 %.
	if s.PeakSource != "counted" || s.ExitInUseBytes < want || s.ExitInUseBytes > want*106/100 {
		t.Errorf("rate 1 TiB: exit %d (%s), want counted and within [%d, %d]", s.ExitInUseBytes, s.PeakSource, want, want*106/100)
	}
}

// TestUnwindersAgree: the library's own unwinder (the rules of
// .eh_frame, MEMPROBE_SITES_UNWIND=cfi: no fallback, a stack it cannot
// walk is recorded empty) names every allocation's stack as libunwind
// does (libgcc's unwinder where libunwind is missing), at rate 1, on
// programs with frames by rbp (-fno-omit-frame-pointer, -O0) and by rsp
// (-O2 -fomit-frame-pointer), C++, threads (glibc's pthread_create and
// clone3), a library dlopened and closed, and a return address past its
// function's end (noreturn.c).
func TestUnwindersAgree(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the library's own unwinder is x86-64's")
	}
	plugin := filepath.Join(t.TempDir(), "libplugin.so")
	if out, err := exec.Command("gcc", "-O2", "-g", "-shared", "-fPIC", "-o", plugin, filepath.Join("testdata", "plugin.c")).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	for _, argv := range [][]string{
		{prog(t, "planted.c")},
		{prog(t, "callers.c", "-O0")},
		{prog(t, "callers.c", "-O2", "-fomit-frame-pointer")},
		{prog(t, "cxx.cc", "-O2", "-fomit-frame-pointer")},
		{prog(t, "stress.c", "-O2", "-fomit-frame-pointer"), "3000", "3"},
		{prog(t, "dlopen.c", "-ldl"), plugin},
		{prog(t, "noreturn.c", "-O2")},
	} {
		stacks := func(unwind string) map[string][2]int64 {
			t.Setenv("MEMPROBE_SITES_UNWIND", unwind)
			s, _, _ := record(t, 1, argv...)
			out := map[string][2]int64{}
			for _, pf := range s.Profiles {
				if pf.Kind != schema.SitesAlloc {
					continue
				}
				p, err := readProfile(pf.Path)
				if err != nil {
					t.Fatal(err)
				}
				for _, smp := range p.Sample {
					var fns []string
					for _, loc := range smp.Location {
						for _, l := range loc.Line {
							fns = append(fns, l.Function.Name)
						}
					}
					k := strings.Join(fns, " < ")
					v := out[k]
					out[k] = [2]int64{v[0] + smp.Value[0], v[1] + smp.Value[1]}
				}
			}
			return out
		}
		own, ref := stacks("cfi"), stacks("libunwind")
		name := filepath.Base(argv[0])
		if len(ref) == 0 {
			t.Errorf("%s: no stacks by libunwind", name)
		}
		for k, v := range ref {
			if own[k] != v {
				t.Errorf("%s: stack %q: %v (objects, bytes) by the rules, %v by libunwind", name, k, own[k], v)
			}
		}
		for k, v := range own {
			if _, ok := ref[k]; !ok {
				t.Errorf("%s: stack %q (%v) by the rules only", name, k, v)
			}
		}
	}
}

// TestReservations: testdata/reserve.c reserves 256 MiB with no access,
// as the JVM and V8 reserve their heaps, commits 16 MiB of it read-write
// (MAP_FIXED over the reservation) and gives 8 MiB of that back
// (MAP_FIXED PROT_NONE). In use: 16 MiB at the peak, 8 at exit, all
// commit_site's; the reservations are no allocation. The 64 KiB
// uncommits are seldom sampled at the default rate: without the library's
// record of an unsampled MAP_FIXED, exit read 16187392 B. Planted, the
// reading of record version 3 (a PROT_NONE mapping in use) reads 256 MiB
// at the peak and at exit: the JVM's 1.9 GiB "in use" beside a peak RSS
// of 243 MiB.
func TestReservations(t *testing.T) {
	const MiB = 1 << 20
	p := prog(t, "reserve.c")
	for _, tc := range []struct {
		rate            int64
		planted         bool
		peak, exit, tol float64
	}{
		{1, false, 16 * MiB, 8 * MiB, 0},
		{DefaultRate, false, 16 * MiB, 8 * MiB, 0.01},
		{1, true, 256 * MiB, 256 * MiB, 0},
	} {
		reservesInUse = tc.planted
		s, warns, _ := record(t, tc.rate, p)
		reservesInUse = false
		if len(warns) > 0 {
			t.Errorf("rate %d: warnings: %q", tc.rate, warns)
		}
		t.Logf("rate %d planted %v: peak %d (%s) exit %d, allocated %d B in %d", tc.rate, tc.planted, s.PeakInUseBytes, s.PeakSource, s.ExitInUseBytes, s.AllocBytes, s.AllocObjects)
		off := func(got int64, want float64) bool { return math.Abs(float64(got)-want) > tc.tol*want }
		if off(s.PeakInUseBytes, tc.peak) || off(s.ExitInUseBytes, tc.exit) {
			t.Errorf("rate %d planted %v: peak %d exit %d, want %.0f and %.0f (± %.0f %%)", tc.rate, tc.planted, s.PeakInUseBytes, s.ExitInUseBytes, tc.peak, tc.exit, 100*tc.tol)
		}
		if tc.planted {
			continue
		}
		if x := site(s.TopPeak, "commit_site"); x == nil || off(x.Bytes, 16*MiB) || !x.Mapped {
			t.Errorf("rate %d: commit_site at the peak %+v, want 16 MiB, mapped", tc.rate, x)
		}
		if off(s.PeakMappedBytes, 16*MiB) {
			t.Errorf("rate %d: %d bytes of the peak mapped, want all 16 MiB", tc.rate, s.PeakMappedBytes)
		}
		if x := site(s.TopExit, "commit_site"); x == nil || off(x.Bytes, 8*MiB) {
			t.Errorf("rate %d: commit_site at exit %+v, want 8 MiB", tc.rate, x)
		}
		for _, fn := range []string{"reserve_site", "uncommit_site"} {
			if site(s.TopPeak, fn) != nil || site(s.TopExit, fn) != nil {
				t.Errorf("rate %d: %s in use", tc.rate, fn)
			}
			if b := leafSum(t, s, schema.SitesAlloc, fn, 1); b != 0 {
				t.Errorf("rate %d: %s allocated %d bytes, want none (address space)", tc.rate, fn, b)
			}
		}
		if s.AllocBytes >= 24*MiB {
			t.Errorf("rate %d: allocated %d bytes, want the 16 MiB committed and the C library's blocks, no reservation", tc.rate, s.AllocBytes)
		}
	}
}

// TestUnexplainedSiteBounded: a sampled mapping stands for 1/p of its
// bytes, so a site's scaled share of the unexplained memory can pass the
// memory there (node's V8 pages of 256 KiB, each sampled with chance
// 0.39 at the default rate: 215.4 MiB of 204.3). It is bounded by it: one
// 256 KiB mapping over a 256 KiB unexplained range read 650 KiB.
func TestUnexplainedSiteBounded(t *testing.T) {
	const at, size = 0x10000000, 256 << 10
	im := &image{rate: DefaultRate, stacks: map[uint64][]uint64{7: {0x1234}},
		events: []event{{kind: kindMmap, addr: at, size: size, stack: 7, tNs: 1}}}
	r := &replayed{im: im, kept: im.events, pieces: []piece{{alloc: 0, start: at, end: at + size, from: 0, to: -1}}}
	w := Walk{At: "peak", MonoNs: 10, Unexplained: []WalkRange{{Start: at, End: at + size, ResidentBytes: size}}}
	u := unexplained(newBuilder(LibName, DefaultRate), r, nil, []Walk{w})
	if u == nil || len(u.Sites) != 1 {
		t.Fatalf("join %+v: want one site", u)
	}
	if s := u.Sites[0]; s.ResidentBytes != size || s.ReservedBytes != size || u.MappedBytes != size {
		t.Errorf("site %+v, mapped %d: want %d resident, all of the range", s, u.MappedBytes, size)
	}
}

// TestUnexplainedDuringWalk: smaps is read over the walk's time, and a
// mapping made while it ran (bigblocks' fourth 8 MiB, under -race) is in
// the ranges it left unexplained: it is joined; one unmapped before the
// walk began, at the same address, is not. Planted (the join at the
// walk's start alone): none of the range mapped (bigblocks: 20.5 of
// 27.3 MiB).
func TestUnexplainedDuringWalk(t *testing.T) {
	const at, size = 0x10000000, 8 << 20
	im := &image{rate: 1, stacks: map[uint64][]uint64{7: {0x1234}, 8: {0x5678}},
		events: []event{
			{kind: kindMmap, addr: at, size: size, stack: 8, tNs: 1}, {addr: at, size: size, tNs: 5}, // its munmap
			{kind: kindMmap, addr: at, size: size, stack: 7, tNs: 15}}}
	r := &replayed{im: im, kept: im.events, pieces: []piece{{alloc: 0, start: at, end: at + size, from: 0, to: 1}, {alloc: 2, start: at, end: at + size, from: 2, to: -1}}}
	w := Walk{At: "peak", MonoNs: 10, Ns: 20, Unexplained: []WalkRange{{Start: at, End: at + size, ResidentBytes: size}}}
	b := newBuilder(LibName, 1)
	u := unexplained(b, r, nil, []Walk{w})
	if u == nil || len(u.Sites) != 1 || u.MappedBytes != size || u.Sites[0].Mappings != 1 || u.Sites[0].Function != b.name(nil, im.stacks[7]).siteFrame().fn {
		t.Fatalf("join %+v: want the mapping made during the walk, alone, all %d B of the range", u, size)
	}
}

// TestUnexplainedHeapBlocks: glibc's large blocks (kindChunk) in use at
// the walk whose mappings the walk left unexplained (numpy's arrays,
// before the chunk rule followed a header split from its block by
// madvise) are joined with them by address, as the sites' tables count
// them: the table read 200 MiB at _multiarray_umath+0xde0f0 while the
// join found 15.5 KiB. A block freed before the walk and one outside the
// ranges are not joined.
func TestUnexplainedHeapBlocks(t *testing.T) {
	const at, size = 0x10000000, 20 << 20
	im := &image{rate: 1, stacks: map[uint64][]uint64{7: {0x1234}, 8: {0x5678}},
		events: []event{
			{seq: 1, kind: kindChunk, addr: at + 16, size: size, stack: 7, tNs: 1},
			{seq: 2, kind: kindChunk, addr: at + size + 4096 + 16, size: size, stack: 7, tNs: 2},
			{seq: 3, kind: kindChunk, addr: at + 2*(size+4096) + 16, size: size, stack: 8, tNs: 3},
			{seq: 4, free: true, addr: at + 2*(size+4096) + 16, tNs: 4}, // freed before the walk
			{seq: 5, kind: kindHeap, addr: 0x5000, size: 1 << 20, stack: 8, tNs: 5},
		}}
	w := Walk{At: "peak", MonoNs: 10, Ns: 1, Unexplained: []WalkRange{
		{Start: at + 4096, End: at + size + 4096, ResidentBytes: size},
		{Start: at + size + 2*4096, End: at + 2*size + 2*4096, ResidentBytes: size},
		{Start: at + 2*(size+4096) + 4096, End: at + 3*size + 3*4096, ResidentBytes: size},
	}}
	r := replay(im, useAtWalks(0, []Walk{w}))
	b := newBuilder(LibName, 1)
	u := unexplained(b, r, nil, []Walk{w})
	if u == nil || len(u.Sites) != 1 {
		t.Fatalf("join %+v: want one site, the two blocks in use", u)
	}
	s := u.Sites[0]
	// Each block covers its range but for the header's page less 16 bytes.
	if want := int64(2 * (size - 4080)); s.Blocks != 2 || s.HeapBytes != want || s.ResidentBytes != want || s.ReservedBytes != want || u.HeapBytes != want || u.MappedBytes != 0 ||
		s.Function != b.name(nil, im.stacks[7]).siteFrame().fn {
		t.Errorf("site %+v, heap %d, mapped %d: want stack 7's 2 blocks, %d B", s, u.HeapBytes, u.MappedBytes, want)
	}
}

// TestCommits: testdata/commit.c reserves 64 MiB and commits by mprotect,
// as V8 does: 8 MiB read-write, 4 of them flipped to executable and back
// (a JIT's code pages), 4 decommitted, 2 of those recommitted; and a
// guard page in a mapping of its own, made inaccessible and accessible
// again. Every mprotect is recorded, so at any rate: 24 MiB at the peak,
// 22 at exit; the flips are no allocation. Planted, an mprotect read as
// a new mapping: flip_site allocates 8 MiB and holds commit_site's 4 at
// exit. Before mprotect was wrapped the peak read 16 MiB, map_site's.
func TestCommits(t *testing.T) {
	const MiB = 1 << 20
	p := prog(t, "commit.c")
	for _, tc := range []struct {
		rate    int64
		planted bool
	}{{1, false}, {DefaultRate, false}, {1, true}} {
		protectIsMapping = tc.planted
		s, warns, _ := record(t, tc.rate, p)
		protectIsMapping = false
		if len(warns) > 0 {
			t.Errorf("rate %d: warnings: %q", tc.rate, warns)
		}
		t.Logf("rate %d planted %v: peak %d (%s, %d mapped) exit %d", tc.rate, tc.planted, s.PeakInUseBytes, s.PeakSource, s.PeakMappedBytes, s.ExitInUseBytes)
		var bad []string
		near := func(what string, got int64, want float64) {
			if math.Abs(float64(got)-want) > 0.001*want+0.5 {
				bad = append(bad, fmt.Sprintf("%s %d, want %.0f", what, got, want))
			}
		}
		bytes := func(sites []schema.Site, fn string) int64 {
			if x := site(sites, fn); x != nil {
				return x.Bytes
			}
			return 0
		}
		near("peak", s.PeakInUseBytes, 24*MiB)
		near("exit", s.ExitInUseBytes, 22*MiB)
		near("commit_site at the peak", bytes(s.TopPeak, "commit_site"), 8*MiB)
		near("commit_site at exit", bytes(s.TopExit, "commit_site"), 4*MiB)
		near("recommit_site at exit", bytes(s.TopExit, "recommit_site"), 2*MiB)
		near("map_site at exit", bytes(s.TopExit, "map_site"), 16*MiB-4096)
		near("guard_site at exit", bytes(s.TopExit, "guard_site"), 4096)
		for _, fn := range []string{"flip_site", "decommit_site", "reserve_site"} {
			if b := bytes(s.TopExit, fn) + bytes(s.TopPeak, fn) + leafSum(t, s, schema.SitesAlloc, fn, 1); b != 0 {
				bad = append(bad, fmt.Sprintf("%s: %d bytes in use or allocated, want none", fn, b))
			}
		}
		if x := site(s.TopPeak, "commit_site"); x == nil || !x.Mapped {
			bad = append(bad, "commit_site not marked as mapped")
		}
		// Allocated: map_site's 16 MiB, the commits (8 MiB, 2 MiB and
		// guard_site's page made accessible again) and the C library's
		// few blocks; never less than the peak holds. Without the
		// commits it read 16 MiB beside a peak of 24.
		if lo := int64(26*MiB + 4096); s.AllocBytes < lo || s.AllocBytes > lo+64<<10 || s.AllocBytes < s.PeakInUseBytes {
			bad = append(bad, fmt.Sprintf("allocated %d bytes, want %d and at most 64 KiB of the C library's, no less than the peak %d", s.AllocBytes, lo, s.PeakInUseBytes))
		}
		if tc.planted {
			t.Logf("planted: %q", bad)
		}
		if tc.planted != (len(bad) > 0) {
			t.Errorf("rate %d planted %v: %q", tc.rate, tc.planted, bad)
		}
	}
}

// TestObjectsBounded: one sampled block of 35 bytes at the default rate
// stands for 14,980 blocks, more than the 958 the library counted
// allocated (bash, at its peak). The blocks in use are bounded by them.
func TestObjectsBounded(t *testing.T) {
	dir := t.TempDir()
	r := newRecs(4242, DefaultRate)
	r.stack(7, 0x1000)
	r.alloc(kindHeap, 1, 0xa0, 35, 7)
	r.b = append(r.b, 'T')
	r.u64(958, 81900)
	if err := os.WriteFile(filepath.Join(dir, "sites.4242.0.bin"), r.b, 0o644); err != nil {
		t.Fatal(err)
	}
	s, _, err := Analyze(Options{Dir: dir, PID: 4242})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("peak %d B in %d blocks, exit %d in %d; allocated %d", s.PeakInUseBytes, s.PeakInUseObjects, s.ExitInUseBytes, s.ExitInUseObjects, s.AllocObjects)
	if s.AllocObjects != 958 || s.PeakInUseObjects != 958 || s.ExitInUseObjects != 958 {
		t.Errorf("blocks in use at the peak %d, at exit %d, allocated %d: want the 958 allocated at most", s.PeakInUseObjects, s.ExitInUseObjects, s.AllocObjects)
	}
	// So are the site's rows (rs's HashMap site read 208,444 blocks in
	// use of the 200,044 allocated).
	for _, l := range []struct {
		name  string
		sites []schema.Site
	}{{"peak", s.TopPeak}, {"exit", s.TopExit}, {"allocated", s.TopTemporary}} {
		if len(l.sites) > 0 && l.sites[0].Objects != 958 {
			t.Errorf("the site's blocks (%s) %d, want the 958 allocated at most", l.name, l.sites[0].Objects)
		}
	}
	if len(s.TopPeak) != 1 || len(s.TopExit) != 1 {
		t.Errorf("sites at the peak %d, at exit %d: want the one", len(s.TopPeak), len(s.TopExit))
	}
}

// TestPeakNotBelowExit: each thread publishes its count when it has
// moved by 128 KiB, so the count a sample records lags by up to that a
// thread, and the count's own peak within the run can be below the end's,
// where every thread has published (a JVM's 20 threads: 438.7 MiB at the
// peak, 439.7 at exit). The end is a moment of the run: here the count
// peaked at 1 MiB within the run and reads 2 MiB at the end, with 4 MiB
// mapped, and the peak read 4 MiB (the mapping's moment) against 6 at
// exit.
func TestPeakNotBelowExit(t *testing.T) {
	dir := t.TempDir()
	r := newRecs(4343, DefaultRate)
	r.stack(7, 0x1000)
	r.alloc(kindHeap, 1, 0xa0, 100, 7)
	r.alloc(kindMmap, 2, 0x7f0000000000, 4<<20, 7)
	r.b = append(r.b, 'P')
	r.u64(1<<20, 1, 10, 2<<20)
	r.b = append(r.b, 'E', 0)
	r.u64(3, 30000) // ended at 30 µs
	if err := os.WriteFile(filepath.Join(dir, "sites.4343.0.bin"), r.b, 0o644); err != nil {
		t.Fatal(err)
	}
	s, _, err := Analyze(Options{Dir: dir, PID: 4343})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("peak %d (%s) at %.3f ms, exit %d", s.PeakInUseBytes, s.PeakSource, s.PeakAtMs, s.ExitInUseBytes)
	if s.PeakSource != "counted" || s.PeakInUseBytes < s.ExitInUseBytes || s.PeakAtMs != 0.03 {
		t.Errorf("peak %d (%s) at %g ms, %d in use at exit: want the end's, at 0.03 ms", s.PeakInUseBytes, s.PeakSource, s.PeakAtMs, s.ExitInUseBytes)
	}
}
