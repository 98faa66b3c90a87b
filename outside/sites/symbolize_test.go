package sites

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// readelfRanges are the FDE ranges `readelf -wf` prints for path: an
// oracle for funcRanges that shares no code with it.
func readelfRanges(t *testing.T, path string) []fdeRange {
	t.Helper()
	if _, err := exec.LookPath("readelf"); err != nil {
		t.Skip("readelf (binutils) not found: no oracle for the unwind tables")
	}
	out, err := exec.Command("readelf", "-wf", path).Output()
	if err != nil {
		t.Fatalf("readelf -wf %s: %v", path, err)
	}
	var rs []fdeRange
	sc := bufio.NewScanner(bytes.NewReader(out))
	inEH := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "Contents of the ") {
			inEH = strings.Contains(line, ".eh_frame section")
		}
		i := strings.Index(line, " FDE ")
		if !inEH || i < 0 {
			continue
		}
		_, pc, ok := strings.Cut(line[i:], "pc=")
		lo, hi, ok2 := strings.Cut(pc, "..")
		if !ok || !ok2 {
			continue
		}
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(strings.TrimSpace(hi), 16, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("readelf line %q", line)
		}
		if b > a {
			rs = append(rs, fdeRange{a, b})
		}
	}
	return rs
}

// TestFuncRangesMatchReadelf: every function range read from .eh_frame
// is one readelf prints, and none is missing, for a test program and
// the system's Python (its .eh_frame has ten thousand entries).
func TestFuncRangesMatchReadelf(t *testing.T) {
	paths := []string{prog(t, "stripped.c")}
	if p, err := filepath.EvalSymlinks("/usr/bin/python3"); err == nil {
		paths = append(paths, p)
	}
	for _, p := range paths {
		f, err := elf.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		got := funcRanges(f)
		f.Close()
		want := readelfRanges(t, p)
		if len(want) == 0 {
			t.Fatalf("%s: readelf printed no FDE", p)
		}
		set := map[fdeRange]bool{}
		for _, r := range want {
			set[r] = true
		}
		for _, r := range got {
			if !set[r] {
				t.Errorf("%s: range %#x..%#x is not readelf's", p, r.start, r.end)
			}
			delete(set, r)
		}
		if len(set) > 0 || len(got) != len(want) {
			t.Errorf("%s: %d ranges, readelf %d (%d of readelf's missing)", p, len(got), len(want), len(set))
		}
	}
}

// TestLookupByUnwindRanges: a symbol without a size names the function
// it starts, not the next one the unwind tables know (the old lookup
// gave "label" to every address up to the next symbol); a symbol whose
// size stops short of its function's end by the unwind tables names
// the rest too (the old lookup gave no name there).
func TestLookupByUnwindRanges(t *testing.T) {
	o := &object{path: "/x/bin", syms: []elf.Symbol{{Name: "label", Value: 0x1000}, {Name: "short", Value: 0x2000, Size: 0x10}},
		funcs: []fdeRange{{0x1000, 0x1080}, {0x1100, 0x1200}, {0x2000, 0x2040}}}
	for _, tc := range []struct {
		addr uint64
		want string
	}{
		{0x1010, "label"},      // in the function it starts
		{0x1090, "label"},      // between functions: nothing better
		{0x1150, "bin+0x1100"}, // a function of its own
		{0x0f00, ""},           // before everything
		{0x2008, "short"},      // in its size
		{0x2030, "short"},      // past its size, in its function
		{0x2050, ""},           // past both
	} {
		if fn, _, _, _ := o.lookup(tc.addr); fn != tc.want {
			t.Errorf("lookup(%#x) = %q, want %q", tc.addr, fn, tc.want)
		}
	}
}

// strip copies exe stripped of its symbol table and debug sections.
func strip(t *testing.T, exe string) string {
	t.Helper()
	if _, err := exec.LookPath("strip"); err != nil {
		t.Skip("strip (binutils) not found")
	}
	out := filepath.Join(t.TempDir(), "stripped")
	if b, err := exec.Command("strip", "-o", out, exe).CombinedOutput(); err != nil {
		t.Fatalf("strip %s: %v\n%s", exe, err, b)
	}
	return out
}

