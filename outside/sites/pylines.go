package sites

import (
	"cmp"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"memprobe/schema"
)

// stdlibDir matches a file of CPython's standard library: under
// lib/python3.N/ (pyenv's, Debian's /usr/lib/python3.11/, a venv's
// base), site-packages and dist-packages below it included.
var stdlibDir = regexp.MustCompile(`/lib(64)?/python3(\.\d+)?/`)

// userCode says a Python frame's file is the program's own code: not
// the standard library's, not an installed package's (site-packages,
// dist-packages), not a frozen module's (<frozen importlib._bootstrap>).
// Other names in brackets (<string> of python -c, <stdin>) are the
// program's.
func userCode(file string) bool {
	switch {
	case file == "", strings.HasPrefix(file, "<frozen "):
		return false
	case strings.Contains(file, "/site-packages/"), strings.Contains(file, "/dist-packages/"):
		return false
	}
	return !stdlibDir.MatchString(file)
}

// pymallocFns are CPython's small-object allocator's functions on the
// way to a new arena's mmap.
var pymallocFns = map[string]bool{
	"_PyObject_ArenaMmap": true, "_PyMem_ArenaAlloc": true, "new_arena": true, "allocate_from_new_pool": true,
	"pymalloc_alloc": true, "_PyObject_Malloc": true, "_PyObject_Calloc": true, "_PyObject_Realloc": true,
}

// pymallocArena says a stack made pymalloc's arenas: a mapping of the
// program's whose native frames below its Python ones name pymalloc's
// functions or, in a stripped interpreter, start in the interpreter
// itself (CPython maps nothing else of its own with mmap at a Python
// line: its large objects go to malloc).
func pymallocArena(n *named, a *acc) bool {
	if !a.mapped {
		return false
	}
	end := n.pySite()
	if end < 0 {
		end = len(n.frames)
	}
	for i, f := range n.frames[:end] {
		if pymallocFns[f.fn] {
			return true
		}
		if i == n.site && f.unnamed {
			base := filepath.Base(f.obj)
			if strings.HasPrefix(base, "python3") || strings.HasPrefix(base, "libpython3") {
				return true
			}
		}
	}
	return false
}

// userFrame is the index of n's innermost Python frame of the program's
// own code, -1 where none.
func (n *named) userFrame() int {
	for i, f := range n.frames {
		if f.obj == pyObj && userCode(f.file) {
			return i
		}
	}
	return -1
}

// pyLines sums the stacks of sites by the innermost frame of the
// program's own Python code (userFrame), largest at the peak first, then
// at exit: the n largest lines of each; nil where no stack has a Python
// frame.
func pyLines(sites []*siteAcc, n int) *schema.SitesPyLines {
	type lineAcc struct {
		f                   frame
		peak, exit, peakVar float64
		via, viaKey         string
		viaPeak, viaExit    float64
		viaSet              bool
	}
	var out schema.SitesPyLines
	var peak, exit, libPeak, libExit, natPeak, natExit, pym float64
	lines := map[string]*lineAcc{}
	python := false
	for _, sa := range sites {
		for _, st := range sa.stacks {
			a := st.a
			peak += a.peakBytes
			exit += a.exitBytes
			if pymallocArena(st.n, a) {
				pym += a.peakBytes
			}
			py, u := st.n.pySite(), st.n.userFrame()
			switch {
			case py < 0:
				natPeak += a.peakBytes
				natExit += a.exitBytes
				continue
			case u < 0:
				python = true
				libPeak += a.peakBytes
				libExit += a.exitBytes
				continue
			}
			python = true
			f := st.n.frames[u]
			la := lines[f.key()]
			if la == nil {
				la = &lineAcc{f: f}
				lines[f.key()] = la
			}
			la.peak += a.peakBytes
			la.exit += a.exitBytes
			la.peakVar += a.peakVar
			// Via: the heaviest stack's innermost Python frame, by
			// its bytes at the peak, then at exit.
			if k := stackKey(st.n); !la.viaSet || a.peakBytes > la.viaPeak ||
				a.peakBytes == la.viaPeak && (a.exitBytes > la.viaExit || a.exitBytes == la.viaExit && k < la.viaKey) {
				la.viaPeak, la.viaExit, la.viaKey, la.viaSet, la.via = a.peakBytes, a.exitBytes, k, true, ""
				if py < u {
					g := st.n.frames[py]
					la.via = fmt.Sprintf("%s (%s:%d)", g.fn, filepath.Base(g.file), g.line)
				}
			}
		}
	}
	if !python {
		return nil
	}
	all := make([]*lineAcc, 0, len(lines))
	for _, la := range lines {
		if round(la.peak) > 0 || round(la.exit) > 0 {
			all = append(all, la)
		}
	}
	byPeak := func(x, y *lineAcc) int {
		return cmp.Or(cmp.Compare(y.peak, x.peak), cmp.Compare(y.exit, x.exit), strings.Compare(x.f.key(), y.f.key()))
	}
	slices.SortFunc(all, byPeak)
	keep := all[:min(n, len(all))]
	// The largest at exit too, where the peak's list leaves them out
	// (a line whose blocks were made after the peak and kept).
	byExit := slices.Clone(all)
	slices.SortFunc(byExit, func(x, y *lineAcc) int { return cmp.Or(cmp.Compare(y.exit, x.exit), byPeak(x, y)) })
	for _, la := range byExit[:min(n, len(byExit))] {
		if round(la.exit) > 0 && !slices.Contains(keep, la) {
			keep = append(keep, la)
		}
	}
	slices.SortFunc(keep, byPeak)
	out.Lines = make([]schema.SitesPyLine, 0, len(keep))
	out.PeakBytes, out.ExitBytes = round(peak), round(exit)
	for _, la := range keep {
		out.Lines = append(out.Lines, schema.SitesPyLine{Function: la.f.fn, File: la.f.file, Line: la.f.line,
			PeakBytes: round(la.peak), PeakBytesSE: round(math.Sqrt(la.peakVar)), PeakPct: pct(round(la.peak), out.PeakBytes),
			ExitBytes: round(la.exit), ExitPct: pct(round(la.exit), out.ExitBytes), Via: la.via})
	}
	out.LibraryPeakBytes, out.LibraryExitBytes = round(libPeak), round(libExit)
	out.NativePeakBytes, out.NativeExitBytes = round(natPeak), round(natExit)
	out.PymallocPeakBytes = round(pym)
	return &out
}
