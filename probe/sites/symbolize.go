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
	// objAddr is the address in the file's ELF view (its symbol
	// tables' addresses).
	objAddr uint64
	m       *mapping
}

// symbolizer names program counters from an image's maps and the ELF
// files they map. Files are opened once and shared by every image.
type symbolizer struct {
	objs map[string]*object
	// debugRoot is where separate debug files are looked up by build
	// ID (/usr/lib/debug); tests point it elsewhere.
	debugRoot string
}

func newSymbolizer() *symbolizer {
	return &symbolizer{objs: map[string]*object{}, debugRoot: "/usr/lib/debug"}
}

// object is one ELF file's symbols and lines.
type object struct {
	path    string
	err     error
	buildID string
	loads   []elf.ProgHeader
	syms    []elf.Symbol // functions, by address
	debug   string       // the separate debug file used, if any
	// dw is the DWARF (lines, inlined functions), read a program
	// counter at a time from its compilation unit (a library's whole
	// line table can be tens of millions of rows); nil without.
	dw    *dwarf.Data
	names map[dwarf.Offset]string // inlined.name's cache
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
	o.addSymbols(f)
	o.addDWARF(f)
	// A separate debug file (Debian's -dbgsym packages) has the
	// .symtab and the DWARF a stripped library lacks.
	if o.buildID != "" && len(o.buildID) > 2 && (o.dw == nil || len(o.syms) == 0) {
		dp := filepath.Join(s.debugRoot, ".build-id", o.buildID[:2], o.buildID[2:]+".debug")
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

// lookup names addr (an ELF address).
func (o *object) lookup(addr uint64) (fn, file string, line int) {
	i := sort.Search(len(o.syms), func(i int) bool { return o.syms[i].Value > addr }) - 1
	if i >= 0 {
		s := o.syms[i]
		if s.Size == 0 || addr < s.Value+s.Size {
			fn = demangle.Filter(s.Name)
		}
	}
	if o.dw != nil {
		if cu, err := o.dw.Reader().SeekPC(addr); err == nil && cu != nil {
			file, line = o.lineAt(cu, addr)
		}
	}
	return fn, file, line
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

// frames names pc (a return address) in maps: its function and, where
// the DWARF says so, the functions inlined into it, innermost first.
func (s *symbolizer) frames(maps []mapping, pc uint64) []frame {
	fr := s.frame(maps, pc)
	if fr.m == nil || fr.objAddr == 0 {
		return []frame{fr}
	}
	o := s.objs[fr.m.path]
	if o == nil {
		return []frame{fr}
	}
	in := o.inlined(fr.objAddr)
	if len(in) == 0 {
		return []frame{fr}
	}
	for i := range in {
		in[i].obj, in[i].objAddr, in[i].m = fr.obj, fr.objAddr, fr.m
	}
	// The outermost keeps the symbol table's name where the DWARF has
	// none for it.
	if last := &in[len(in)-1]; last.fn == "??" {
		last.fn = fr.fn
	}
	return in
}

// frame names pc (a return address: the call is the byte before it) in
// the mappings maps, sorted by start.
func (s *symbolizer) frame(maps []mapping, pc uint64) frame {
	i := sort.Search(len(maps), func(i int) bool { return maps[i].end > pc })
	if i == len(maps) || maps[i].start > pc {
		return frame{fn: fmt.Sprintf("0x%x", pc)}
	}
	m := &maps[i]
	fr := frame{m: m, obj: m.path}
	if m.path == "" || strings.HasPrefix(m.path, "[") {
		fr.fn = fmt.Sprintf("%s+0x%x", orAnon(m.path), pc-m.start)
		return fr
	}
	o := s.object(m.path)
	off := pc - 1 - m.start + m.offset
	if o.err == nil {
		if va, ok := o.vaddr(off); ok {
			fr.objAddr = va
			fr.fn, fr.file, fr.line = o.lookup(va)
		}
	}
	if fr.fn == "" {
		fr.fn = fmt.Sprintf("%s+0x%x", filepath.Base(m.path), off)
	}
	return fr
}

func orAnon(p string) string {
	if p == "" {
		return "[anon]"
	}
	return p
}
