package sites

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"

	"memprobe/internal/atomicfile"
	"memprobe/schema"
)

// named is a stack symbolized: its program counters without the
// recorder's frames, each named, and the site (the first frame that is
// not the allocator's).
type named struct {
	// frames are the stack's functions, innermost first: one or more a
	// program counter (functions inlined into another), pcs[i] the
	// program counter of frames[i].
	pcs    []uint64
	frames []frame
	site   int // index in frames; len(frames) when every frame is the allocator's
}

// siteStack is the stack a report shows: the site's frame and up to
// seven of its callers.
func (n *named) siteStack() []string {
	st := []string{}
	for _, fr := range n.frames[min(n.site, len(n.frames)):] {
		if len(st) == 8 {
			break
		}
		st = append(st, fr.fn)
	}
	return st
}

// unnamedFrames are, of the first k frames from the site, the first
// named by address of each object, but for the C and C++ runtimes'
// (allocatorFrame): theirs below the site are start-up and threads'
// (__libc_start_call_main, static in Debian's stripped libc).
func (n *named) unnamedFrames(k int) []frame {
	var out []frame
	for _, fr := range n.frames[min(n.site, len(n.frames)):] {
		if k == 0 {
			break
		}
		k--
		if fr.unnamed && !allocatorFrame(fr) && !slices.ContainsFunc(out, func(o frame) bool { return o.obj == fr.obj }) {
			out = append(out, fr)
		}
	}
	return out
}

func (n *named) siteFrame() frame {
	if n.site < len(n.frames) {
		return n.frames[n.site]
	}
	if len(n.frames) > 0 {
		return n.frames[0]
	}
	return frame{fn: "(no stack)"}
}

// builder collects the stacks of every image into three profiles.
type builder struct {
	sym     *symbolizer
	libName string
	kinds   map[string]*profile.Profile
	locs    map[string]*profile.Location // image maps key + pc
	funcs   map[string]*profile.Function
	maps    map[string]*profile.Mapping
}

func newBuilder(libName string, rate uint64) *builder {
	b := &builder{sym: newSymbolizer(), libName: libName, kinds: map[string]*profile.Profile{},
		locs: map[string]*profile.Location{}, funcs: map[string]*profile.Function{}, maps: map[string]*profile.Mapping{}}
	period := int64(rate)
	mk := func(a, b, def string) *profile.Profile {
		return &profile.Profile{
			SampleType:        []*profile.ValueType{{Type: a, Unit: "count"}, {Type: b, Unit: "bytes"}},
			DefaultSampleType: def,
			PeriodType:        &profile.ValueType{Type: "space", Unit: "bytes"},
			Period:            period,
		}
	}
	b.kinds[schema.SitesAlloc] = mk("alloc_objects", "alloc_space", "alloc_space")
	b.kinds[schema.SitesPeak] = mk("inuse_objects", "inuse_space", "inuse_space")
	b.kinds[schema.SitesExit] = mk("inuse_objects", "inuse_space", "inuse_space")
	return b
}

// name symbolizes one stack of an image.
func (b *builder) name(maps []mapping, pcs []uint64) *named {
	pcs = stripped(pcs, maps, b.libName)
	n := &named{}
	for _, pc := range pcs {
		for _, f := range b.sym.frames(maps, pc) {
			n.pcs = append(n.pcs, pc)
			n.frames = append(n.frames, f)
		}
	}
	n.site = len(n.frames)
	for i, f := range n.frames {
		if !allocatorFrame(f) {
			n.site = i
			break
		}
	}
	return n
}

// add puts one stack's figures of an image into the profiles. The stack
// starts at its site, as Go's heap profiles start at the allocating
// function: the allocator's frames (operator new, the C library's, the
// C++ library's inlined templates) would take every byte's flat share.
func (b *builder) add(pid int, n *named, a *acc) {
	fs, pcs := n.frames, n.pcs
	if n.site < len(fs) {
		fs, pcs = fs[n.site:], pcs[n.site:]
	}
	locs := make([]*profile.Location, 0, len(fs))
	for i := 0; i < len(fs); {
		j := i + 1
		for j < len(fs) && pcs[j] == pcs[i] {
			j++
		}
		locs = append(locs, b.location(pcs[i], fs[i:j]))
		i = j
	}
	lbl := map[string][]int64{"pid": {int64(pid)}}
	put := func(kind string, obj, bytes float64) {
		if bytes <= 0 && obj <= 0 {
			return
		}
		p := b.kinds[kind]
		p.Sample = append(p.Sample, &profile.Sample{Location: locs, Value: []int64{round(obj), round(bytes)}, NumLabel: lbl})
	}
	put(schema.SitesAlloc, a.allocObj, a.allocBytes)
	put(schema.SitesPeak, a.peakObj, a.peakBytes)
	put(schema.SitesExit, a.exitObj, a.exitBytes)
}

