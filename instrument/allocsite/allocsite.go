// Package allocsite says which code allocated on the Go heap during a window
// of a program's run, site by site, the way heaptrack and memray answer
// "what allocates": objects and bytes per call site, over a steady-state
// loop.
//
// It is an instrument of the probe beside [memprobe/instrument/rtstats]: rtstats
// counts every heap allocation of the process; allocsite names them, and
// tells the program's own allocations apart from the Go runtime's and the
// probe's:
//
//   - runtime: objects the runtime allocates for itself while the program
//     runs — a sudog when a goroutine blocks on a channel or a sync.Cond
//     and the per-P cache is empty (the GC empties the central cache every
//     cycle), an m and its g0 when the scheduler starts an OS thread, a g
//     for a goroutine when none can be reused. No change to the program's
//     code removes them, and they stop once the caches are warm.
//   - probe: allocations whose innermost frame in this module is in one of
//     Options.OwnPrefixes (the probe's progress lines, its sampler).
//   - program: everything else; the headline "allocations per step".
//
// A helper that allocates on its caller's behalf (Options.Helpers: the
// ledger's Make) is no site: its frames are passed over like the runtime's
// allocation entry points, so a buffer made through the ledger is the
// program's, at the line that asked for it, even though the ledger's
// package is the probe's.
//
// # Method
//
// A Window sets runtime.MemProfileRate to 1 (every allocation is recorded
// with its stack) unless the caller keeps another rate, then publishes the
// heap profile with runtime.GC and keeps each stack's cumulative counts.
// End publishes again and subtracts. One GC publishes everything allocated
// before it started: the runtime records an allocation made in GC cycle C
// in the cycle that the next mark termination closes, and runtime.GC
// flushes it after its sweep (runtime/mprof.go, mProf_PostSweep).
//
// Objects are counted as the heap profile records them: allocations under
// 16 bytes without pointers share 16-byte tiny blocks and count once per
// block (like /gc/heap/allocs:objects, unlike /gc/heap/tiny/allocs:objects),
// so a site making many tiny objects shows fewer objects than it made; a
// loop that makes any per step still shows a positive rate.
//
// What could make it wrong: at a rate other than 1 the counts are sampled
// and scaled (Report.Exact is false); stacks deeper than 32 frames are
// truncated at the outermost end (the site, the innermost end, is kept);
// the two GCs are themselves a perturbation: the one in Begin empties the
// central sudog cache, so the window may show runtime sudogs that a run
// without the instrument would have taken from the cache.
package allocsite

import (
	"cmp"
	"math"
	"runtime"
	"slices"
	"strings"

	"memprobe/schema"
)

// Classes of a Site.
const (
	Program = "program"
	Runtime = "runtime"
	Probe   = "probe"
)

// Options configure a Window.
type Options struct {
	// OwnPrefixes are function-name prefixes (package paths, e.g.
	// "memprobe/run/") whose allocations are the probe's own.
	OwnPrefixes []string
	// Helpers are function-name prefixes ("memprobe/ledger.") of
	// code that allocates for its caller: the site and the class are
	// decided by the first frame outside them.
	Helpers []string
	// Walks are function-name prefixes of the probe's walks of its own
	// process ("memprobe/instrument/reconcile."): what an allocation made
	// under one of them costs is also counted apart (Report.ProbeWalkBytes),
	// known to be the probe's by where it was made, not by its class.
	Walks []string
	// KeepRate leaves runtime.MemProfileRate as it is (a profile session
	// that writes heap profiles owns it); counts are then scaled samples.
	KeepRate bool
	// Top bounds Report.Sites; 0 means 20.
	Top int
}

// Site is one allocation site: the innermost frame that is not a runtime
// allocation entry point (schema.AllocSite).
type Site = schema.AllocSite

// Report is what a Window saw (schema.AllocSites). Sites is never nil.
type Report = schema.AllocSites

func perStep(v int64, steps int) float64 {
	if steps <= 0 {
		return 0
	}
	return float64(v) / float64(steps)
}

type counts struct{ objects, bytes int64 }

// Window is a measurement in progress: Begin, the loop, End.
type Window struct {
	o        Options
	prevRate int
	setRate  bool
	base     map[[32]uintptr]counts
	buf      []runtime.MemProfileRecord
}

