package sites

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"memprobe/internal/cshared"
)

// interp is one CPython of the machine's image.
type interp struct {
	name  string // "3.12.1", "debian-3.11"
	path  string
	minor int
}

// pythons are the interpreters present of the image's (pyenv's 3.11,
// 3.12, 3.13 and Debian's stripped 3.11; 3.10 where minor 10 is
// asked): each missing one is logged, never skipped silently.
func pythons(t *testing.T, minors ...int) []interp {
	t.Helper()
	var out []interp
	for _, m := range minors {
		found, _ := filepath.Glob(fmt.Sprintf("/root/.pyenv/versions/3.%d.*/bin/python3", m))
		if len(found) == 0 {
			t.Logf("no pyenv CPython 3.%d (/root/.pyenv/versions/3.%d.*): not tested", m, m)
			continue
		}
		v := filepath.Base(filepath.Dir(filepath.Dir(found[len(found)-1])))
		out = append(out, interp{name: v, path: found[len(found)-1], minor: m})
	}
	if len(minors) > 0 && minors[0] == 11 {
		if _, err := os.Stat("/usr/bin/python3.11"); err == nil {
			out = append(out, interp{name: "debian-3.11", path: "/usr/bin/python3.11", minor: 11})
		} else {
			t.Logf("no /usr/bin/python3.11 (Debian's stripped interpreter): not tested")
		}
	}
	if len(out) == 0 {
		t.Skip("no CPython of those asked")
	}
	return out
}

// TestPyLineTable decodes every code object's location table of a few
// sources, on each interpreter, and compares the line of every code unit
// with the interpreter's own co_positions().
func TestPyLineTable(t *testing.T) {
	script, _ := filepath.Abs("testdata/python/linetable.py")
	for _, py := range pythons(t, 11, 12, 13) {
		t.Run(py.name, func(t *testing.T) {
			out, err := exec.Command(py.path, script).Output()
			if err != nil {
				t.Fatalf("%s %s: %v", py.path, script, err)
			}
			codes, units := 0, 0
			sc := bufio.NewScanner(bytes.NewReader(out))
			sc.Buffer(nil, 16<<20)
			for sc.Scan() {
				var c struct {
					Name, Table string
					First       int
					Lines       []int
				}
				if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
					t.Fatal(err)
				}
				table, err := hex.DecodeString(c.Table)
				if err != nil {
					t.Fatal(err)
				}
				code := &PyCode{QualName: c.Name, FirstLine: c.First, LineTable: table}
				for off, want := range c.Lines {
					if got := code.Line(uint32(off)); got != want {
						t.Fatalf("%s offset %d: line %d, want %d (table %s)", c.Name, off, got, want, c.Table)
					}
				}
				codes++
				units += len(c.Lines)
			}
			if codes < 100 {
				t.Fatalf("%d code objects read: want hundreds", codes)
			}
			t.Logf("%d code objects, %d code units: every line as co_positions()", codes, units)
		})
	}
}

func TestPyLineTableEdges(t *testing.T) {
	// Entries: a short form (code 0, 2 units), a one-line form with a
	// delta of 2 (code 12, 1 unit), "no location" (code 15, 1 unit), a
	// long form with a delta of -3 (code 14, 3 units).
	table := []byte{0x80 | 0<<3 | 1, 0x00, 0x80 | 12<<3, 1, 2, 0x80 | 15<<3, 0x80 | 14<<3 | 2, 7, 0, 1, 1}
	c := &PyCode{FirstLine: 10, LineTable: table}
	want := []int{10, 10, 12, -1, 9, 9, 9, -1}
	for off, w := range want {
		if got := c.Line(uint32(off)); got != w {
			t.Errorf("offset %d: line %d, want %d", off, got, w)
		}
	}
	if got := (&PyCode{FirstLine: 1, LineTable: []byte{0x01}}).Line(0); got != -1 {
		t.Errorf("a table not starting with an entry: line %d, want -1", got)
	}
	if got := svarint([]byte{0x40 | 1, 2}); got != -((1 | 2<<6) >> 1) {
		t.Errorf("svarint of two bytes: %d", got)
	}
}

// pyTestLib builds the library with its test hook (memprobe_py_dump),
// with the extra definitions given.
func pyTestLib(t *testing.T, defines ...string) string {
	t.Helper()
	lib, err := library.Build(append([]string{"MEMPROBE_PY_TEST"}, defines...)...)
	if errors.Is(err, cshared.ErrNoGCC) {
		t.Skip("gcc not found: the allocation-site library cannot be built")
	}
	if err != nil {
		t.Fatal(err)
	}
	return lib
}