func round(v float64) int64 { return int64(math.Round(v)) }

// location is pc's location in the profiles, its lines the functions fs
// (innermost first: pprof's order for inlined functions).
func (b *builder) location(pc uint64, fs []frame) *profile.Location {
	f := fs[0]
	var m *profile.Mapping
	if f.m != nil {
		key := fmt.Sprintf("%x-%x %s", f.m.start, f.m.end, f.m.path)
		m = b.maps[key]
		if m == nil {
			m = &profile.Mapping{ID: uint64(len(b.maps) + 1), Start: f.m.start, Limit: f.m.end, Offset: f.m.offset, File: f.m.path, HasFunctions: true}
			if o := b.sym.objs[f.m.path]; o != nil {
				m.BuildID = o.buildID
				m.HasFilenames, m.HasLineNumbers = o.dw != nil, o.dw != nil
			}
			b.maps[key] = m
		}
	}
	// One pc may stand for more or fewer lines: a stack that starts at
	// an inlined site drops the allocator's lines above it.
	key := strconv.FormatUint(pc, 16) + " " + strconv.Itoa(len(fs)) + " " + f.obj
	if l := b.locs[key]; l != nil {
		return l
	}
	l := &profile.Location{ID: uint64(len(b.locs) + 1), Address: pc - 1, Mapping: m}
	for _, f := range fs {
		fkey := f.fn + "\x00" + f.file
		fn := b.funcs[fkey]
		if fn == nil {
			// A Python frame's system name differs from its name, so
			// that pprof takes the name as demangled already: it
			// strips "<...>" from a name that looks like C++'s
			// ("<module>", "<listcomp>").
			sys := f.fn
			if f.obj == pyObj {
				sys = "py:" + f.fn
			}
			fn = &profile.Function{ID: uint64(len(b.funcs) + 1), Name: f.fn, SystemName: sys, Filename: f.file}
			b.funcs[fkey] = fn
		}
		l.Line = append(l.Line, profile.Line{Function: fn, Line: int64(f.line)})
	}
	b.locs[key] = l
	return l
}

var profileKinds = []string{schema.SitesAlloc, schema.SitesPeak, schema.SitesExit}

func profileName(kind string) string { return "sites-" + kind + ".pb.gz" }

// ProfileNames are the names of the files Analyze writes to its OutDir.
func ProfileNames() []string {
	var out []string
	for _, k := range profileKinds {
		out = append(out, profileName(k))
	}
	return out
}

// write writes the three profiles to dir as sites-KIND.pb.gz.
func (b *builder) write(dir string) ([]schema.SitesProfile, error) {
	ms := make([]*profile.Mapping, 0, len(b.maps))
	for _, m := range b.maps {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].ID < ms[j].ID })
	ls := make([]*profile.Location, 0, len(b.locs))
	for _, l := range b.locs {
		ls = append(ls, l)
	}
	sort.Slice(ls, func(i, j int) bool { return ls[i].ID < ls[j].ID })
	fs := make([]*profile.Function, 0, len(b.funcs))
	for _, f := range b.funcs {
		fs = append(fs, f)
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i].ID < fs[j].ID })
	out := []schema.SitesProfile{}
	for _, kind := range profileKinds {
		p := b.kinds[kind]
		p.Mapping, p.Location, p.Function = ms, ls, fs
		if err := p.CheckValid(); err != nil {
			return nil, fmt.Errorf("the %s profile: %w", kind, err)
		}
		path := filepath.Join(dir, profileName(kind))
		var sb strings.Builder
		if err := p.Write(&sb); err != nil {
			return nil, err
		}
		if err := atomicfile.WriteBytes(path, []byte(sb.String())); err != nil {
			return nil, err
		}
		out = append(out, schema.SitesProfile{Kind: kind, Path: path})
	}
	return out, nil
}

// readProfile reads a pprof file (for tests and the diff).
func readProfile(path string) (*profile.Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return profile.Parse(f)
}
