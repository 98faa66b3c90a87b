package sites

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// Python frames (docs/python-sites.md): the library records, per sample,
// the code object and instruction offset of each of the thread's CPython
// frames (preload/python.c), and once per code object its names and
// location table. Here the instruction offsets become lines, and the
// Python frames take the place of the interpreter's eval-loop frames in
// the native stack.

// PyCode is a CPython (3.11+) code object as the library copies it.
type PyCode struct {
	// Addr is the object's address in the process: with an instruction
	// offset, a Python frame's stand-in program counter.
	Addr      uint64
	File      string
	QualName  string
	FirstLine int
	// LineTable is co_linetable: CPython 3.11's location table
	// (Objects/locations.md), which maps code units to lines.
	LineTable []byte
}

// Line is the source line of the instruction at instrOffset (in code
// units, as the library records it): -1 where the table says the
// instruction has none, or ends before it. As CPython's
// PyCode_Addr2Line: each entry covers 1 to 8 code units and moves the
// line by a delta; "no location" entries leave the running line alone.
func (c *PyCode) Line(instrOffset uint32) int {
	t := c.LineTable
	line, addr := c.FirstLine, uint64(0)
	for i := 0; i < len(t); {
		b := t[i]
		if b&0x80 == 0 {
			return -1 // not an entry's first byte: a table this code does not know
		}
		code := b >> 3 & 15
		length := uint64(b&7) + 1
		switch {
		case code == 13 || code == 14: // no columns; long form
			line += svarint(t[i+1:])
		case code >= 10 && code <= 12: // one line: the delta is in the code
			line += int(code) - 10
		}
		if uint64(instrOffset) < addr+length {
			if code == 15 {
				return -1
			}
			return line
		}
		addr += length
		for i++; i < len(t) && t[i]&0x80 == 0; i++ {
		}
	}
	return -1
}

// varint reads the table's unsigned varint at the start of t: 6 bits a
// byte, least significant first, bit 6 set where more follow.
func varint(t []byte) uint64 {
	var v uint64
	for i, shift := 0, 0; i < len(t) && shift < 64; i, shift = i+1, shift+6 {
		v |= uint64(t[i]&63) << shift
		if t[i]&64 == 0 {
			break
		}
	}
	return v
}

// svarint is the signed varint: the sign in the lowest bit.
func svarint(t []byte) int {
	v := varint(t)
	if v&1 != 0 {
		return -int(v >> 1)
	}
	return int(v >> 1)
}

// PyFrame is one Python frame of a sample.
type PyFrame struct {
	Code *PyCode
	// Instr is the current instruction's offset, in code units.
	Instr uint32
	// Entry marks the outermost frame of one call of the eval loop (the
	// library's PY_ENTRY): the frames up to it, from the previous
	// Entry, are what one _PyEval_EvalFrameDefault frame of the native
	// stack ran.
	Entry bool
}

// pyObj is the obj of a Python frame: no file is mapped for it.
const pyObj = "[python]"

// frame is f as a frame of the stack: its qualified name at file:line.
func (f PyFrame) frame() frame {
	return frame{fn: f.Code.QualName, file: f.Code.File, line: f.Code.Line(f.Instr), obj: pyObj}
}

// pc is f's stand-in program counter: its code object's address and
// instruction, so that one line of one code object is one location.
func (f PyFrame) pc() uint64 { return f.Code.Addr + 2*uint64(f.Instr) + 1 }

// EvalRange is where the eval loop lies in a stripped interpreter, no
// symbol naming it: [Lo, Hi) in the ELF addresses of the file Obj (a
// frame's objAddr), one range for _PyEval_EvalFrameDefault and one for
// each of its .cold parts.
type EvalRange struct {
	Obj    string
	Lo, Hi uint64
}

// evalFrame says f is a frame of CPython's eval loop: named so (its
// .cold parts too), or in one of ranges.
func evalFrame(f frame, ranges []EvalRange) bool {
	if f.fn == "_PyEval_EvalFrameDefault" || strings.HasPrefix(f.fn, "_PyEval_EvalFrameDefault.") {
		return true
	}
	for _, r := range ranges {
		if f.objAddr != 0 && f.obj == r.Obj && f.objAddr >= r.Lo && f.objAddr < r.Hi {
			return true
		}
	}
	return false
}

// mergePython puts a sample's Python frames py (innermost first) into
// its native stack fs (innermost first, pcs[i] frames[i]'s program
// counter, as named keeps them): the k-th eval-loop frame from the
// innermost gives way to the k-th group of Python frames (up to an
// Entry), so the Python lines lead and the native frames above, below
// and between stay. Groups left over (the native stack was cut, or the
// eval loop could not be told: a stripped interpreter without ranges)
// follow the last eval-loop frame replaced, or where none was, go at
// the stack's outer end. Eval-loop frames left over (more calls of the
// loop than Python frames read) stay as they are.
func mergePython(fs []frame, pcs []uint64, py []PyFrame, ranges []EvalRange) ([]frame, []uint64) {
	if len(py) == 0 {
		return fs, pcs
	}
	var groups [][]PyFrame
	for start, i := 0, 0; i < len(py); i++ {
		if py[i].Entry || i == len(py)-1 {
			groups = append(groups, py[start:i+1])
			start = i + 1
		}
	}
	outF := make([]frame, 0, len(fs)+len(py))
	outP := make([]uint64, 0, len(fs)+len(py))
	put := func(g []PyFrame) {
		for _, p := range g {
			outF, outP = append(outF, p.frame()), append(outP, p.pc())
		}
	}
	last := -1 // in outF, the end of the last group put
	for i, f := range fs {
		if len(groups) > 0 && evalFrame(f, ranges) {
			put(groups[0])
			groups = groups[1:]
			last = len(outF)
			continue
		}
		outF, outP = append(outF, f), append(outP, pcs[i])
	}
	if len(groups) == 0 {
		return outF, outP
	}
	if last < 0 {
		last = len(outF)
	}
	tailF, tailP := append([]frame{}, outF[last:]...), append([]uint64{}, outP[last:]...)
	outF, outP = outF[:last], outP[:last]
	for _, g := range groups {
		put(g)
	}
	return append(outF, tailF...), append(outP, tailP...)
}