// Begin starts a window. It runs a garbage collection; call it outside
// the code being measured.
func Begin(o Options) *Window {
	w := &Window{o: o}
	if !o.KeepRate && runtime.MemProfileRate != 1 {
		w.prevRate, w.setRate = runtime.MemProfileRate, true
		runtime.MemProfileRate = 1
	}
	runtime.GC()
	w.base = w.read()
	return w
}

// read returns the published profile's cumulative counts by stack.
func (w *Window) read() map[[32]uintptr]counts {
	n, _ := runtime.MemProfile(nil, true)
	for {
		if cap(w.buf) < n+50 {
			w.buf = make([]runtime.MemProfileRecord, n+50)
		}
		var ok bool
		n, ok = runtime.MemProfile(w.buf[:cap(w.buf)], true)
		if ok {
			break
		}
	}
	m := make(map[[32]uintptr]counts, n)
	for _, r := range w.buf[:n] {
		c := m[r.Stack0]
		c.objects += r.AllocObjects
		c.bytes += r.AllocBytes
		m[r.Stack0] = c
	}
	return m
}

// End closes the window over steps iterations of the loop (0 if there is
// no loop) and restores the profile rate. It runs a garbage collection.
func (w *Window) End(steps int) Report {
	runtime.GC()
	now := w.read()
	rate := runtime.MemProfileRate
	if w.setRate {
		runtime.MemProfileRate = w.prevRate
		w.setRate = false
	}
	rep := Report{MemProfileRate: rate, Exact: rate == 1, Steps: steps, Sites: []Site{}}
	bySite := map[siteKey]*Site{}
	for stk, c := range now {
		d := counts{c.objects - w.base[stk].objects, c.bytes - w.base[stk].bytes}
		if d.objects <= 0 {
			continue
		}
		if rate > 1 {
			d = scale(d, rate)
		}
		s := classify(stk[:], w.o.OwnPrefixes, w.o.Helpers)
		if strings.HasPrefix(s.Function, selfPrefix) {
			continue // the window's own bookkeeping
		}
		k := siteKey{s.Class, s.Function, s.File, s.Line, s.CalledFrom}
		if p, ok := bySite[k]; ok {
			p.Objects += d.objects
			p.Bytes += d.bytes
		} else {
			s.Objects, s.Bytes = d.objects, d.bytes
			bySite[k] = &s
		}
		switch s.Class {
		case Program:
			rep.ProgramObjects += d.objects
			rep.ProgramBytes += d.bytes
		case Runtime:
			rep.RuntimeObjects += d.objects
			rep.RuntimeBytes += d.bytes
		case Probe:
			rep.ProbeObjects += d.objects
			rep.ProbeBytes += d.bytes
			if underAny(stk[:], w.o.Walks) {
				rep.ProbeWalkBytes += d.bytes
			}
		}
	}
	sites := make([]Site, 0, len(bySite))
	for _, s := range bySite {
		s.ObjectsPerStep, s.BytesPerStep = perStep(s.Objects, steps), perStep(s.Bytes, steps)
		sites = append(sites, *s)
	}
	classOrder := map[string]int{Program: 0, Runtime: 1, Probe: 2}
	slices.SortFunc(sites, func(a, b Site) int {
		return cmp.Or(
			cmp.Compare(classOrder[a.Class], classOrder[b.Class]),
			cmp.Compare(b.Objects, a.Objects),
			cmp.Compare(b.Bytes, a.Bytes),
			cmp.Compare(a.Function, b.Function),
			cmp.Compare(a.Line, b.Line),
		)
	})
	top := cmp.Or(w.o.Top, 20)
	if len(sites) > top {
		rep.SitesOmitted = len(sites) - top
		sites = sites[:top]
	}
	rep.Sites = sites
	return rep
}

// selfPrefix is this package's function-name prefix, e.g.
// "memprobe/instrument/allocsite.".
var selfPrefix = func() string {
	pc, _, _, _ := runtime.Caller(0)
	fn := runtime.FuncForPC(pc).Name()
	slash := strings.LastIndex(fn, "/")
	dot := strings.Index(fn[slash+1:], ".")
	return fn[:slash+1+dot+1]
}()

type siteKey struct {
	class, fn, file string
	line            int
	from            string
}

// scale undoes the sampling of a rate > 1, as pprof does for heap
// profiles: each sampled object stands for 1/(1−e^(−size/rate)) objects.
func scale(c counts, rate int) counts {
	if c.objects == 0 {
		return c
	}
	avg := float64(c.bytes) / float64(c.objects)
	f := 1 / (1 - math.Exp(-avg/float64(rate)))
	return counts{int64(float64(c.objects)*f + 0.5), int64(float64(c.bytes)*f + 0.5)}
}

