package outside

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"memprobe/outside/sites/sitestest"
	"memprobe/schema"
)

// sitesLib builds the allocation-site library and points Exec at it.
func sitesLib(t *testing.T) {
	t.Helper()
	sitestest.Lib(t)
}

// TestExecSitesFragmentation: a program that frees 15 of every 16 blocks
// of a full main arena keeps its pages resident: the arena's resident
// bytes are mostly free. The same program freeing the top of its heap
// instead gives the pages back, and shows little.
func TestExecSitesFragmentation(t *testing.T) {
	sitesLib(t)
	free := map[string]float64{}
	for _, mode := range []string{"holes", "top"} {
		o := slowWalks
		o.OutDir = t.TempDir()
		o.Sites = SitesOptions{Enabled: true, Rate: 1}
		h := execHeld(t, o, cleanEnv(), cprog(t, "fragment"), mode)
		h.waitLine(t, "ready")
		r := h.release(t)
		st := r.Process.Sites
		if st == nil {
			t.Fatalf("%s: no sites; warnings %q", mode, r.Warnings)
		}
		// 10000 blocks of 512 B are in use at the walk, in either mode.
		if st.ExitInUseBytes < 10000*512 || st.ExitInUseBytes > 10000*512+64<<10 {
			t.Errorf("%s: %d bytes in use at exit, want 5120000 and the C library's few", mode, st.ExitInUseBytes)
		}
		f := st.Fragmentation
		if f == nil {
			t.Fatalf("%s: no fragmentation; warnings %q", mode, r.Warnings)
		}
		if f.InUseBytes < 10000*512 || f.InUseBytes > f.ArenaResidentBytes {
			t.Errorf("%s: %+v: in use %d, want at least 5120000 and at most the resident bytes", mode, f, f.InUseBytes)
		}
		t.Logf("%s: arenas %+v", mode, *f)
		free[mode] = f.FreeResidentPct
		if len(r.Process.Files) < 3 {
			t.Errorf("%s: files %q, want the three profiles", mode, r.Process.Files)
		}
	}
	if free["holes"] < 80 || free["top"] > 50 {
		t.Errorf("free but resident: holes %.1f %%, top %.1f %%; want above 80 and below 50", free["holes"], free["top"])
	}
}