// maxFrames is the library's MAX_FRAMES: a stack of as many was cut.
const maxFrames = 64

// pyMerge is off only in TestPythonSitesPlanted: the frames are
// carried, and not merged.
var pyMerge = true

// pyFrames are the Python frames of stack h of im, innermost first; nil
// where it has none. A frame whose code object has no record (the
// records were cut) is left out.
func (im *image) pyFrames(h uint64) []PyFrame {
	refs := im.pyStacks[h]
	if len(refs) == 0 {
		return nil
	}
	out := make([]PyFrame, 0, len(refs))
	for _, r := range refs {
		c := im.codes[r.key]
		if c == nil {
			if len(out) > 0 && r.instr&pyEntry != 0 {
				out[len(out)-1].Entry = true
			}
			continue
		}
		out = append(out, PyFrame{Code: c, Instr: r.instr &^ pyEntry, Entry: r.instr&pyEntry != 0})
	}
	return out
}

// nameStack symbolizes stack h of im, its Python frames merged in where
// the eval loop's frames are (mergePython). The site stays the first
// frame that is not the allocator's, so the profiles keep the native
// frames above the Python ones; pySite is where a table's row starts.
// A stack whose Python frames outnumber the eval-loop frames that could
// be told (a frame in an eval loop's part that no symbol names: a
// stripped interpreter's .cold code) is unplaced: its Python frames
// went where mergePython puts groups left over.
func (b *builder) nameStack(im *image, maps []mapping, h uint64) (n *named, unplaced bool) {
	pcs := im.stacks[h]
	n = b.name(maps, pcs)
	py := im.pyFrames(h)
	if len(py) == 0 {
		return n, false
	}
	groups, loops := 0, 0
	for i, p := range py {
		if p.Entry || i == len(py)-1 {
			groups++
		}
	}
	for _, f := range n.frames {
		if evalFrame(f, nil) {
			loops++
		}
	}
	if !pyMerge {
		return n, false
	}
	n.frames, n.pcs = mergePython(n.frames, n.pcs, py, nil)
	n.site = len(n.frames)
	for i, f := range n.frames {
		if !allocatorFrame(f) {
			n.site = i
			break
		}
	}
	// A native stack the library cut (maxFrames) lacks its outer eval
	// loops: its groups left over belong at its end, where they go.
	return n, loops < groups && len(pcs) < maxFrames
}

// pySite is the index of n's innermost Python frame: a table's row
// (the Python line leads); -1 where it has none.
func (n *named) pySite() int {
	for i, f := range n.frames {
		if f.obj == pyObj {
			return i
		}
	}
	return -1
}

// rowFrame is the frame a table's row names: the innermost Python frame
// where the stack has one, else the site.
func (n *named) rowFrame() frame {
	if i := n.pySite(); i >= 0 {
		return n.frames[i]
	}
	return n.siteFrame()
}

// rowStack is the stack a table shows (at most 8 frames): from the
// innermost Python frame where the stack has one, else from the site.
func (n *named) rowStack() []string {
	i := n.pySite()
	if i < 0 {
		return n.siteStack()
	}
	st := []string{}
	for _, f := range n.frames[i:] {
		if len(st) == 8 {
			break
		}
		if f.obj == pyObj {
			st = append(st, fmt.Sprintf("%s (%s:%d)", f.fn, filepath.Base(f.file), f.line))
		} else {
			st = append(st, f.fn)
		}
	}
	return st
}

// rowNative is, for a stack with Python frames, its native frames from
// the site to the innermost Python frame (what the Python line called
// that allocated: c10::alloc_cpu ← at::empty ...), at most 8; nil
// otherwise.
func (n *named) rowNative() []string {
	i := n.pySite()
	if i < 0 {
		return nil
	}
	var st []string
	for _, f := range n.frames[min(n.site, i):i] {
		if len(st) == 8 {
			break
		}
		st = append(st, f.fn)
	}
	return st
}

// pyUnplacedWarnings say, per executable, how many stacks had Python
// frames the merge could not put at an eval-loop frame.
func pyUnplacedWarnings(m map[string]int) []string {
	var out []string
	for exe, k := range m {
		out = append(out, fmt.Sprintf("sites: %s: %d stacks had more Python frame groups than eval-loop frames named (_PyEval_EvalFrameDefault; a stripped interpreter's .cold parts are not named): their Python frames were put after the last eval-loop frame found, or at the stack's outer end", exe, k))
	}
	sort.Strings(out)
	return out
}
