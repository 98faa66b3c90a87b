package sites

import (
	"bufio"
	"debug/dwarf"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/ianlancetaylor/demangle"
)

// mapping is one line of /proc/PID/maps.
type mapping struct {
	start, end, offset uint64
	perms, path        string
}

// parseMaps reads a /proc/PID/maps text.
func parseMaps(text string) []mapping {
	var out []mapping
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		var m mapping
		var err1, err2, err3 error
		m.start, err1 = strconv.ParseUint(lo, 16, 64)
		m.end, err2 = strconv.ParseUint(hi, 16, 64)
		m.offset, err3 = strconv.ParseUint(f[2], 16, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		m.perms = f[1]
		if len(f) >= 6 {
			m.path = strings.Join(f[5:], " ")
		}
		out = append(out, m)
	}
	return out
}

// frame is a program counter named: its function, file and line where
// known, and the mapping it lies in.
type frame struct {
	fn   string
	file string
	line int
	// obj is the mapped file ("" for anonymous memory: JIT code).
	obj string
	// unnamed says fn is obj+0xADDR: obj was read, and no symbol of it
	// or its debug file names the function.
	unnamed bool
	// objAddr is the address in the file's ELF view (its symbol
	// tables' addresses).
	objAddr uint64
	m       *mapping
}

// key tells sites apart: a function at a file and line.
func (f frame) key() string { return f.fn + "\x00" + f.file + "\x00" + fmt.Sprint(f.line) }

// symbolizer names program counters from an image's maps and the ELF
// files they map. Files are opened once and shared by every image.
type symbolizer struct {
	objs map[string]*object
	// debugRoot is where separate debug files are looked up by build
	// ID (/usr/lib/debug); tests point it elsewhere.
	debugRoot string
}

// debugRoot is newSymbolizer's symbolizer.debugRoot.
var debugRoot = "/usr/lib/debug"

// debugFile is where a separate debug file of build ID id (over 2 hex
// digits) is looked for.
func (s *symbolizer) debugFile(id string) string {
	return filepath.Join(s.debugRoot, ".build-id", id[:2], id[2:]+".debug")
}

func newSymbolizer() *symbolizer {
	return &symbolizer{objs: map[string]*object{}, debugRoot: debugRoot}
}

// object is one ELF file's symbols and lines.
type object struct {
	path    string
	err     error
	buildID string
	loads   []elf.ProgHeader
	syms    []elf.Symbol // functions, by address
	// funcs are the functions' ranges from the unwind tables: the
	// start a function no symbol names is named by.
	funcs []fdeRange
	debug string // the separate debug file used, if any
	// symtab says the file or its debug file has a symbol table
	// (.symtab): stripped, a file has .dynsym's exported names only.
	symtab bool
	// dw is the DWARF (lines, inlined functions), read a program
	// counter at a time from its compilation unit (a library's whole
	// line table can be tens of millions of rows); nil without.
	dw    *dwarf.Data
	names map[dwarf.Offset]string // inlined.name's cache
	cache map[uint64][]frame      // at's
}

func (s *symbolizer) object(path string) *object {
	if o, ok := s.objs[path]; ok {
		return o
	}
	o := &object{path: path}
	s.objs[path] = o
	f, err := elf.Open(path)
	if err != nil {
		o.err = err
		return o
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			o.loads = append(o.loads, p.ProgHeader)
		}
	}
	o.buildID = buildID(f)
	o.funcs = funcRanges(f)
	o.addSymbols(f)
	o.addDWARF(f)
	// A separate debug file (Debian's -dbgsym packages) has the
	// .symtab and the DWARF a stripped library lacks.
	if o.buildID != "" && len(o.buildID) > 2 && (o.dw == nil || len(o.syms) == 0) {
		dp := s.debugFile(o.buildID)
		if df, err := elf.Open(dp); err == nil {
			o.debug = dp
			o.addSymbols(df)
			if o.dw == nil {
				o.addDWARF(df)
			}
			df.Close()
		}
	}
	sort.Slice(o.syms, func(i, j int) bool { return o.syms[i].Value < o.syms[j].Value })
	return o
}

