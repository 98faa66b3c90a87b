package outside

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"memprobe/internal/cshared"
	"memprobe/probe/sites"
)

// sitesLib builds the allocation-site library and points Exec at it.
func sitesLib(t *testing.T) {
	t.Helper()
	lib, err := sites.Build()
	switch {
	case errors.Is(err, cshared.ErrNoGCC):
		t.Skip("gcc not found: the allocation-site library cannot be built")
	case err != nil:
		t.Fatal(err)
	}
	t.Setenv(sites.EnvLib, lib)
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
	r, err := s.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(r.Warnings, "\n"), "sees only its C allocations") {
		t.Errorf("warnings %q: want one saying --sites sees only the C allocations", r.Warnings)
	}
}