// runFrames runs testdata/python/frames.py under lib and returns its
// dump (stdout) and stderr.
func runFrames(t *testing.T, py interp, lib string) (dump, stderr string) {
	t.Helper()
	script, _ := filepath.Abs("testdata/python/frames.py")
	cmd := exec.Command(py.path, script, "1")
	cmd.Env = append(os.Environ(), "LD_PRELOAD="+lib, "MEMPROBE_SITES_DIR="+t.TempDir(), "MEMPROBE_SITES_RATE=1048576")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", py.path, script, err, errb.String())
	}
	return out.String(), errb.String()
}

// dumpedFrame is one frame line of memprobe_py_dump.
type dumpedFrame struct {
	qualname, file string
	line           int
	entry, bad     bool
}

func (d dumpedFrame) String() string {
	return fmt.Sprintf("%s (%s:%d) entry=%v", d.qualname, filepath.Base(d.file), d.line, d.entry)
}

// parseDump reads memprobe_py_dump's lines: its python line, and the
// frames with lines decoded from their tables by PyCode.Line.
func parseDump(t *testing.T, dump string) (status string, frames []dumpedFrame) {
	t.Helper()
	for _, l := range strings.Split(strings.TrimSpace(dump), "\n") {
		f := strings.Split(l, "\t")
		switch {
		case f[0] == "python":
			status = strings.Join(f[1:], " ")
		case f[0] == "frame" && len(f) == 5 && f[4] == "bad":
			frames = append(frames, dumpedFrame{bad: true})
		case f[0] == "frame" && len(f) == 8:
			off, err1 := strconv.ParseUint(f[2], 10, 32)
			first, err2 := strconv.Atoi(f[4])
			table, err3 := hex.DecodeString(f[7])
			if err := errors.Join(err1, err2, err3); err != nil {
				t.Fatalf("dump line %q: %v", l, err)
			}
			c := &PyCode{File: f[5], QualName: f[6], FirstLine: first, LineTable: table}
			frames = append(frames, dumpedFrame{qualname: c.QualName, file: c.File, line: c.Line(uint32(off)), entry: f[3] == "1"})
		case f[0] == "done":
		default:
			t.Fatalf("dump line %q: not the test hook's", l)
		}
	}
	return status, frames
}

// wantFrames are frames.py's "# at:" lines, innermost first (the file
// lists them in that order): 3.12 and later run a list comprehension in
// its function's frame (PEP 709), 3.11 in a frame of its own.
func wantFrames(t *testing.T, minor int) []dumpedFrame {
	t.Helper()
	script, _ := filepath.Abs("testdata/python/frames.py")
	text, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	var out []dumpedFrame
	for i, l := range strings.Split(string(text), "\n") {
		_, names, ok := strings.Cut(l, "# at: ")
		if !ok {
			continue
		}
		for _, n := range strings.Split(names, "|") {
			if strings.Contains(n, "<listcomp>") && minor >= 12 {
				continue
			}
			out = append(out, dumpedFrame{qualname: n, file: script, line: i + 1, entry: n == "gen" || n == "<module>"})
		}
	}
	return out
}

// TestPythonFrames runs nested functions under the library on each
// CPython 3.11 to 3.13 present, which ask for their own frames from C
// (the GIL released, as ctypes does): the qualified names, files, lines
// (decoded by PyCode.Line from the copied tables) and eval-loop entries
// are the script's.
func TestPythonFrames(t *testing.T) {
	lib := pyTestLib(t)
	for _, py := range pythons(t, 11, 12, 13) {
		t.Run(py.name, func(t *testing.T) {
			dump, stderr := runFrames(t, py, lib)
			if stderr != "" {
				t.Errorf("stderr: %q, want nothing", stderr)
			}
			status, got := parseDump(t, dump)
			if want := fmt.Sprintf("on 3.%d", py.minor); status != want {
				t.Fatalf("python %q, want %q", status, want)
			}
			if want := wantFrames(t, py.minor); !reflect.DeepEqual(got, want) {
				t.Fatalf("frames:\n%v\nwant\n%v", got, want)
			}
			t.Logf("%v", got)
		})
	}
}

// TestPythonRefused: a CPython that is not 3.11 to 3.13 gets Python
// frames off, said in one line.
func TestPythonRefused(t *testing.T) {
	lib := pyTestLib(t)
	for _, py := range pythons(t, 10) {
		dump, stderr := runFrames(t, py, lib)
		want := fmt.Sprintf("libmemprobe-sites: Python %s: not 3.11, 3.12 or 3.13; Python frames off\n", py.name)
		if stderr != want {
			t.Errorf("%s: stderr %q, want %q", py.name, stderr, want)
		}
		if status, frames := parseDump(t, dump); !strings.HasPrefix(status, "off ") || len(frames) != 0 {
			t.Errorf("%s: python %q and %d frames, want off and none", py.name, status, len(frames))
		}
	}
}