func (o *object) addSymbols(f *elf.File) {
	if f.Section(".symtab") != nil {
		o.symtab = true
	}
	seen := map[uint64]bool{}
	for _, s := range o.syms {
		seen[s.Value] = true
	}
	for _, get := range []func() ([]elf.Symbol, error){f.Symbols, f.DynamicSymbols} {
		syms, _ := get()
		for _, sym := range syms {
			if elf.ST_TYPE(sym.Info) != elf.STT_FUNC || sym.Value == 0 || seen[sym.Value] {
				continue
			}
			seen[sym.Value] = true
			o.syms = append(o.syms, sym)
		}
	}
}

func (o *object) addDWARF(f *elf.File) {
	d, err := f.DWARF()
	if err != nil {
		return
	}
	o.dw, o.names = d, map[dwarf.Offset]string{}
}

// lineAt is the file and line of addr in its compilation unit cu ("" and
// 0 where the line table has none).
func (o *object) lineAt(cu *dwarf.Entry, addr uint64) (string, int) {
	lr, err := o.dw.LineReader(cu)
	if err != nil || lr == nil {
		return "", 0
	}
	var le dwarf.LineEntry
	if lr.SeekPC(addr, &le) != nil || le.File == nil {
		return "", 0
	}
	return le.File.Name, le.Line
}

// buildID is the hex of the file's GNU build ID note, "" without one.
func buildID(f *elf.File) string {
	s := f.Section(".note.gnu.build-id")
	if s == nil {
		return ""
	}
	b, err := s.Data()
	if err != nil || len(b) < 16 {
		return ""
	}
	// namesz, descsz, type, "GNU\0", desc
	nameSz := int(f.ByteOrder.Uint32(b))
	descSz := int(f.ByteOrder.Uint32(b[4:]))
	off := 12 + (nameSz+3)&^3
	if off+descSz > len(b) {
		return ""
	}
	return hex.EncodeToString(b[off : off+descSz])
}

// vaddr turns a file offset into the ELF address the symbols use.
func (o *object) vaddr(off uint64) (uint64, bool) {
	for _, p := range o.loads {
		if off >= p.Off && off < p.Off+p.Filesz {
			return off - p.Off + p.Vaddr, true
		}
	}
	return 0, false
}

// lookup names addr (an ELF address): the symbol that covers it, else
// the start of the function that holds it by the unwind tables,
// base+0xSTART (the ELF address objdump and addr2line take), so that
// every call site in one nameless function is one name (byStart); ""
// where neither knows it.
func (o *object) lookup(addr uint64) (fn, file string, line int, byStart bool) {
	fr, inFunc := funcAt(o.funcs, addr)
	i := sort.Search(len(o.syms), func(i int) bool { return o.syms[i].Value > addr }) - 1
	if i >= 0 {
		s := o.syms[i]
		// A symbol without a size (an assembler label, an import's
		// PLT address) covers addr unless the unwind tables put addr
		// in a function that starts after it.
		if addr < s.Value+s.Size || s.Size == 0 && (!inFunc || fr.start <= s.Value) {
			fn = demangle.Filter(s.Name)
		}
	}
	if fn == "" && inFunc {
		// The function the unwind tables put addr in: its symbol where
		// one starts it (a size that stops short), else its start.
		j := sort.Search(len(o.syms), func(j int) bool { return o.syms[j].Value >= fr.start })
		if j < len(o.syms) && o.syms[j].Value == fr.start {
			fn = demangle.Filter(o.syms[j].Name)
		} else {
			fn, byStart = fmt.Sprintf("%s+0x%x", filepath.Base(o.path), fr.start), true
		}
	}
	if o.dw != nil {
		if cu, err := o.dw.Reader().SeekPC(addr); err == nil && cu != nil {
			file, line = o.lineAt(cu, addr)
		}
	}
	return fn, file, line, byStart
}