// funcsAt names the functions of a profile's locations in the mapping
// of obj (by base name), by ELF address: the functions of each.
func funcsAt(t *testing.T, p *profile.Profile, obj string) map[uint64]string {
	t.Helper()
	f, err := elf.Open(obj)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	o := &object{}
	for _, ph := range f.Progs {
		if ph.Type == elf.PT_LOAD {
			o.loads = append(o.loads, ph.ProgHeader)
		}
	}
	out := map[uint64]string{}
	for _, l := range p.Location {
		if l.Mapping == nil || filepath.Base(l.Mapping.File) != filepath.Base(obj) || len(l.Line) == 0 {
			continue
		}
		va, ok := o.vaddr(l.Address - l.Mapping.Start + l.Mapping.Offset)
		if !ok {
			t.Fatalf("location %#x is in no segment of %s", l.Address, obj)
		}
		out[va] = l.Line[len(l.Line)-1].Function.Name
	}
	return out
}

func profileOf(t *testing.T, paths []string, kind string) *profile.Profile {
	t.Helper()
	for _, pth := range paths {
		if strings.HasSuffix(pth, "sites-"+kind+".pb.gz") {
			p, err := readProfile(pth)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
	}
	t.Fatalf("no %s profile in %v", kind, paths)
	return nil
}

// TestStrippedStaticSite: testdata/stripped.c's static fill allocates
// from two call sites; stripped, no symbol names it. Both call sites
// are one site named by fill's start (the unwind tables'), the address
// the unstripped build's symbol table gives fill, with both sites'
// bytes. Named by call site (the old naming) they were two sites.
func TestStrippedStaticSite(t *testing.T) {
	full := prog(t, "stripped.c")
	exe := strip(t, full)
	f, err := elf.Open(full)
	if err != nil {
		t.Fatal(err)
	}
	syms, _ := f.Symbols()
	f.Close()
	var fill, size uint64
	for _, s := range syms {
		if s.Name == "fill" || strings.HasPrefix(s.Name, "fill.") {
			fill, size = s.Value, s.Size
		}
	}
	if fill == 0 {
		t.Fatalf("no symbol fill in %s", full)
	}
	s, _, _ := record(t, 1, exe)
	want := fmt.Sprintf("stripped+0x%x", fill)
	var mine []string
	for _, st := range s.TopExit {
		if filepath.Base(st.Object) == "stripped" {
			mine = append(mine, st.Function)
		}
	}
	if len(mine) != 1 || mine[0] != want {
		t.Fatalf("the program's exit sites %v, want one, %s (top exit %+v)", mine, want, s.TopExit)
	}
	st := site(s.TopExit, want)
	if st.Bytes != 100*1000+100*2000 || st.Objects != 200 {
		t.Errorf("%s: %d bytes in %d blocks, want 300000 in 200", want, st.Bytes, st.Objects)
	}
	// The plant: the two blocks come from two addresses in fill, which
	// the call-site naming named apart.
	var paths []string
	for _, pf := range s.Profiles {
		paths = append(paths, pf.Path)
	}
	at := funcsAt(t, profileOf(t, paths, "exit"), exe)
	var inFill []uint64
	for va, fn := range at {
		if va >= fill && va < fill+size {
			inFill = append(inFill, va)
			if fn != want {
				t.Errorf("the location at %#x (in fill) is %q, want %q", va, fn, want)
			}
		}
	}
	if len(inFill) != 2 {
		t.Errorf("the exit profile has %d locations in fill (%#x), want its two call sites", len(inFill), inFill)
	}
}

// TestStrippedWarning: a stripped program's frames named by address
// get a warning naming the program and the debug file by build ID that
// would name them; with that file there (objcopy --only-keep-debug of
// the unstripped build), the site is fill, and no warning. The plant is
// the stripped program: built with its symbols, it has no warning.
func TestStrippedWarning(t *testing.T) {
	if _, err := exec.LookPath("objcopy"); err != nil {
		t.Skip("objcopy (binutils) not found")
	}
	full := prog(t, "stripped.c")
	exe := strip(t, full)
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	id := buildID(f)
	f.Close()
	if len(id) < 3 {
		t.Skipf("%s has no build ID (the compiler's linker was not given --build-id)", exe)
	}
	root := t.TempDir()
	old := debugRoot
	debugRoot = root
	defer func() { debugRoot = old }()
	debugFile := filepath.Join(root, ".build-id", id[:2], id[2:]+".debug")

	mine := func(warns []string) []string {
		var out []string
		for _, w := range warns {
			if strings.Contains(w, "named by address") && strings.Contains(w, " "+exe+" ") {
				out = append(out, w)
			}
		}
		return out
	}
	s, warns, _ := record(t, 1, exe)
	ws := mine(warns)
	if len(ws) != 1 || !strings.Contains(ws[0], "it is stripped") || !strings.Contains(ws[0], debugFile+" is not there") || !strings.Contains(ws[0], "(stripped+0x") {
		t.Fatalf("stripped, the warnings of %s: %q, want one naming %s (all: %q)", exe, ws, debugFile, warns)
	}
	if site(s.TopExit, "fill") != nil {
		t.Fatalf("stripped, with no debug file, a site is named fill: %+v", s.TopExit)
	}

	if _, warns, _ := record(t, 1, full); len(mine(warns)) > 0 {
		t.Errorf("built with its symbols, warned: %q", mine(warns))
	}

	if err := os.MkdirAll(filepath.Dir(debugFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command("objcopy", "--only-keep-debug", full, debugFile).CombinedOutput(); err != nil {
		t.Fatalf("objcopy: %v\n%s", err, b)
	}
	s, warns, _ = record(t, 1, exe)
	if ws := mine(warns); len(ws) > 0 {
		t.Errorf("with its debug file, warned: %q", ws)
	}
	var fill int64 // a site a line: fill's two calls
	for _, st := range s.TopExit {
		if st.Function == "fill" {
			fill += st.Bytes
		}
	}
	if fill != 100*1000+100*2000 {
		t.Errorf("with its debug file, the sites of fill hold %d bytes, want 300000 (top exit %+v)", fill, s.TopExit)
	}
}

// TestPythonUnnamedFunctions: Debian's /usr/bin/python3.11 is stripped
// and exports only its API in .dynsym; its static functions (the dict
// keys' allocator, new_keys_object, a top site of a dict-heavy program)
// were named by call site, python3.11+0xOFFSET, so a static function's
// call sites were as many functions in the profiles. Every location in
// one function (by readelf's unwind entries) must now carry one name,
// and a nameless function's name is python3.11+0xSTART.
func TestPythonUnnamedFunctions(t *testing.T) {
	py, err := filepath.EvalSymlinks("/usr/bin/python3")
	if err != nil {
		t.Skip("/usr/bin/python3 not found")
	}
	ranges := readelfRanges(t, py)
	t.Setenv("PYTHONMALLOC", "malloc")
	s, _, _ := record(t, 1, py, "-c", `rows=[{"id":i,"name":str(i)*3,"vals":[i,i+1,i+2]} for i in range(2000)]; print(len(rows))`)
	var paths []string
	for _, pf := range s.Profiles {
		paths = append(paths, pf.Path)
	}
	at := funcsAt(t, profileOf(t, paths, "alloc"), py)
	byFunc := map[fdeRange]map[string][]uint64{}
	for va, fn := range at {
		r, ok := funcAt(ranges, va)
		if !ok {
			continue
		}
		if byFunc[r] == nil {
			byFunc[r] = map[string][]uint64{}
		}
		byFunc[r][fn] = append(byFunc[r][fn], va)
	}
	base := filepath.Base(py)
	grouped := 0 // nameless functions seen at two or more addresses
	for r, names := range byFunc {
		if len(names) != 1 {
			t.Errorf("the function at %#x..%#x has %d names: %v", r.start, r.end, len(names), names)
			continue
		}
		for fn, vas := range names {
			if strings.HasPrefix(fn, base+"+0x") {
				if want := fmt.Sprintf("%s+0x%x", base, r.start); fn != want {
					t.Errorf("%s at %#x: want %s", fn, vas, want)
				}
				if len(vas) >= 2 {
					grouped++
				}
			}
		}
	}
	if grouped == 0 {
		t.Skipf("%s: no nameless function was seen at two addresses (a build with its symbols?): nothing to group", py)
	}
	t.Logf("%d nameless functions of %s seen at two or more call sites, each one name", grouped, base)
}

// FuzzParseEHFrame: any bytes end the walk without a panic, and every
// range read is non-empty. The seeds are a real .eh_frame cut at a few
// places and lengths that overflow.
func FuzzParseEHFrame(f *testing.F) {
	if self, err := elf.Open("/proc/self/exe"); err == nil {
		if s := self.Section(".eh_frame"); s != nil {
			if b, err := s.Data(); err == nil {
				for _, n := range []int{len(b), len(b) / 2, 101, 24, 7} {
					f.Add(b[:min(n, len(b))])
				}
			}
		}
		self.Close()
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xf0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0x10, 0, 0, 0, 0x14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, r := range parseEHFrame(b, 0x1000, binary.LittleEndian, 8) {
			if r.end <= r.start {
				t.Fatalf("empty range %#x..%#x", r.start, r.end)
			}
		}
	})
}