// TestExecSitesUnexplained: four mappings of 8 MiB a program made itself
// (bigblocks.c's map_block, written through) have no shape the
// reconciliation knows: unexplained. --sites, which recorded them, finds
// them there, at rate 1 and at the default rate (an 8 MiB mapping is
// sampled with probability 1 − e^(−16)), names their site in the report
// and in the diagnosis's unexplained line. The program maps its blocks
// only once the session's first walk is taken (its gate): that walk, at
// the loop's first tick, straddled the writing of the last block on a
// loaded machine (32 MiB less 4 KiB unexplained) and, seeing as much
// resident memory in all, stayed the peak view.
func TestExecSitesUnexplained(t *testing.T) {
	sitesLib(t)
	const size = 32 << 20
	for _, rate := range []int64{1, 0} {
		o := slowWalks
		o.OutDir = t.TempDir()
		o.Sites = SitesOptions{Enabled: true, Rate: rate}
		h := execHeld(t, o, cleanEnv(), cprog(t, "bigblocks"), "4", "8", "mmap", "gate")
		waitFor(t, "the first walk", func() bool { h.s.sched.mu.Lock(); defer h.s.sched.mu.Unlock(); return h.s.sched.walks >= 1 })
		if _, err := io.WriteString(h.stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
		h.waitLine(t, "ready")
		r := h.release(t)
		st := r.Process.Sites
		if st == nil || st.Unexplained == nil {
			t.Fatalf("rate %d: no join of the sites with the unexplained memory; sites %v, warnings %q", rate, st != nil, r.Warnings)
		}
		u := st.Unexplained
		t.Logf("rate %d: %+v", rate, *u)
		if u.At != "peak" || u.UnexplainedBytes < size || u.MappedBytes < size*95/100 || u.MappedBytes > u.UnexplainedBytes ||
			len(u.Sites) == 0 || u.Sites[0].Function != "map_block" || u.Sites[0].Mappings != 4 {
			t.Errorf("rate %d: %+v; want the peak walk's at least %d B unexplained, nearly all of it mapped by map_block in 4 mappings", rate, *u, size)
		}
		found := false
		for _, d := range r.Process.Diagnosis {
			found = found || d.Topic == "unexplained" && strings.Contains(d.Text, "--sites finds") && strings.Contains(d.Text, "map_block")
		}
		if !found {
			t.Errorf("rate %d: the diagnosis does not name map_block for the unexplained memory:\n%s", rate, render(t, r))
		}
	}
}

// TestExecSitesOwnBuffers: the allocation-site library's own mappings in
// the program (a buffer for each thread that allocates; at rate 1 the
// filter too) are claimed by the headers it writes as probe.sites, not
// left unexplained: six threads that each malloc 1 MiB have at least
// seven. (TestSitesOwnBuffers of instrument/reconcile plants a buffer between
// two of glibc's large blocks.)
func TestExecSitesOwnBuffers(t *testing.T) {
	sitesLib(t)
	o := slowWalks
	o.OutDir = t.TempDir()
	o.Sites = SitesOptions{Enabled: true, Rate: 1}
	h := execHeld(t, o, cleanEnv(), cprog(t, "threads"), "6", "1", "1024", "stdin")
	h.waitLine(t, "ready")
	r := h.release(t)
	rec := r.Process.AtPeak.Reconciliation
	own := recPart(rec, "probe.sites")
	t.Logf("probe.sites %+v; unexplained %d B of RSS %d B: %+v", own, rec.UnexplainedBytes, rec.RSSBytes, rec.UnexplainedMappings)
	if own.Count < 7 || own.Bytes < 7*4096 || own.ReservedBytes < 7*100<<10 {
		t.Errorf("probe.sites %+v: want at least 7 mappings (6 threads' buffers of over 100 KiB, the filter), a page of each resident\n%s", own, render(t, r))
	}
	if rec.UnexplainedBytes > 256<<10 {
		t.Errorf("unexplained %d B: want under 256 KiB\n%s", rec.UnexplainedBytes, render(t, r))
	}
}

// TestExecSitesFragmentationByHeap: fragment.c's arenas mode gives two
// threads an arena each: one frees 15 of every 16 of its 40000 blocks of
// 512 B, the other keeps its 10000. Split by heap, the first's heap is
// mostly free but resident, the other's mostly in use; the brk heap
// comes first. (All blocks put in the main arena, TestFragmentationHeaps
// of outside/sites, reads both heaps as all free.)
func TestExecSitesFragmentationByHeap(t *testing.T) {
	sitesLib(t)
	o := slowWalks
	o.OutDir = t.TempDir()
	o.Sites = SitesOptions{Enabled: true, Rate: 1}
	h := execHeld(t, o, cleanEnv(), cprog(t, "fragment"), "arenas")
	h.waitLine(t, "ready")
	r := h.release(t)
	st := r.Process.Sites
	if st == nil || st.Fragmentation == nil {
		t.Fatalf("no sites or no fragmentation; warnings %q", r.Warnings)
	}
	f := st.Fragmentation
	for _, x := range f.Heaps {
		t.Logf("heap %s arena %q: resident %d in use %d free %d (%.1f %%)", x.Heap, x.Arena, x.ResidentBytes, x.InUseBytes, x.FreeResidentBytes, x.FreeResidentPct)
	}
	if len(f.Heaps) < 3 || f.Heaps[0].Heap != "[heap]" || f.Heaps[0].Arena != "main" {
		t.Fatalf("heaps %+v: want [heap] (main) first and the two threads' heaps", f.Heaps)
	}
	// The holes thread's heap is the most resident of the others (its
	// 40000 blocks' pages stay: about 20 MB, against the kept thread's
	// 5 MB); the kept thread's is the one holding its 10000 blocks.
	holes := f.Heaps[1]
	var kept *schema.SitesHeap
	for i := 2; i < len(f.Heaps); i++ {
		if f.Heaps[i].InUseBytes >= 10000*512 {
			kept = &f.Heaps[i]
		}
	}
	if holes.ResidentBytes < 15<<20 || holes.InUseBytes < 2500*512 || holes.InUseBytes > 2500*512+64<<10 || holes.FreeResidentPct < 80 {
		t.Errorf("holes thread's heap %+v: want at least 15 MiB resident, 1280000 B in use, above 80 %% free", holes)
	}
	if kept == nil || kept.FreeResidentPct > 30 {
		t.Errorf("kept thread's heap %+v: want one with 5120000 B in use, below 30 %% free", kept)
	} else if holes.Arena != "" && kept.Arena != "" && holes.Arena == kept.Arena {
		t.Errorf("both heaps in arena %s: want two arenas", holes.Arena)
	}
}

// TestExecSitesStatic: a statically linked program gets one line saying
// that --sites cannot see it, before it runs.
func TestExecSitesStatic(t *testing.T) {
	sitesLib(t)
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc not found")
	}
	bin := filepath.Join(t.TempDir(), "static")
	src := filepath.Join("testdata", "cprogs", "spin.c")
	if out, err := exec.Command(cc, "-static", "-O2", "-o", bin, src).CombinedOutput(); err != nil {
		t.Skipf("gcc -static: %v (no static C library here)\n%s", err, out)
	}
	o := Options{OutDir: t.TempDir(), Sites: SitesOptions{Enabled: true}}
	_, err = Exec(ExecOptions{Options: o, Args: []string{bin, "1"}})
	if err == nil || !strings.Contains(err.Error(), "linked statically") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Exec of a static program: %v; want one line saying it is linked statically", err)
	}
}

