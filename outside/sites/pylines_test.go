package sites

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"memprobe/schema"
)

func TestUserCode(t *testing.T) {
	for file, want := range map[string]bool{
		"/work/train.py": true,
		"<string>":       true,
		"/root/.pyenv/versions/3.11.7/lib/python3.11/base64.py":                 false,
		"/usr/lib/python3.11/json/decoder.py":                                   false,
		"/usr/lib/python3/dist-packages/torch/nn/modules/linear.py":             false,
		"/home/u/venv/lib/python3.12/site-packages/numpy/core/numeric.py":       false,
		"/opt/conda/lib/python3.11/site-packages/torch/nn/functional.py":        false,
		"<frozen importlib._bootstrap>":                                         false,
		"/home/u/project/lib/model.py":                                          true,
		"/root/.pyenv/versions/3.13.0/lib64/python3.13/collections/__init__.py": false,
		"": false,
	} {
		if got := userCode(file); got != want {
			t.Errorf("userCode(%q) = %v, want %v", file, got, want)
		}
	}
}

// pyStack makes a named stack: native frames (name, obj), then Python
// frames ("fn file:line").
func pyStack(native [][2]string, py ...string) *named {
	n := &named{}
	for _, f := range native {
		n.frames = append(n.frames, frame{fn: f[0], obj: f[1], unnamed: strings.Contains(f[0], "+0x")})
	}
	for _, p := range py {
		fn, rest, _ := strings.Cut(p, " ")
		i := strings.LastIndex(rest, ":")
		file, line := rest[:i], 0
		fmt.Sscan(rest[i+1:], &line)
		n.frames = append(n.frames, frame{fn: fn, file: file, line: line, obj: pyObj})
	}
	return n
}

// TestPyLinesSums: stacks go to their innermost line of the program's
// code, through library frames; library-only and native-only stacks are
// apart; pymalloc's arenas are counted, named or in a stripped
// interpreter.
func TestPyLinesSums(t *testing.T) {
	lib := "/usr/lib/python3/dist-packages/torch/nn/modules/linear.py"
	alloc := [][2]string{{"c10::alloc_cpu", "/usr/lib/libc10.so"}}
	arena := [][2]string{{"python3.11+0x62d080", "/usr/bin/python3.11"}, {"python3.11+0x4fb540", "/usr/bin/python3.11"}}
	named := [][2]string{{"_PyObject_ArenaMmap", "/v/lib/libpython3.12.so"}, {"new_arena", "/v/lib/libpython3.12.so"}}
	sa := &siteAcc{stacks: []stackAcc{
		{pyStack(alloc, "Linear.forward "+lib+":114", "step /w/train.py:13", "main /w/train.py:26"), &acc{peakBytes: 100, exitBytes: 10}},
		{pyStack(alloc, "step /w/train.py:13", "main /w/train.py:26"), &acc{peakBytes: 20}},
		{pyStack(alloc, "make_batches /w/train.py:8", "main /w/train.py:21"), &acc{peakBytes: 50, exitBytes: 50}},
		{pyStack(arena, "make_batches /w/train.py:8"), &acc{peakBytes: 8, mapped: true}},
		{pyStack(named, "f /w/train.py:30"), &acc{peakBytes: 2, mapped: true}},
		{pyStack(alloc, "_call_with_frames_removed <frozen importlib._bootstrap>:241"), &acc{peakBytes: 40}},
		{pyStack([][2]string{{"blas_memory_alloc", "/usr/lib/libopenblas.so"}}), &acc{peakBytes: 128, exitBytes: 128, mapped: true}},
	}}
	for _, st := range sa.stacks {
		st.n.site = 0
	}
	got := pyLines([]*siteAcc{sa}, 10)
	if got == nil {
		t.Fatal("no table")
	}
	want := []schema.SitesPyLine{
		{Function: "step", File: "/w/train.py", Line: 13, PeakBytes: 120, PeakPct: 100 * 120.0 / 348, ExitBytes: 10, ExitPct: 100 * 10.0 / 188, Via: "Linear.forward (linear.py:114)"},
		{Function: "make_batches", File: "/w/train.py", Line: 8, PeakBytes: 58, PeakPct: 100 * 58.0 / 348, ExitBytes: 50, ExitPct: 100 * 50.0 / 188},
		{Function: "f", File: "/w/train.py", Line: 30, PeakBytes: 2, PeakPct: 100 * 2.0 / 348},
	}
	if fmt.Sprint(got.Lines) != fmt.Sprint(want) {
		t.Errorf("lines\n got %+v\nwant %+v", got.Lines, want)
	}
	if got.PeakBytes != 348 || got.LibraryPeakBytes != 40 || got.NativePeakBytes != 128 || got.NativeExitBytes != 128 || got.PymallocPeakBytes != 10 {
		t.Errorf("totals %+v", *got)
	}
	if pyLines([]*siteAcc{{stacks: sa.stacks[6:]}}, 10) != nil {
		t.Errorf("a table for a program with no Python frame")
	}
}