// TestPythonPlanted shifts one offset (co_qualname by 8) in a test
// build: 3.13 refuses it against _Py_DebugOffsets; on 3.11 and 3.12,
// which have no such table, the type checks find no str there and every
// frame is refused rather than misnamed.
func TestPythonPlanted(t *testing.T) {
	lib := pyTestLib(t, "MEMPROBE_PY_PLANT=8")
	for _, py := range pythons(t, 11, 12, 13) {
		t.Run(py.name, func(t *testing.T) {
			dump, stderr := runFrames(t, py, lib)
			status, frames := parseDump(t, dump)
			if py.minor == 13 {
				want := "libmemprobe-sites: Python 3.13: _Py_DebugOffsets code_object.qualname is 128, this library's 136; Python frames off\n"
				if stderr != want || !strings.HasPrefix(status, "off ") || len(frames) != 0 {
					t.Fatalf("stderr %q, python %q, %d frames: want %q, off, none", stderr, status, len(frames), want)
				}
				return
			}
			if len(frames) == 0 {
				t.Fatal("no frames")
			}
			for _, f := range frames {
				if !f.bad {
					t.Errorf("frame %v read through a shifted co_qualname: want it refused", f)
				}
			}
		})
	}
}

func TestMergePython(t *testing.T) {
	code := func(name string, first int) *PyCode {
		// One entry a line from first: code 13 (no columns), delta 1,
		// 1 code unit each; the first entry's delta 0.
		tab := []byte{0x80 | 13<<3, 0}
		for i := 0; i < 20; i++ {
			tab = append(tab, 0x80|13<<3, 2)
		}
		return &PyCode{Addr: 0x1000 * uint64(first), File: "train.py", QualName: name, FirstLine: first, LineTable: tab}
	}
	mk, batches := code("<module>", 1), code("make_batches", 4)
	step := code("step", 20)
	py := []PyFrame{{Code: batches, Instr: 2}, {Code: mk, Instr: 8, Entry: true}}
	native := []frame{{fn: "c10::alloc_cpu"}, {fn: "at::empty"}, {fn: "_PyEval_EvalFrameDefault"}, {fn: "PyEval_EvalCode"}, {fn: "main"}}
	pcs := []uint64{1, 2, 3, 4, 5}
	names := func(fs []frame) string {
		var s []string
		for _, f := range fs {
			if f.obj == pyObj {
				s = append(s, fmt.Sprintf("%s (%s:%d)", f.fn, f.file, f.line))
			} else {
				s = append(s, f.fn)
			}
		}
		return strings.Join(s, " ← ")
	}
	fs, ps := mergePython(native, pcs, py, nil)
	if got, want := names(fs), "c10::alloc_cpu ← at::empty ← make_batches (train.py:6) ← <module> (train.py:9) ← PyEval_EvalCode ← main"; got != want {
		t.Errorf("merged:\n%s\nwant\n%s", got, want)
	}
	if len(ps) != len(fs) || ps[2] != py[0].pc() || ps[4] != 4 {
		t.Errorf("pcs %v", ps)
	}

	// Two calls of the eval loop (a C function between: the entry marks
	// them), the inner one stripped and found by its .cold range.
	py2 := []PyFrame{{Code: step, Instr: 1, Entry: true}, {Code: batches, Instr: 2}, {Code: mk, Instr: 8, Entry: true}}
	native2 := []frame{{fn: "c10::alloc_cpu"}, {fn: "python3.11+0x4fb540", obj: "/usr/bin/python3.11", objAddr: 0x4fb540},
		{fn: "torch_call"}, {fn: "_PyEval_EvalFrameDefault"}, {fn: "main"}}
	ranges := []EvalRange{{Obj: "/usr/bin/python3.11", Lo: 0x400000, Hi: 0x401000}, {Obj: "/usr/bin/python3.11", Lo: 0x4fb000, Hi: 0x4fc000}}
	fs, _ = mergePython(native2, pcs, py2, ranges)
	if got, want := names(fs), "c10::alloc_cpu ← step (train.py:21) ← torch_call ← make_batches (train.py:6) ← <module> (train.py:9) ← main"; got != want {
		t.Errorf("merged by ranges:\n%s\nwant\n%s", got, want)
	}
	// Without the ranges the stripped loop is not told: the first group
	// goes to the named loop, the rest after it.
	fs, _ = mergePython(native2, pcs, py2, nil)
	if got, want := names(fs), "c10::alloc_cpu ← python3.11+0x4fb540 ← torch_call ← step (train.py:21) ← make_batches (train.py:6) ← <module> (train.py:9) ← main"; got != want {
		t.Errorf("merged without ranges:\n%s\nwant\n%s", got, want)
	}
	// No eval loop at all: the Python frames at the outer end.
	fs, _ = mergePython(native[:2], pcs[:2], py, nil)
	if got, want := names(fs), "c10::alloc_cpu ← at::empty ← make_batches (train.py:6) ← <module> (train.py:9)"; got != want {
		t.Errorf("merged with no eval loop:\n%s\nwant\n%s", got, want)
	}
}
