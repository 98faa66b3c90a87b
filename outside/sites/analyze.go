package sites

import (
	"cmp"
	"math"
	"os"
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
	mapped               bool // the stack made a mapping of the program's own
	// The variances of the bytes estimates: a block of s bytes sampled
	// with chance p adds s²(1-p)/p² (Horvitz-Thompson's), 0 at rate 1.
	allocVar, peakVar, exitVar float64
}

// variance is what a sample of o objects and b bytes (weight's) adds to
// the variance of a bytes estimate: b²(1-p), p = 1/o.
func variance(o, b float64) float64 { return b * b * (1 - 1/o) }

// replayed is one image's events played in order.
type replayed struct {
	im      *image
	byStack map[uint64]*acc
	peak    float64 // in-use bytes at the peak
	// peakMapped is the part of peak in the program's own mappings.
	peakMapped float64
	peakObj    float64
	peakSeq    uint64
	peakNs     uint64
	exit       float64
	exitObj    float64
	temp       float64
	sampled    int64
	// commits and commitBytes are the ranges of reservations committed
	// by mprotect, and their bytes: allocations the library does not
	// count (every mprotect is recorded, so these are exact).
	commits     int64
	commitBytes float64
	// source says where peak and exit come from: "replay" (rate 1:
	// every block), "counted" (the library's count of every block's
	// usable size) or "sampled" (the estimate, where no count was
	// written).
	source string
	// freedBy[i] is the index of the event that freed events[i] (an
	// allocation), or -1 while it lives; for a mapping, the first event
	// that cut it (pieces says what was left).
	freedBy []int32
	// pieces are the sampled mappings and what munmaps left of them.
	pieces   []piece
	heapMaps []mapping // [heap], for the arena split
}

// piece is a sampled mapping of the program's, whole or what is left of
// it after munmaps cut it: the bytes [start, end) of the mapping asked
// for, live from the event from (its mmap, or the munmap that cut it) to
// the event to (the munmap that ended or cut it; -1 while it lives).
//
// The model of a cut: the munmap frees the piece it overlaps and the
// remaining head and tail go on as pieces of their own, with the
// mapping's site and its sample's weight per byte (the chance of
// sampling came from the mapping's whole size). A remaining piece counts
// in the bytes and blocks in use (a middle cut leaves two blocks), never
// in what was allocated, and its end is not a temporary block's.
type piece struct {
	alloc      int32 // the mapping's allocation event
	start, end uint64
	from, to   int32
}

// reservesInUse plants the reading before record version 4 (tests
// only): a PROT_NONE mapping in use, as any other.
var reservesInUse = false

// protectIsMapping plants an mprotect to access read as a new mapping
// (tests only): a change of access, as a JIT's code pages flip, is then
// an allocation, and ends what it covers.
var protectIsMapping = false

// munmapStartOnly plants the matching of record version 1 (tests only):
// a munmap ends the sampled mapping that starts at its address, all of
// it, and nothing else.
var munmapStartOnly = false

// allocObjects and allocBytes are every allocation of the image: the
// library's count (its wrapped allocator calls and anonymous mappings)
// and the commits of reservations by mprotect, which the peak and exit
// hold too (V8's heap: 258.6 MiB of node's 476.4 MiB in use at its
// peak, beside 340.6 MiB "allocated in all" without them).
func (r *replayed) allocObjects() int64 { return int64(r.im.allocs) + r.commits }
func (r *replayed) allocBytes() int64   { return int64(r.im.allocBytes) + int64(r.commitBytes) }

// pageSize is the kernel's unit of munmap: lengths are rounded up to it.
var pageSize = uint64(os.Getpagesize())

// pieceWeight is what a piece stands for: its mapping's blocks and its
// bytes at the mapping's weight per byte.
//
// A reservation's piece stands for nothing: it holds no memory.
func (r *replayed) pieceWeight(p *piece) (objects, bytes float64) {
	a := &r.im.events[p.alloc]
	if reserveKind(a.kind) {
		return 0, 0
	}
	o, b := r.im.weightOf(a)
	if n := p.end - p.start; n != a.size {
		b = b / float64(a.size) * float64(n)
	}
	return o, b
}