// TestExecSitesGo: a Go program (this test binary) gets a line saying
// that --sites sees only its C allocations and --pprof its Go heap: a
// warning where it is linked dynamically, the error where statically.
func TestExecSitesGo(t *testing.T) {
	sitesLib(t)
	o := Options{OutDir: t.TempDir(), Sites: SitesOptions{Enabled: true}}
	env := append(os.Environ(), holdEnv+"=1")
	s, err := Exec(ExecOptions{Options: o, Args: []string{os.Args[0]}, Env: env, Stdin: strings.NewReader("")})
	const want = "--pprof shows its Go heap"
	if err != nil {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("Exec: %v; want a line saying %q", err, want)
		}
		return
	}
	r, err := waitDiagnosed(s, t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(r.Warnings, "\n"), "sees only its C allocations") {
		t.Errorf("warnings %q: want one saying --sites sees only the C allocations", r.Warnings)
	}
}

// TestMonoAt: CLOCK_MONOTONIC at a time.Time is read between two
// readings of the clock taken around it, however late it is asked
// (finishSites asks once the program has exited), here up to 50 ms
// later, within 1 ms.
// Read as monoNow() - time.Since(t) in one go, a goroutine preempted
// between the two put it early by the wait: once in a CI run, a walk
// taken after fragment.c's frees read as taken during them.
func TestMonoAt(t *testing.T) {
	for range 20 {
		a := monoNow()
		at := time.Now()
		b := monoNow()
		time.Sleep(time.Duration(rand.IntN(50)) * time.Millisecond)
		if m := monoAt(at); m+1e6 < a || m > b+1e6 {
			t.Fatalf("monoAt: %d, want within 1 ms of [%d, %d]", m, a, b)
		}
	}
}

