package sites

import (
	"cmp"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// weight is what one sampled block stands for: 1/p blocks and size/p
// bytes, p = 1 - exp(-size/rate) its chance of being sampled (Go's and
// tcmalloc's unbiased scaling); the block itself at rate 1.
func weight(size, rate uint64) (objects, bytes float64) {
	if rate <= 1 || size == 0 {
		return 1, float64(size)
	}
	p := -math.Expm1(-float64(size) / float64(rate))
	return 1 / p, float64(size) / p
}

func bySeq(a, b event) int { return cmp.Compare(a.seq, b.seq) }

// acc is one stack's figures.
type acc struct {
	allocObj, allocBytes float64
	peakObj, peakBytes   float64
	exitObj, exitBytes   float64
	tempObj              float64
}

// live is a sampled block not yet freed.
type live struct {
	stack      uint64
	kind       uint8
	obj, bytes float64
}

// replayed is one image's events played in order.
type replayed struct {
	im       *image
	byStack  map[uint64]*acc
	peak     float64 // in-use bytes at the peak
	peakObj  float64
	peakSeq  uint64
	peakNs   uint64
	exit     float64
	exitObj  float64
	temp     float64
	sampled  int64
	heapMaps []mapping // [heap], for the arena split
}

// replay plays im's events in seq order: what each stack allocated, what
// was in use at the peak of the in-use bytes and at the end, and the
// temporary blocks.
func replay(im *image) *replayed {
	// Each thread's records are in order; the file interleaves threads.
	if !slices.IsSortedFunc(im.events, bySeq) {
		slices.SortFunc(im.events, bySeq)
	}
	r := &replayed{im: im, byStack: map[uint64]*acc{}}
	get := func(h uint64) *acc {
		a := r.byStack[h]
		if a == nil {
			a = &acc{}
			r.byStack[h] = a
		}
		return a
	}
	blocks := map[uint64]live{}
	var inUse, inObj float64
	for _, e := range im.events {
		if !e.free {
			o, b := weight(e.size, im.rate)
			if old, ok := blocks[e.addr]; ok {
				// A free the library did not see (a block freed by
				// an allocator call it does not wrap): forget it.
				inUse -= old.bytes
				inObj -= old.obj
			}
			blocks[e.addr] = live{stack: e.stack, kind: e.kind, obj: o, bytes: b}
			a := get(e.stack)
			a.allocObj += o
			a.allocBytes += b
			r.sampled++
			inUse += b
			inObj += o
			if inUse > r.peak {
				r.peak, r.peakObj, r.peakSeq, r.peakNs = inUse, inObj, e.seq, e.tNs
			}
			continue
		}
		l, ok := blocks[e.addr]
		if !ok || (e.flags&flagMunmap != 0) != (l.kind == kindMmap) {
			continue // not sampled, or made before the library started
		}
		delete(blocks, e.addr)
		inUse -= l.bytes
		inObj -= l.obj
		if e.flags&flagTemporary != 0 {
			get(l.stack).tempObj += l.obj
			r.temp += l.obj
		}
	}
	r.exit, r.exitObj = inUse, inObj
	for _, l := range blocks {
		a := get(l.stack)
		a.exitObj += l.obj
		a.exitBytes += l.bytes
	}
	// Again, to the peak: the blocks in use then.
	blocks = map[uint64]live{}
	for _, e := range im.events {
		if e.seq > r.peakSeq {
			break
		}
		if !e.free {
			o, b := weight(e.size, im.rate)
			blocks[e.addr] = live{stack: e.stack, kind: e.kind, obj: o, bytes: b}
			continue
		}
		if l, ok := blocks[e.addr]; ok && (e.flags&flagMunmap != 0) == (l.kind == kindMmap) {
			delete(blocks, e.addr)
		}
	}
	for _, l := range blocks {
		a := get(l.stack)
		a.peakObj += l.obj
		a.peakBytes += l.bytes
	}
	if len(im.maps) > 0 {
		for _, m := range parseMaps(im.maps[len(im.maps)-1]) {
			if m.path == "[heap]" {
				r.heapMaps = append(r.heapMaps, m)
			}
		}
	}
	return r
}

// heapInUseAt is the bytes of the C allocator's arena blocks in use at
// tNs (since the image started): in the brk heap (main) and elsewhere
// (the other arenas).
func (r *replayed) heapInUseAt(tNs uint64) (main, others float64) {
	blocks := map[uint64]live{}
	for _, e := range r.im.events {
		if e.tNs > tNs {
			break
		}
		if !e.free {
			_, b := weight(e.size, r.im.rate)
			blocks[e.addr] = live{kind: e.kind, bytes: b}
			continue
		}
		if l, ok := blocks[e.addr]; ok && (e.flags&flagMunmap != 0) == (l.kind == kindMmap) {
			delete(blocks, e.addr)
		}
	}
	for addr, l := range blocks {
		if l.kind != kindHeap {
			continue
		}
		inBrk := false
		for _, m := range r.heapMaps {
			if addr >= m.start && addr < m.end {
				inBrk = true
				break
			}
		}
		if inBrk {
			main += l.bytes
		} else {
			others += l.bytes
		}
	}
	return main, others
}

// stripped drops the leading frames of the recorder itself (its
// wrappers) from a stack named by sym.
func stripped(pcs []uint64, maps []mapping, libName string) []uint64 {
	for len(pcs) > 0 {
		i := sort.Search(len(maps), func(i int) bool { return maps[i].end > pcs[0] })
		if i == len(maps) || maps[i].start > pcs[0] || filepath.Base(maps[i].path) != libName {
			break
		}
		pcs = pcs[1:]
	}
	return pcs
}

// allocatorFrame says whether a frame is the allocator's rather than the
// program's: the site is the first frame that is not.
func allocatorFrame(f frame) bool {
	base := filepath.Base(f.obj)
	switch {
	case strings.HasPrefix(f.fn, "operator new"), strings.HasPrefix(f.fn, "operator delete"):
		return true
	case strings.HasPrefix(base, "libc.so"), strings.HasPrefix(base, "libstdc++.so"), strings.HasPrefix(base, "libgcc_s.so"):
		return true
	}
	return false
}