// replay plays im's events in seq order: what each stack allocated, what
// was in use at the peak of the in-use bytes and at the end, and the
// temporary blocks. One pass links each allocation to its free (a map of
// the live heap blocks by address, a sorted list of the live mapping
// pieces: replayer); the views at a moment are then scans (views).
func replay(im *image) *replayed {
	orderBySeq(im.events)
	for i := range im.events {
		switch k := &im.events[i].kind; {
		case reservesInUse && *k == kindReserve, protectIsMapping && *k == kindProtect:
			*k = kindMmap
		}
	}
	p := newReplayer(im)
	for i := range im.events {
		p.play(int32(i))
	}
	if n := len(im.events); n > 0 {
		p.mapAt[n-1] = p.mapIn
	}
	r := p.replayed
	r.exit, r.exitObj = p.inBytes, p.inObj
	v := &views{r: r}
	r.source = "replay"
	var heapPeak float64 // the count at the peak
	if im.rate > 1 {
		r.source = "sampled"
		if im.counted && im.countPeak > 0 {
			heapPeak = r.countedPeak(p.mapAt, v)
		}
	}
	v.all()
	if r.source == "counted" {
		v.scaleCounted(heapPeak)
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

// replayer is replay's pass over the events: the result it fills in and
// what is in use as it goes.
type replayer struct {
	*replayed
	// live are the live heap blocks by address: their allocation event.
	live map[uint64]int32
	// maps are the live pieces, by start; they do not overlap.
	maps []int32
	// inBytes and inObj are in use now; mapIn is the part of inBytes in
	// mapping pieces, mapAt[i] its value after event i (the count
	// leaves the mappings out).
	inBytes, inObj, mapIn float64
	mapAt                 []float64
	spans                 [][2]uint64 // commit's
}

func newReplayer(im *image) *replayer {
	return &replayer{
		replayed: &replayed{im: im, byStack: map[uint64]*acc{}, freedBy: make([]int32, len(im.events))},
		live:     map[uint64]int32{},
		mapAt:    make([]float64, len(im.events)),
	}
}

// accOf is stack h's figures, made on first use.
func (r *replayed) accOf(h uint64) *acc {
	a := r.byStack[h]
	if a == nil {
		a = &acc{}
		r.byStack[h] = a
	}
	return a
}

// play plays event i.
func (p *replayer) play(i int32) {
	if i > 0 {
		p.mapAt[i-1] = p.mapIn
	}
	e := &p.im.events[i]
	p.freedBy[i] = -1
	switch {
	case !e.free && e.kind == kindProtect:
		p.protect(i, e)
	case !e.free:
		p.alloc(i, e)
	case e.flags&flagMunmap != 0:
		p.munmap(i, e)
	default:
		p.free(i, e)
	}
}

// protect plays an mprotect to access: a commit where it covers a
// reservation; elsewhere a change of access (V8's code pages, writable,
// then executable), nothing in use that was not.
func (p *replayer) protect(i int32, e *event) {
	c, n := p.commit(i, e.addr, pagesEnd(e.addr, e.size))
	if n == 0 {
		return
	}
	p.commits += int64(n)
	p.commitBytes += c
	a := p.accOf(e.stack)
	a.mapped = true
	a.allocObj += float64(n)
	a.allocBytes += c
	p.sampled++
	p.inBytes += c
	p.inObj += float64(n)
	p.mapIn += c
	p.raise(e)
}

// alloc plays an allocation: a heap block or a mapping.
func (p *replayer) alloc(i int32, e *event) {
	o, b := p.im.weightOf(e)
	if mappingKind(e.kind) {
		// The kernel gave the range to this mapping: a sampled one
		// there was unmapped (MAP_FIXED) or moved (mremap, unseen). An
		// mprotect to none ends what it covers and leaves a
		// reservation.
		end := e.addr + e.size
		if e.kind == kindUnprotect {
			end = pagesEnd(e.addr, e.size)
		}
		p.cut(i, e.addr, pagesEnd(e.addr, e.size), false)
		p.insert(piece{alloc: i, start: e.addr, end: end, from: i, to: -1})
		if reserveKind(e.kind) {
			// Address space: a piece for the unexplained join, no
			// allocation, nothing in use.
			p.sampled++
			return
		}
		p.mapIn += b
	} else {
		if old, ok := p.live[e.addr]; ok {
			// A free the library did not see (a block freed by an
			// allocator call it does not wrap): end it here.
			oo, ob := weight(p.im.events[old].size, p.im.rate)
			p.inBytes -= ob
			p.inObj -= oo
			p.freedBy[old] = i
		}
		p.live[e.addr] = i
	}
	a := p.accOf(e.stack)
	a.mapped = a.mapped || e.kind == kindMmap
	a.allocObj += o
	a.allocBytes += b
	a.allocVar += variance(o, b)
	p.sampled++
	p.inBytes += b
	p.inObj += o
	p.raise(e)
}

// munmap plays a munmap. The kernel unmaps whole pages from a
// page-aligned address; any other munmap fails (EINVAL) and unmaps
// nothing. glibc's own mapped chunks (kindChunk) are not the program's to
// unmap: free ends them.
func (p *replayer) munmap(i int32, e *event) {
	switch {
	case e.addr%pageSize != 0 || e.size == 0:
	case munmapStartOnly:
		k := sort.Search(len(p.maps), func(k int) bool { return p.pieces[p.maps[k]].start >= e.addr })
		if k < len(p.maps) && p.pieces[p.maps[k]].start == e.addr {
			q := p.pieces[p.maps[k]]
			p.cut(i, q.start, q.end, e.flags&flagTemporary != 0)
		}
	default:
		p.cut(i, e.addr, pagesEnd(e.addr, e.size), e.flags&flagTemporary != 0)
	}
}

// free plays a free of a heap block: the sampled block there ends.
func (p *replayer) free(i int32, e *event) {
	j, ok := p.live[e.addr]
	if !ok {
		return // not sampled, or made before the library started
	}
	delete(p.live, e.addr)
	p.freedBy[j] = i
	l := &p.im.events[j]
	o, b := weight(l.size, p.im.rate)
	p.inBytes -= b
	p.inObj -= o
	if e.flags&flagTemporary != 0 {
		p.accOf(l.stack).tempObj += o
		p.temp += o
	}
}

// cut ends the live pieces that [lo, hi) overlaps at event i and starts
// what is left of each.
func (p *replayer) cut(i int32, lo, hi uint64, temporary bool) {
	k := sort.Search(len(p.maps), func(k int) bool { return p.pieces[p.maps[k]].end > lo })
	m := k
	var left []int32
	for ; m < len(p.maps) && p.pieces[p.maps[m]].start < hi; m++ {
		q := p.pieces[p.maps[m]]
		p.pieces[p.maps[m]].to = i
		if p.freedBy[q.alloc] < 0 {
			p.freedBy[q.alloc] = i
		}
		o, b := p.pieceWeight(&q)
		p.inBytes -= b
		p.inObj -= o
		p.mapIn -= b
		whole := lo <= q.start && hi >= q.end
		if whole && temporary && q.from == q.alloc && o > 0 {
			p.accOf(p.im.events[q.alloc].stack).tempObj += o
			p.temp += o
		}
		if whole {
			continue
		}
		for _, rest := range [2][2]uint64{{q.start, min(lo, q.end)}, {max(hi, q.start), q.end}} {
			if rest[0] >= rest[1] {
				continue
			}
			n := piece{alloc: q.alloc, start: rest[0], end: rest[1], from: i, to: -1}
			o, b := p.pieceWeight(&n)
			p.inBytes += b
			p.inObj += o
			p.mapIn += b
			left = append(left, int32(len(p.pieces)))
			p.pieces = append(p.pieces, n)
		}
	}
	p.maps = slices.Replace(p.maps, k, m, left...)
}

// raise makes the moment of event e the peak where in use is highest so
// far.
func (p *replayer) raise(e *event) {
	if p.inBytes > p.peak {
		p.peak, p.peakMapped, p.peakObj, p.peakSeq, p.peakNs = p.inBytes, p.mapIn, p.inObj, e.seq, e.tNs
	}
}

// insert starts piece q.
func (p *replayer) insert(q piece) {
	k := sort.Search(len(p.maps), func(k int) bool { return p.pieces[p.maps[k]].start > q.start })
	p.maps = slices.Insert(p.maps, k, int32(len(p.pieces)))
	p.pieces = append(p.pieces, q)
}

// commit makes what of the reservations [lo, hi) covers pieces of event
// i's: the bytes and pieces committed.
func (p *replayer) commit(i int32, lo, hi uint64) (bytes float64, n int) {
	p.spans = p.spans[:0]
	k := sort.Search(len(p.maps), func(k int) bool { return p.pieces[p.maps[k]].end > lo })
	for ; k < len(p.maps) && p.pieces[p.maps[k]].start < hi; k++ {
		if q := &p.pieces[p.maps[k]]; reserveKind(p.im.events[q.alloc].kind) {
			p.spans = append(p.spans, [2]uint64{max(lo, q.start), min(hi, q.end)})
		}
	}
	for _, sp := range p.spans {
		p.cut(i, sp[0], sp[1], false)
		p.insert(piece{alloc: i, start: sp[0], end: sp[1], from: i, to: -1})
		bytes += float64(sp[1] - sp[0])
	}
	return bytes, len(p.spans)
}

// countedPeak sets the peak where the library counted every block (source
// "counted") and returns the count then; v.window gets the moments near
// it.
//
// Sampled, the largest in-use estimate is biased high: over a long
// plateau it is the largest of many noisy values (+22 to +29 % on the
// stress program at 512 KiB). Where the library counted every block, the
// peak is its count's, when it came; the profile the blocks sampled then.
// The count is of usable sizes, the request rounded up to the allocator's
// size class (+8.6 % on Python's small objects): it is scaled by the
// sampled blocks' bytes asked for over their usable bytes, a ratio the
// samples estimate well (views.scaleCounted). The program's own mappings
// are not in the count: their estimate (mapAt, after each event) is
// added, and the peak is the moment where the two together are largest,
// the count's own peak or a sampled allocation's (its record holds the
// count then): a program may map most of its memory after its heap
// peaked (cc1's GC; TestPeakWithLateMappings).
func (r *replayed) countedPeak(mapAt []float64, v *views) (heapPeak float64) {
	im := r.im
	r.source = "counted"
	heapPeak = float64(im.countPeak)
	r.peakSeq, r.peakNs = im.countSeq, im.countNs
	best := heapPeak
	if k := sort.Search(len(im.events), func(k int) bool { return im.events[k].seq > im.countSeq }); k > 0 {
		best += mapAt[k-1]
	}
	for i := range im.events {
		if e := &im.events[i]; !e.free {
			if x := float64(e.count) + mapAt[i]; x > best {
				best, heapPeak, r.peakSeq, r.peakNs = x, float64(e.count), e.seq, e.tNs
			}
		}
	}
	// The end, where every thread has published its count, is a moment
	// of the run too: the counts the samples recorded lag by up to
	// PUBLISH a thread (TestPeakNotBelowExit).
	if n := len(im.events); n > 0 {
		if x := float64(im.countEnd) + mapAt[n-1]; x > best {
			best, heapPeak, r.peakSeq, r.peakNs = x, float64(im.countEnd), im.events[n-1].seq+1, max(im.endNs, im.events[n-1].tNs)
		}
	}
	r.peak, r.peakMapped, r.peakObj, r.exit = 0, 0, 0, 0
	for i := range im.events {
		if e := &im.events[i]; !e.free && float64(e.count)+mapAt[i] >= 0.99*best {
			v.window = append(v.window, e.seq)
		}
	}
	return heapPeak
}

// views adds each sampled block to the views at exit and at the peak.
type views struct {
	r *replayed
	// window are the sampled allocations made while the count (with the
	// mappings' estimate) was within 1 % of its peak: the peak profile is
	// the blocks sampled in use, averaged over those moments. A plateau
	// (the peak held while blocks come and go) gives many moments and an
	// estimate of each site's share far better than one moment's; a
	// sharp peak, few.
	window []uint64
	// asked and usable: the sampled heap blocks' bytes asked for and
	// their usable bytes, in use at the peak (averaged over the window)
	// and at exit.
	peakAsked, peakUsable, exitAsked, exitUsable float64
}

// all adds every sampled heap block and mapping piece to the views.
func (v *views) all() {
	r, im := v.r, v.r.im
	for i := range im.events {
		if e := &im.events[i]; !e.free && heapKind(e.kind) {
			o, b := weight(e.size, im.rate)
			v.add(e.stack, false, o, b, o*float64(max(e.usable, e.size)), e.seq, r.freedBy[i])
		}
	}
	for k := range r.pieces {
		p := &r.pieces[k]
		o, b := r.pieceWeight(p)
		if o == 0 {
			continue // a reservation
		}
		v.add(im.events[p.alloc].stack, true, o, b, 0, im.events[p.from].seq, p.to)
	}
}

// liveShare is the share of the window's moments at which a block made
// at seq a and freed at f (never: ^0) was in use.
func (v *views) liveShare(a, f uint64) float64 {
	lo, _ := slices.BinarySearch(v.window, a)
	hi, _ := slices.BinarySearch(v.window, f)
	return float64(hi-lo) / float64(len(v.window))
}

// add adds a block (a heap block, or a piece of a mapping) live from seq
// from until event f (-1: to the end) to the views at exit and at the
// peak.
func (v *views) add(stack uint64, mmap bool, o, b, usable float64, from uint64, f int32) {
	r := v.r
	end := ^uint64(0)
	if f >= 0 {
		end = r.im.events[f].seq
	} else {
		a := r.accOf(stack)
		a.exitObj += o
		a.exitBytes += b
		a.exitVar += variance(o, b)
		switch {
		case !mmap:
			v.exitAsked += b
			v.exitUsable += usable
		case r.source == "counted":
			r.exit += b
		}
	}
	if len(v.window) > 0 {
		if sh := v.liveShare(from, end); sh > 0 {
			a := r.accOf(stack)
			a.peakObj += o * sh
			a.peakBytes += b * sh
			a.peakVar += variance(o, b) * sh * sh
			r.peakObj += o * sh
			v.atPeak(mmap, b*sh, usable*sh)
		}
	} else if from <= r.peakSeq && end > r.peakSeq {
		// No sample came while the count was near its peak: the blocks
		// in use at the count's moment. Where the count gives the peak,
		// a mapping's estimate is added to it, as above (a cc1 at the
		// default rate read 3.8 MB, its heap alone, beside a site of 14
		// MB of its GC's mappings).
		a := r.accOf(stack)
		a.peakObj += o
		a.peakBytes += b
		a.peakVar += variance(o, b)
		if r.source == "counted" {
			r.peakObj += o
			v.atPeak(mmap, b, usable)
		}
	}
}

// atPeak adds b bytes (usable of them usable) in use at the peak: to the
// peak for a mapping, to the heap blocks' asked and usable bytes for a
// heap block.
func (v *views) atPeak(mmap bool, b, usable float64) {
	if mmap {
		v.r.peak += b
		v.r.peakMapped += b
	} else {
		v.peakAsked += b
		v.peakUsable += usable
	}
}

// scaleCounted sets the counted peak and exit: the counts, scaled by
// their sampled blocks' bytes asked for over their usable bytes, with the
// mappings' estimates the views added.
func (v *views) scaleCounted(heapPeak float64) {
	r := v.r
	ratio := func(asked, usable float64) float64 {
		if asked <= 0 || usable <= 0 {
			return 1
		}
		return asked / usable
	}
	r.peak += heapPeak * ratio(v.peakAsked, v.peakUsable)
	r.exit += float64(max(r.im.countEnd, 0)) * ratio(v.exitAsked, v.exitUsable)
	// Scaled by their own samples' ratios, the two may still disagree by
	// a little: the peak is at least the end.
	r.peak = max(r.peak, r.exit)
}

// pagesEnd is the end of n bytes from a rounded up to whole pages, as
// the kernel maps and unmaps (the top of the address space where that
// overflows).
func pagesEnd(a, n uint64) uint64 {
	end := (a + n + pageSize - 1) &^ (pageSize - 1)
	if end < a || a+n < a {
		return ^uint64(0)
	}
	return end
}

// estimate is an estimate of the bytes of blocks in use: their sum over
// the samples, the sum of their variances, and how many samples.
type estimate struct {
	bytes, variance float64
	samples         int
}

func (u *estimate) add(o, b float64) {
	u.bytes += b
	u.variance += variance(o, b)
	u.samples++
}

// se is the estimate's standard error at rate (0 at rate 1): with no
// sample at all, one sample's worth, the rate (an estimate of 0 stands
// for up to about that much: no block was sampled, not none in use).
func (u estimate) se(rate uint64) float64 {
	if rate <= 1 {
		return 0
	}
	if u.samples == 0 {
		return float64(rate)
	}
	return math.Sqrt(u.variance)
}

// heapInUseAt is the bytes of the C allocator's arena blocks in use at
// tNs (since the image started): in the brk heap (main) and elsewhere
// (the other arenas); heaps, by the start of each 64 MiB heap the walk
// found, gets those of the blocks in it. The heap_info at a heap's start
// names its arena, but the records hold no memory to read it in: blocks
// are grouped by heap.
func (r *replayed) heapInUseAt(tNs uint64, heaps map[uint64]*estimate) (main, others estimate) {
	for i := range r.im.events {
		e := &r.im.events[i]
		if e.free || e.kind != kindHeap || e.tNs > tNs {
			continue
		}
		if f := r.freedBy[i]; f >= 0 && r.im.events[f].tNs <= tNs {
			continue
		}
		o, b := weight(e.size, r.im.rate)
		inBrk := false
		for _, m := range r.heapMaps {
			if e.addr >= m.start && e.addr < m.end {
				inBrk = true
				break
			}
		}
		if inBrk {
			main.add(o, b)
			continue
		}
		others.add(o, b)
		if h := heaps[e.addr&^(heapMaxBytes-1)]; h != nil {
			h.add(o, b)
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
	case strings.HasPrefix(f.file, "/usr/include/c++/"):
		// The C++ library's templates inlined into the program
		// (std::vector's storage, std::allocator): the site is the
		// program's code that used them.
		return true
	}
	return false
}
