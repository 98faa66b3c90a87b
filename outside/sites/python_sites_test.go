package sites

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"memprobe/schema"
)

// checkNested says what is wrong with the top peak site of
// testdata/python/nested.py's run: it must be inner's line, its stack
// leading with inner ← outer ← <module> at their lines, with the native
// frames that line called, and hold the 20 × 4 MiB.
func checkNested(s *schema.Sites) error {
	if len(s.TopPeak) == 0 {
		return fmt.Errorf("no site in use at the peak")
	}
	x := s.TopPeak[0]
	want := []string{"inner (nested.py:10)", "outer (nested.py:15)", "<module> (nested.py:32)"}
	if x.Function != "inner" || filepath.Base(x.File) != "nested.py" || x.Line != 10 ||
		len(x.Stack) < 3 || !slices.Equal(x.Stack[:3], want) {
		return fmt.Errorf("top site %s (%s:%d), stack %q: want %q", x.Function, x.File, x.Line, x.Stack, want)
	}
	if len(x.Native) == 0 {
		return fmt.Errorf("top site %s: no native frames below the Python line", x.Function)
	}
	if lo := int64(20 * 4 << 20); x.Bytes < lo*9/10 || x.Bytes > lo*11/10 {
		return fmt.Errorf("top site %s: %d bytes, want about %d", x.Function, x.Bytes, lo)
	}
	return nil
}

// pyRecord runs script under py with the library at rate.
func pyRecord(t *testing.T, py interp, rate int64, args ...string) (*schema.Sites, []string, string) {
	t.Helper()
	script, _ := filepath.Abs("testdata/python/nested.py")
	dir := t.TempDir()
	recs := filepath.Join(dir, "records")
	if err := os.Mkdir(recs, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py.path, append([]string{script}, args...)...)
	cmd.Env = Env(os.Environ(), lib(t), recs, rate)
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Fatalf("%s %s: %v\n%s", py.path, script, err, out)
	}
	s, warns, err := Analyze(Options{Dir: recs, OutDir: dir, PID: cmd.Process.Pid})
	if err != nil {
		t.Fatal(err)
	}
	return s, warns, dir
}

// TestPythonSites: on each interpreter, at rate 1 and at the default
// rate, the Python lines lead the top site's stack, and the peak
// profile has them as functions with file and line.
func TestPythonSites(t *testing.T) {
	for _, py := range pythons(t, 11, 12, 13) {
		for _, rate := range []int64{1, DefaultRate} {
			t.Run(fmt.Sprintf("%s/rate%d", py.name, rate), func(t *testing.T) {
				s, warns, dir := pyRecord(t, py, rate)
				if err := checkNested(s); err != nil {
					t.Fatalf("%v\nwarnings: %q", err, warns)
				}
				t.Logf("%s ← %s; native: %s", siteText(s.TopPeak[0]), strings.Join(s.TopPeak[0].Stack[1:3], " ← "), strings.Join(s.TopPeak[0].Native, " ← "))
				if !profileHas(t, filepath.Join(dir, profileName(schema.SitesPeak)), "inner", 10) {
					t.Errorf("the peak profile has no function inner at nested.py:10")
				}
			})
		}
	}
}

func siteText(x schema.Site) string {
	return fmt.Sprintf("%s (%s:%d) %d bytes", x.Function, filepath.Base(x.File), x.Line, x.Bytes)
}

// profileHas says the profile at path has a location of function fn at
// a line of nested.py.
func profileHas(t *testing.T, path, fn string, line int64) bool {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range p.Location {
		for _, ln := range l.Line {
			if ln.Function.Name == fn && filepath.Base(ln.Function.Filename) == "nested.py" && ln.Line == line {
				return true
			}
		}
	}
	return false
}

// TestPythonSitesPlanted: with the frames carried and the merge off,
// checkNested fails.
func TestPythonSitesPlanted(t *testing.T) {
	py := pythons(t, 12)[0]
	pyMerge = false
	defer func() { pyMerge = true }()
	s, _, _ := pyRecord(t, py, 1)
	if err := checkNested(s); err == nil {
		t.Fatalf("the merge off, and the top site still reads as merged: %s", siteText(s.TopPeak[0]))
	} else {
		t.Logf("caught: %v", err)
	}
}

// TestPythonSitesNumpy: numpy's array (Debian's python3-numpy, with
// /usr/bin/python3.11) is charged to the script's line, numpy's C frames
// below it.
func TestPythonSitesNumpy(t *testing.T) {
	py := interp{name: "debian-3.11", path: "/usr/bin/python3.11", minor: 11}
	if _, err := os.Stat(py.path); err != nil {
		t.Skip("no /usr/bin/python3.11: not tested")
	}
	if err := exec.Command(py.path, "-c", "import numpy").Run(); err != nil {
		t.Skip("no numpy for /usr/bin/python3.11 (python3-numpy): not tested")
	}
	s, warns, _ := pyRecord(t, py, DefaultRate, "np")
	// OpenBLAS's threads' buffers (128 MiB, no Python state) may be
	// larger: they are listed, native only.
	for _, o := range s.TopPeak {
		if strings.Contains(o.Function, "openblas") && !o.NativeOnly {
			t.Errorf("OpenBLAS's site %s is not marked native only", siteText(o))
		}
	}
	p := site(s.TopPeak, "make_np")
	if p == nil {
		t.Fatalf("no site make_np at the peak: %v\nwarnings: %q", s.TopPeak, warns)
	}
	x := *p
	want := []string{"make_np (nested.py:21)", "outer_np (nested.py:25)", "<module> (nested.py:30)"}
	if x.Function != "make_np" || len(x.Stack) < 3 || !slices.Equal(x.Stack[:3], want) || len(x.Native) == 0 {
		t.Fatalf("top site %s, stack %q, native %q: want %q over numpy's frames\nwarnings: %q", siteText(x), x.Stack, x.Native, want, warns)
	}
	if lo := int64(64 << 20); x.Bytes < lo*9/10 || x.Bytes > lo*11/10 {
		t.Errorf("top site: %d bytes, want about %d", x.Bytes, lo)
	}
	t.Logf("%s ← %s; native: %s", siteText(x), strings.Join(x.Stack[1:3], " ← "), strings.Join(x.Native, " ← "))
}