// inlined is the chain of functions at addr (an ELF address) that the
// DWARF describes: the function whose code it is, then each function
// inlined into it down to the innermost, as (name, file, line) frames
// innermost first, each outer frame's line the call site of the one
// inside it. nil where the DWARF has no function at addr: the symbol
// table's name stands.
func (o *object) inlined(addr uint64) []frame {
	if o.dw == nil {
		return nil
	}
	r := o.dw.Reader()
	cu, err := r.SeekPC(addr)
	if err != nil || cu == nil {
		return nil
	}
	var files []*dwarf.LineFile
	if lr, err := o.dw.LineReader(cu); err == nil && lr != nil {
		files = lr.Files()
	}
	var chain []*dwarf.Entry
	depth := 0
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag == 0 {
			if depth--; depth < 0 {
				break
			}
			continue
		}
		in := false
		switch e.Tag {
		case dwarf.TagNamespace, dwarf.TagModule:
			in = true // functions may be defined inside
		case dwarf.TagSubprogram, dwarf.TagInlinedSubroutine, dwarf.TagLexDwarfBlock:
			rs, _ := o.dw.Ranges(e)
			for _, rg := range rs {
				if addr >= rg[0] && addr < rg[1] {
					in = true
					break
				}
			}
			if in && e.Tag != dwarf.TagLexDwarfBlock {
				chain = append(chain, e)
			}
		}
		switch {
		case in && e.Children:
			depth++
		case e.Children:
			r.SkipChildren()
		}
	}
	if len(chain) == 0 {
		return nil
	}
	out := make([]frame, 0, len(chain))
	file, line := o.lineAt(cu, addr)
	for i := len(chain) - 1; i >= 0; i-- {
		out = append(out, frame{fn: o.name(chain[i], 0), file: file, line: line})
		// The next frame out is at this one's call site.
		file, line = "", 0
		if idx, ok := chain[i].Val(dwarf.AttrCallFile).(int64); ok && idx >= 0 && int(idx) < len(files) && files[idx] != nil {
			file = files[idx].Name
		}
		if l, ok := chain[i].Val(dwarf.AttrCallLine).(int64); ok {
			line = int(l)
		}
	}
	return out
}

// name is a DWARF function's name: its linkage name demangled (a C++
// function's full name), else its name, else its abstract origin's or
// its declaration's.
func (o *object) name(e *dwarf.Entry, hops int) string {
	if n, ok := o.names[e.Offset]; ok {
		return n
	}
	n := ""
	if ln, ok := e.Val(dwarf.AttrLinkageName).(string); ok && ln != "" {
		n = demangle.Filter(ln)
	} else if ln, ok := e.Val(dwarf.AttrName).(string); ok && ln != "" {
		n = ln
	}
	for _, at := range []dwarf.Attr{dwarf.AttrAbstractOrigin, dwarf.AttrSpecification} {
		if n != "" || hops > 4 {
			break
		}
		if off, ok := e.Val(at).(dwarf.Offset); ok {
			r := o.dw.Reader()
			r.Seek(off)
			if d, err := r.Next(); err == nil && d != nil {
				n = o.name(d, hops+1)
			}
		}
	}
	if n == "" {
		n = "??"
	}
	o.names[e.Offset] = n
	return n
}

