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

// orderBySeq sorts an image's events by seq. Each thread's records are
// in order and the file interleaves threads' buffers; the library numbers
// every record it writes, so the seqs are usually dense, each once, and a
// cycle of swaps puts each event at seq - lowest in linear time (sorting
// 20 million events with slices.SortFunc took most of the analysis).
// Where they are not dense (a buffer lost), it sorts.
func orderBySeq(ev []event) {
	if len(ev) == 0 || slices.IsSortedFunc(ev, bySeq) {
		return
	}
	lo, hi := ev[0].seq, ev[0].seq
	for i := range ev {
		lo, hi = min(lo, ev[i].seq), max(hi, ev[i].seq)
	}
	if hi-lo+1 != uint64(len(ev)) {
		slices.SortFunc(ev, bySeq)
		return
	}
	for i := range ev {
		for ev[i].seq-lo != uint64(i) {
			j := ev[i].seq - lo
			if ev[j].seq == ev[i].seq { // a seq twice: not dense after all
				slices.SortFunc(ev, bySeq)
				return
			}
			ev[i], ev[j] = ev[j], ev[i]
		}
	}
}

// acc is one stack's figures.
type acc struct {
	allocObj, allocBytes float64
	peakObj, peakBytes   float64
	exitObj, exitBytes   float64
	tempObj              float64
}

// replayed is one image's events played in order.
type replayed struct {
	im      *image
	byStack map[uint64]*acc
	peak    float64 // in-use bytes at the peak
	peakObj float64
	peakSeq uint64
	peakNs  uint64
	exit    float64
	exitObj float64
	temp    float64
	sampled int64
	// freedBy[i] is the index of the event that freed events[i] (an
	// allocation), or -1 while it lives.
	freedBy  []int32
	heapMaps []mapping // [heap], for the arena split
}

// freed says whether the free e ends the block l: a munmap ends only the
// program's mapping, a free only the allocator's block.
func freed(e, l *event) bool { return (e.flags&flagMunmap != 0) == (l.kind == kindMmap) }

// replay plays im's events in seq order: what each stack allocated, what
// was in use at the peak of the in-use bytes and at the end, and the
// temporary blocks. One pass with a map of the live blocks links each
// allocation to its free; the views at a moment are then scans.
func replay(im *image) *replayed {
	orderBySeq(im.events)
	r := &replayed{im: im, byStack: map[uint64]*acc{}, freedBy: make([]int32, len(im.events))}
	get := func(h uint64) *acc {
		a := r.byStack[h]
		if a == nil {
			a = &acc{}
			r.byStack[h] = a
		}
		return a
	}
	live := map[uint64]int32{}
	var inUse, inObj float64
	for i := range im.events {
		e := &im.events[i]
		r.freedBy[i] = -1
		if !e.free {
			o, b := weight(e.size, im.rate)
			if old, ok := live[e.addr]; ok {
				// A free the library did not see (a block freed by
				// an allocator call it does not wrap): end it here.
				oo, ob := weight(im.events[old].size, im.rate)
				inUse -= ob
				inObj -= oo
				r.freedBy[old] = int32(i)
			}
			live[e.addr] = int32(i)
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
		j, ok := live[e.addr]
		if !ok || !freed(e, &im.events[j]) {
			continue // not sampled, or made before the library started
		}
		delete(live, e.addr)
		r.freedBy[j] = int32(i)
		l := &im.events[j]
		o, b := weight(l.size, im.rate)
		inUse -= b
		inObj -= o
		if e.flags&flagTemporary != 0 {
			get(l.stack).tempObj += o
			r.temp += o
		}
	}
	r.exit, r.exitObj = inUse, inObj
	for i := range im.events {
		e := &im.events[i]
		if e.free {
			continue
		}
		o, b := weight(e.size, im.rate)
		f := r.freedBy[i]
		if f < 0 {
			a := get(e.stack)
			a.exitObj += o
			a.exitBytes += b
		}
		if e.seq <= r.peakSeq && (f < 0 || im.events[f].seq > r.peakSeq) {
			a := get(e.stack)
			a.peakObj += o
			a.peakBytes += b
		}
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
	for i := range r.im.events {
		e := &r.im.events[i]
		if e.free || e.kind != kindHeap || e.tNs > tNs {
			continue
		}
		if f := r.freedBy[i]; f >= 0 && r.im.events[f].tNs <= tNs {
			continue
		}
		_, b := weight(e.size, r.im.rate)
		inBrk := false
		for _, m := range r.heapMaps {
			if e.addr >= m.start && e.addr < m.end {
				inBrk = true
				break
			}
		}
		if inBrk {
			main += b
		} else {
			others += b
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