// TestChildrenWalkedSites: a driver's memory is its child's. sh runs
// bigblocks, whose four mappings of 8 MiB (map_block) have no shape the
// reconciliation knows; with --children the child is walked, and its
// walk is joined with its own image's records, as the program's is: the
// child's image has the join, naming map_block, the report prints it,
// and the diagnosis's line of the child's unexplained memory names the
// site. Planted (the child's walk not given to the join): the line read
// "another allocator's or runtime's heap" of memory --sites had
// recorded, as it did of gcc's cc1 (15.3 MiB, 31 % of its RSS,
// ggc_internal_alloc's pages).
func TestChildrenWalkedSites(t *testing.T) {
	sitesLib(t)
	const size = 32 << 20
	for _, rate := range []int64{1, 0} {
		o := Options{Children: true, OutDir: t.TempDir(), Sites: SitesOptions{Enabled: true, Rate: rate}}
		h := execHeld(t, o, cleanEnv(), "sh", "-c", cprog(t, "bigblocks")+" 4 8 mmap; exit $?")
		h.waitLine(t, "ready")
		// A walk whose smaps saw the four mappings made and nearly all
		// written: one that began before is followed by another at the
		// new high (walkedRSS, where smaps saw less than VmRSS), and the
		// highest is kept; one within a MiB or so of RSS is not walked
		// again.
		waitFor(t, "the child walked with its mappings", func() bool {
			var seen int64
			if lead, _ := h.s.sched.highestLead(); lead != nil {
				for _, u := range lead.Reconciliation.UnexplainedAll {
					seen += u.ResidentBytes
				}
			}
			return seen >= size*7/8
		})
		r := h.release(t)
		p := r.Process
		var kid *schema.SitesProcess
		for i, pr := range p.Sites.Processes {
			if filepath.Base(pr.Executable) == "bigblocks" {
				kid = &p.Sites.Processes[i]
			}
		}
		if kid == nil || kid.PID == p.PID {
			t.Fatalf("rate %d: no image of the child bigblocks: %+v", rate, p.Sites.Processes)
		}
		u := kid.Unexplained
		if u == nil {
			t.Fatalf("rate %d: the child's image has no join with its walk\n%s", rate, render(t, r))
		}
		t.Logf("rate %d: child %d: %+v; arenas %+v; warnings %q (program %d)", rate, kid.PID, *u, kid.Fragmentation, r.Warnings, p.PID)
		if u.At != "peak" || u.UnexplainedBytes < size*7/8 || u.MappedBytes < u.UnexplainedBytes*95/100 || len(u.Sites) == 0 || u.Sites[0].Function != "map_block" || u.Sites[0].Mappings != 4 {
			t.Errorf("rate %d: %+v; want at least %d B unexplained, nearly all of it mapped by map_block in 4 mappings", rate, *u, size*7/8)
		}
		if kid.Fragmentation == nil || kid.Fragmentation.At != "peak" || kid.Fragmentation.ArenaResidentBytes <= 0 {
			t.Errorf("rate %d: the child's arenas %+v: want its peak walk's split", rate, kid.Fragmentation)
		}
		f := finding(p, "descendant-unexplained")
		if f == nil || !strings.Contains(f.Text, "--sites finds") || !strings.Contains(f.Text, "map_block") {
			t.Errorf("rate %d: the child's unexplained line %+v: want it to name map_block", rate, f)
		}
		who := fmt.Sprintf("bigblocks (pid %d)", kid.PID)
		if out := render(t, r); !strings.Contains(out, "unexplained in "+who+" at its peak walk") || !strings.Contains(out, "glibc arenas of "+who+" at its peak walk") {
			t.Errorf("rate %d: the report lacks the child's join:\n%s", rate, out)
		}
	}
}

// TestSitesPeakOnRunClock: the sites' peak is said on the run's clock,
// as the timeline and the walks are: sh sleeps 0.3 s and then execs
// bigblocks, whose 32 MiB come in its image's first milliseconds. The
// peak read "at 0.296 s" of a Python program behind pyenv's shims, whose
// image began 0.45 s into the run and whose RSS rose after that: its
// image's clock. Planted (the image's start not given): at 0.0 s.
func TestSitesPeakOnRunClock(t *testing.T) {
	sitesLib(t)
	o := slowWalks
	o.OutDir = t.TempDir()
	o.Sites = SitesOptions{Enabled: true, Rate: 1}
	h := execHeld(t, o, cleanEnv(), "sh", "-c", "sleep 0.3; exec "+cprog(t, "bigblocks")+" 4 8 mmap")
	h.waitLine(t, "ready")
	r := h.release(t)
	st, p := r.Process.Sites, r.Process
	at := st.ImageStartMs + st.PeakAtMs
	t.Logf("image began at %.1f ms, peak %.1f ms into it, run %.1f ms", st.ImageStartMs, st.PeakAtMs, p.DurationMs)
	if st.PeakInUseBytes < 32<<20 || st.ImageStartMs < 290 || at < 300 || at > p.DurationMs {
		t.Errorf("peak %d B at %.1f ms into an image that began at %.1f ms of a %.1f ms run: want 32 MiB, after sh's 0.3 s sleep, within the run", st.PeakInUseBytes, st.PeakAtMs, st.ImageStartMs, p.DurationMs)
	}
	if out := render(t, r); !strings.Contains(out, fmt.Sprintf("(at %.3f s, %.3f s into its image, which began at %.3f s", at/1000, st.PeakAtMs/1000, st.ImageStartMs/1000)) {
		t.Errorf("the report does not say the peak on the run's clock:\n%s", out)
	}
}