// classify finds the site of one allocation stack and its class.
func classify(stk []uintptr, own, helpers []string) Site {
	n := slices.Index(stk, 0)
	if n < 0 {
		n = len(stk)
	}
	frames := runtime.CallersFrames(stk[:n])
	var fs []runtime.Frame
	for {
		f, more := frames.Next()
		if f.Function != "" {
			fs = append(fs, f)
		}
		if !more {
			break
		}
	}
	return classifyFrames(fs, own, helpers)
}

// underAny says whether a frame of stk is in a function with one of the
// prefixes.
func underAny(stk []uintptr, prefixes []string) bool {
	if len(prefixes) == 0 {
		return false
	}
	if n := slices.Index(stk, 0); n >= 0 {
		stk = stk[:n]
	}
	frames := runtime.CallersFrames(stk)
	for {
		f, more := frames.Next()
		if hasPrefix(f.Function, prefixes) {
			return true
		}
		if !more {
			return false
		}
	}
}

// classifyFrames does classify's work on symbolised frames, innermost
// first: the innermost frame that is neither an allocation entry point nor
// a helper is the site; a site in the runtime is a runtime allocation (with the frame that
// led to it); otherwise the innermost frame of this module outside the
// helpers says whether the program or the probe made it (the ledger sorting
// its snapshot for the probe is the probe's).
func classifyFrames(frames []runtime.Frame, own, helpers []string) Site {
	site := Site{Function: "(unknown)", Class: Runtime}
	found := false
	for _, f := range frames {
		if !found {
			if isEntryPoint(f.Function) || hasPrefix(f.Function, helpers) {
				continue
			}
			found = true
			site = Site{Function: f.Function, File: f.File, Line: f.Line, Class: Program}
			if isRuntime(f.Function) {
				site.Class = Runtime
			}
		}
		switch {
		case site.Class == Runtime && !isRuntime(f.Function) && !isRuntimeHelper(f.Function):
			site.CalledFrom = f.Function
			return site
		case site.Class != Runtime && isModule(f.Function, own) && !hasPrefix(f.Function, helpers):
			// A helper's own work (the ledger's Snapshot sorting) is
			// its caller's, as its allocations are.
			if hasPrefix(f.Function, own) {
				site.Class = Probe
			}
			return site
		}
	}
	return site
}

// isEntryPoint reports whether fn is one of the runtime functions through
// which compiled code allocates: the site is the frame that called it.
func isEntryPoint(fn string) bool {
	if strings.HasPrefix(fn, "internal/runtime/maps.") {
		return true // map growth on behalf of the caller's map write
	}
	name, ok := strings.CutPrefix(fn, "runtime.")
	if !ok {
		return false
	}
	for _, p := range []string{
		"mallocgc", "newobject", "gostring", "moveSlice", "newarray", "makeslice", "growslice", "makemap",
		"makechan", "convT", "concatstring", "rawstring", "rawbyteslice", "rawruneslice",
		"slicebytetostring", "stringtoslice", "slicerunetostring", "intstring",
		"mapassign", "profilealloc", "mProf_Malloc", "(*mcache)", "(*mheap)",
		"memclrNoHeapPointers", "reflect_unsafe_New", "unsafe_New", "mapaccess",
	} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// isRuntime reports whether fn belongs to the Go runtime itself.
func isRuntime(fn string) bool {
	return strings.HasPrefix(fn, "runtime.") || strings.HasPrefix(fn, "internal/runtime/") ||
		strings.HasPrefix(fn, "internal/sync.")
}

// isRuntimeHelper: standard-library frames between the runtime and the
// code that blocked (sync.(*Cond).Wait, time.Sleep, ...).
func isRuntimeHelper(fn string) bool {
	return strings.HasPrefix(fn, "sync.") || strings.HasPrefix(fn, "time.") || strings.HasPrefix(fn, "internal/")
}

func hasPrefix(fn string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(fn, p) {
			return true
		}
	}
	return false
}

// isModule reports whether fn is in the module of the own prefixes (the
// first path element of each), where the program/probe split is decided.
func isModule(fn string, own []string) bool {
	for _, p := range own {
		mod, _, _ := strings.Cut(p, "/")
		if mod != "" && strings.HasPrefix(fn, mod+"/") {
			return true
		}
	}
	return false
}