// frames names pc (a return address: the call is the byte before it)
// in maps, sorted by start: its function and, where the DWARF says so,
// the functions inlined into it, innermost first.
func (s *symbolizer) frames(maps []mapping, pc uint64) []frame {
	i := sort.Search(len(maps), func(i int) bool { return maps[i].end > pc })
	if i == len(maps) || maps[i].start > pc {
		return []frame{{fn: fmt.Sprintf("0x%x", pc)}}
	}
	m := &maps[i]
	if m.path == "" || strings.HasPrefix(m.path, "[") {
		return []frame{{fn: fmt.Sprintf("%s+0x%x", orAnon(m.path), pc-m.start), m: m, obj: m.path}}
	}
	o := s.object(m.path)
	off := pc - 1 - m.start + m.offset
	addr, objAddr := off, uint64(0) // the file offset where the ELF address is unknown
	var named []frame
	if o.err == nil {
		if va, ok := o.vaddr(off); ok {
			addr, objAddr = va, va
			named = o.at(va)
		}
	}
	out := make([]frame, max(len(named), 1))
	copy(out, named)
	for i := range out {
		out[i].obj, out[i].objAddr, out[i].m = m.path, objAddr, m
	}
	if last := &out[len(out)-1]; last.fn == "" {
		last.fn, last.unnamed = fmt.Sprintf("%s+0x%x", filepath.Base(m.path), addr), true
	}
	return out
}

// at is what the file says of addr (an ELF address), innermost first:
// the DWARF's chain of inlined functions, the outermost named by the
// symbol tables where the DWARF has no name for it ("" where neither
// has). Kept per address: a stack's frames recur in many stacks.
func (o *object) at(addr uint64) []frame {
	if fs, ok := o.cache[addr]; ok {
		return fs
	}
	fn, file, line, byStart := o.lookup(addr)
	fs := o.inlined(addr)
	if len(fs) == 0 {
		fs = []frame{{fn: fn, file: file, line: line, unnamed: byStart}}
	} else if last := &fs[len(fs)-1]; last.fn == "??" {
		last.fn, last.unnamed = fn, byStart
	}
	if o.cache == nil {
		o.cache = map[uint64][]frame{}
	}
	o.cache[addr] = fs
	return fs
}

func orAnon(p string) string {
	if p == "" {
		return "[anon]"
	}
	return p
}

// unnamedUse is an object's frames named by address in the sites
// listed: the sites (by frame key: one listed in two tables is one),
// and one such frame's name.
type unnamedUse struct {
	sites   map[string]bool
	example string
}

// unnamedWarnings says, for each object with frames named by address
// in the sites listed (the most sites first), why, and what would name
// them: Debian's binaries are stripped, their symbols are in -dbgsym
// packages installed under debugRoot.
func (s *symbolizer) unnamedWarnings(unnamed map[string]*unnamedUse) []string {
	objs := make([]string, 0, len(unnamed))
	for p := range unnamed {
		objs = append(objs, p)
	}
	sort.Slice(objs, func(i, j int) bool {
		if a, b := len(unnamed[objs[i]].sites), len(unnamed[objs[j]].sites); a != b {
			return a > b
		}
		return objs[i] < objs[j]
	})
	var out []string
	for _, p := range objs {
		u, o := unnamed[p], s.objs[p]
		n := len(u.sites)
		head := fmt.Sprintf("sites: %d %s listed %s frames in %s named by address (%s)", n, plural(n, "site", "sites"), plural(n, "has", "have"), p, u.example)
		var why string
		switch {
		case o == nil || o.err != nil:
			why = "the file could not be read"
			if o != nil {
				why += fmt.Sprintf(" (%v)", o.err)
			}
		case o.symtab || o.debug != "":
			why = "no symbol of it names those functions"
			if o.debug != "" {
				why = "no symbol of it or of its debug file " + o.debug + " names those functions"
			}
		case len(o.buildID) <= 2:
			why = "it is stripped, and has no build ID to find a debug file by"
		default:
			dp := s.debugFile(o.buildID)
			why = fmt.Sprintf("it is stripped, and its debug file %s is not there; its debug symbols name them (Debian: its package's -dbgsym, from the debian-debug archive; find-dbgsym-packages %s names it)", dp, p)
		}
		out = append(out, head+": "+why)
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