// TestPyLines: on each interpreter at rate 1, the table by line leads
// with the script's line (testdata/python/pylines.py:12) though its
// bytes were made in base64.py, and says so (Via).
func TestPyLines(t *testing.T) {
	script, _ := filepath.Abs("testdata/python/pylines.py")
	for _, py := range pythons(t, 11, 12, 13) {
		t.Run(py.name, func(t *testing.T) {
			dir := t.TempDir()
			recs := filepath.Join(dir, "records")
			if err := os.Mkdir(recs, 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(py.path, script)
			cmd.Env = Env(os.Environ(), lib(t), recs, 1)
			if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
				t.Fatalf("%s %s: %v\n%s", py.path, script, err, out)
			}
			s, warns, err := Analyze(Options{Dir: recs, PID: cmd.Process.Pid})
			if err != nil {
				t.Fatal(err)
			}
			pl := s.PyLines
			if pl == nil || len(pl.Lines) == 0 {
				t.Fatalf("no table by line; warnings %q", warns)
			}
			x := pl.Lines[0]
			t.Logf("first row %s (%s:%d) %d bytes at the peak (%.1f %%) via %s; sites' top %s (%s:%d)", x.Function, filepath.Base(x.File), x.Line,
				x.PeakBytes, x.PeakPct, x.Via, s.TopPeak[0].Function, filepath.Base(s.TopPeak[0].File), s.TopPeak[0].Line)
			if x.Function != "load" || x.File != script || x.Line != 12 {
				t.Fatalf("first row %s (%s:%d), want load (%s:12)", x.Function, x.File, x.Line, script)
			}
			// Five kept 9 MiB results, and the 12 MiB input at least.
			if lo := int64(5*9<<20 + 12<<20); x.PeakBytes < lo {
				t.Errorf("load's line: %d bytes at the peak, want at least %d", x.PeakBytes, lo)
			}
			if !strings.Contains(x.Via, "base64.py") {
				t.Errorf("load's line via %q, want base64.py's frame", x.Via)
			}
		})
	}
}

// TestPymallocArenas: a pure-Python program of small objects
// (testdata/python/smallobj.py) holds its peak in pymalloc's arenas,
// charged to the line that made each (smallobj.py:11, the table's first
// row), on each interpreter at the default rate; with PYTHONMALLOC=malloc
// the arenas hold next to nothing and the line keeps its bytes.
func TestPymallocArenas(t *testing.T) {
	script, _ := filepath.Abs("testdata/python/smallobj.py")
	for _, py := range pythons(t, 11, 12, 13) {
		for _, malloc := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/malloc=%v", py.name, malloc), func(t *testing.T) {
				recs := t.TempDir()
				cmd := exec.Command(py.path, script, "30")
				cmd.Env = Env(os.Environ(), lib(t), recs, DefaultRate)
				if malloc {
					cmd.Env = append(cmd.Env, "PYTHONMALLOC=malloc")
				}
				if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
					t.Fatalf("%s %s: %v\n%s", py.path, script, err, out)
				}
				s, _, err := Analyze(Options{Dir: recs, PID: cmd.Process.Pid})
				if err != nil {
					t.Fatal(err)
				}
				pl := s.PyLines
				if pl == nil || len(pl.Lines) == 0 || filepath.Base(pl.Lines[0].File) != "smallobj.py" || pl.Lines[0].Line != 11 {
					t.Fatalf("table by line %+v, want smallobj.py:11 first", pl)
				}
				share := float64(pl.PymallocPeakBytes) / float64(pl.PeakBytes)
				t.Logf("smallobj.py:11 %d bytes at the peak (%.0f %%); pymalloc's arenas %.0f %% of %d", pl.Lines[0].PeakBytes, pl.Lines[0].PeakPct, 100*share, pl.PeakBytes)
				if !malloc && share < 0.5 || malloc && share > 0.1 {
					t.Errorf("pymalloc's arenas hold %.0f %% of the peak", 100*share)
				}
				if pl.Lines[0].PeakPct < 50 {
					t.Errorf("smallobj.py:11 holds %.0f %% of the peak, want most", pl.Lines[0].PeakPct)
				}
			})
		}
	}
}
