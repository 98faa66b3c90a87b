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

// orderBySeq sorts an image's events held in memory (made up by tests;
// a file's are merged by run: image.each) by seq. Each thread's records are
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
	// goObj and goBytes are the Go runtime's mappings the replay left
	// out (image.goRuntime), scaled: not in what was allocated either.
	goObj, goBytes float64
	// source says where peak and exit come from: "replay" (rate 1:
	// every block), "counted" (the library's count of every block's
	// usable size) or "sampled" (the estimate, where no count was
	// written).
	source string
	// kept are the events the pieces refer to (their mmaps, munmaps and
	// mprotects), in seq order: a few beside the heap's.
	kept []event
	// pieces are the sampled mappings and what munmaps left of them.
	pieces   []piece
	heapMaps []mapping // [heap], for the arena split
	// useAt are the heap blocks in use at the moments asked for (the
	// arena split's walks), by time since the image started.
	useAt map[uint64]*heapUse
}

// block is a heap block's life: its allocation, and the seq and time of
// the event that ended it (end ^0 while it lives at the end).
type block struct {
	e          event
	end, endNs uint64
}

// heapUse is the heap blocks in use at a moment: in the brk heap (main)
// and elsewhere (others), and by the start of each 64 MiB heap asked for.
type heapUse struct {
	main, others estimate
	heaps        map[uint64]*estimate
	// ranges are the walk's unexplained ranges where the unexplained
	// join reads this moment (by start); inRanges, by stack, the heap
	// blocks in use that lie in them: blocks, bytes there, and the
	// ranges' resident bytes they cover, shared out by address, scaled.
	ranges   []WalkRange
	inRanges map[uint64]*[3]float64
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
	alloc      int32 // the mapping's allocation event, in kept
	start, end uint64
	from, to   int32 // in kept
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
func (r *replayed) allocObjects() int64 {
	return max(int64(r.im.allocs)+r.commits-int64(math.Round(r.goObj)), 0)
}
func (r *replayed) allocBytes() int64 {
	return max(int64(r.im.allocBytes)+int64(r.commitBytes)-int64(math.Round(r.goBytes)), 0)
}

// pageSize is the kernel's unit of munmap: lengths are rounded up to it.
var pageSize = uint64(os.Getpagesize())

// pieceWeight is what a piece stands for: its mapping's blocks and its
// bytes at the mapping's weight per byte.
//
// A reservation's piece stands for nothing: it holds no memory.
func (r *replayed) pieceWeight(p *piece) (objects, bytes float64) {
	a := &r.kept[p.alloc]
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
// temporary blocks; useAt (may be nil) the moments to find the heap
// blocks in use at. One pass links each allocation to its free (a map of
// the live heap blocks by address, a sorted list of the live mapping
// pieces: replayer); the memory it holds is theirs, not the events'.
//
// At rate 1 the peak is a moment of the replay, known at its end: a
// second pass adds each heap block, as it ends, to the views at the peak
// and at exit. Sampled, the blocks are few: one pass keeps them, and the
// views (over the window near the counted peak) follow.
func replay(im *image, useAt map[uint64]*heapUse) *replayed {
	if im.rate <= 1 {
		first := newReplayer(im)
		first.run()
		p := newReplayer(im)
		p.source = "replay"
		v := &views{r: p.replayed, peakSeq: first.peakSeq}
		p.useAt = useAt
		p.done = func(b *block) { v.block(b) }
		p.run()
		v.pieces()
		return p.replayed
	}
	p := newReplayer(im)
	var blocks []block
	p.done = func(b *block) { blocks = append(blocks, *b) }
	p.moments = []moment{}
	p.run()
	r := p.replayed
	v := &views{r: r}
	r.source = "sampled"
	var heapPeak float64 // the count at the peak
	if im.counted && im.countPeak > 0 {
		heapPeak = r.countedPeak(p.counts(), v)
	}
	v.peakSeq = r.peakSeq
	slices.SortFunc(blocks, func(a, b block) int { return cmp.Compare(a.e.seq, b.e.seq) })
	r.useAt = useAt
	for i := range blocks {
		v.block(&blocks[i])
	}
	v.pieces()
	if r.source == "counted" {
		v.scaleCounted(heapPeak)
	}
	return r
}

// scaleToCount makes the stacks' figures at the peak and at exit sum to
// the counted headline's. Where the library counted every block, the
// headline is its count and the stacks' figures are scaled samples: a
// small block sampled stands for the rate's bytes, and sort's leaks row
// read 512.4 KiB under a headline of 13.4 KiB at exit, git's top site
// 25.3 MiB above its 24.7 MiB peak. Each stack keeps its share of the
// sampled estimate; the bytes are the count's. Their variances scale by
// the square.
func (r *replayed) scaleToCount() {
	var peak, exit float64
	for _, a := range r.byStack {
		peak += a.peakBytes
		exit += a.exitBytes
	}
	fp, fe := 1.0, 1.0
	if peak > 0 {
		fp = r.peak / peak
	}
	if exit > 0 {
		fe = r.exit / exit
	}
	for _, a := range r.byStack {
		a.peakBytes *= fp
		a.peakVar *= fp * fp
		a.exitBytes *= fe
		a.exitVar *= fe * fe
	}
}

// run plays every event of the image and ends the blocks that live at
// the end.
func (p *replayer) run() {
	if err := p.im.each(p.play); err != nil && p.im.torn == "" {
		p.im.torn = err.Error()
	}
	for _, e := range p.live {
		if p.done != nil {
			p.done(&block{e: e, end: ^uint64(0)})
		}
	}
	p.exit, p.exitObj = p.inBytes, p.inObj
	if !p.afterCount && p.n > 0 {
		p.mapBefore, p.hasBefore = p.mapIn, true
	}
}

// replayer is replay's pass over the events: the result it fills in and
// what is in use as it goes.
type replayer struct {
	*replayed
	// live are the live heap blocks by address: their allocation.
	live map[uint64]event
	// maps are the live pieces, by start; they do not overlap.
	maps []int32
	// inBytes and inObj are in use now; mapIn is the part of inBytes in
	// mapping pieces.
	inBytes, inObj, mapIn float64
	spans                 [][2]uint64 // commit's
	// done gets each heap block as it ends, and those live at the end.
	done func(b *block)
	// moments (where not nil) get each allocation's count, with mapIn
	// after it; mapBefore is mapIn before the first event after the
	// count's peak (hasBefore: there was one before it); last is the
	// last event played, n how many.
	moments    []moment
	mapBefore  float64
	hasBefore  bool
	afterCount bool
	last       event
	n          int64
}

// moment is an allocation's count of the bytes in use, with the
// mappings' estimate then.
type moment struct {
	seq, tNs uint64
	count    int64
	mapIn    float64
}

func newReplayer(im *image) *replayer {
	r := &replayed{im: im, byStack: map[uint64]*acc{}}
	if len(im.maps) > 0 {
		for _, m := range parseMaps(im.maps[len(im.maps)-1]) {
			if m.path == "[heap]" {
				r.heapMaps = append(r.heapMaps, m)
			}
		}
	}
	return &replayer{replayed: r, live: map[uint64]event{}}
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

// play plays event e.
func (p *replayer) play(e *event) {
	switch k := &e.kind; {
	case reservesInUse && *k == kindReserve, protectIsMapping && *k == kindProtect:
		*k = kindMmap
	}
	if !p.afterCount && e.seq > p.im.countSeq {
		p.afterCount = true
		if p.n > 0 {
			p.mapBefore, p.hasBefore = p.mapIn, true
		}
	}
	p.n++
	p.last = *e
	switch {
	case !e.free && e.kind == kindProtect:
		p.protect(e)
	case !e.free:
		p.alloc(e)
	case e.flags&flagMunmap != 0:
		p.munmap(e)
	default:
		p.free(e)
	}
	if p.moments != nil && !e.free {
		p.moments = append(p.moments, moment{seq: e.seq, tNs: e.tNs, count: e.count, mapIn: p.mapIn})
	}
}

// keep keeps e, an event a piece may refer to: its index in kept.
func (p *replayer) keep(e *event) int32 {
	p.kept = append(p.kept, *e)
	return int32(len(p.kept) - 1)
}

// end ends the heap block l at event e.
func (p *replayer) end(l event, e *event) {
	if p.done != nil {
		p.done(&block{e: l, end: e.seq, endNs: e.tNs})
	}
}

// protect plays an mprotect to access: a commit where it covers a
// reservation; elsewhere a change of access (V8's code pages, writable,
// then executable), nothing in use that was not.
func (p *replayer) protect(e *event) {
	c, n := p.commit(e, e.addr, pagesEnd(e.addr, e.size))
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
func (p *replayer) alloc(e *event) {
	o, b := p.im.weightOf(e)
	if mappingKind(e.kind) && p.im.goRuntime[e.stack] {
		// The Go runtime's own address space: reserved, mapped and
		// given back on its own terms, through the C library's mmap
		// where cgo is linked in. Not the program's blocks in use (a Go
		// program read 91.3 MiB in use against a 56 MiB RSS).
		if !reserveKind(e.kind) {
			p.goObj += o
			p.goBytes += b
		}
		return
	}
	if mappingKind(e.kind) {
		i := p.keep(e)
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
			oo, ob := weight(old.size, p.im.rate)
			p.inBytes -= ob
			p.inObj -= oo
			p.end(old, e)
		}
		p.live[e.addr] = *e
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
func (p *replayer) munmap(e *event) {
	var i int32
	if e.addr%pageSize == 0 && e.size != 0 {
		i = p.keep(e)
	}
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
func (p *replayer) free(e *event) {
	l, ok := p.live[e.addr]
	if !ok {
		return // not sampled, or made before the library started
	}
	delete(p.live, e.addr)
	p.end(l, e)
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
		o, b := p.pieceWeight(&q)
		p.inBytes -= b
		p.inObj -= o
		p.mapIn -= b
		whole := lo <= q.start && hi >= q.end
		if whole && temporary && q.from == q.alloc && o > 0 {
			p.accOf(p.kept[q.alloc].stack).tempObj += o
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
func (p *replayer) commit(e *event, lo, hi uint64) (bytes float64, n int) {
	p.spans = p.spans[:0]
	k := sort.Search(len(p.maps), func(k int) bool { return p.pieces[p.maps[k]].end > lo })
	for ; k < len(p.maps) && p.pieces[p.maps[k]].start < hi; k++ {
		if q := &p.pieces[p.maps[k]]; reserveKind(p.kept[q.alloc].kind) {
			p.spans = append(p.spans, [2]uint64{max(lo, q.start), min(hi, q.end)})
		}
	}
	if len(p.spans) == 0 {
		return 0, 0
	}
	i := p.keep(e)
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
// are not in the count: their estimate (c.moments' mapIn) is
// added, and the peak is the moment where the two together are largest,
// the count's own peak or a sampled allocation's (its record holds the
// count then): a program may map most of its memory after its heap
// peaked (cc1's GC; TestPeakWithLateMappings).
func (r *replayed) countedPeak(c counts, v *views) (heapPeak float64) {
	im := r.im
	r.source = "counted"
	heapPeak = float64(im.countPeak)
	r.peakSeq, r.peakNs = im.countSeq, im.countNs
	best := heapPeak
	if c.hasBefore {
		best += c.mapBefore
	}
	for _, m := range c.moments {
		if x := float64(m.count) + m.mapIn; x > best {
			best, heapPeak, r.peakSeq, r.peakNs = x, float64(m.count), m.seq, m.tNs
		}
	}
	// The end, where every thread has published its count, is a moment
	// of the run too: the counts the samples recorded lag by up to
	// PUBLISH a thread (TestPeakNotBelowExit).
	if c.n > 0 {
		if x := float64(im.countEnd) + c.mapEnd; x > best {
			best, heapPeak, r.peakSeq, r.peakNs = x, float64(im.countEnd), c.last.seq+1, max(im.endNs, c.last.tNs)
		}
	}
	r.peak, r.peakMapped, r.peakObj, r.exit = 0, 0, 0, 0
	for _, m := range c.moments {
		if float64(m.count)+m.mapIn >= 0.99*best {
			v.window = append(v.window, m.seq)
		}
	}
	return heapPeak
}

// counts is what countedPeak reads of a replay: each allocation's count
// with the mappings' estimate after it (moments); the estimate before
// the first event after the count's peak (mapBefore, where hasBefore);
// the last event, the estimate at the end, and how many events.
type counts struct {
	moments   []moment
	mapBefore float64
	hasBefore bool
	last      event
	mapEnd    float64
	n         int64
}

func (p *replayer) counts() counts {
	return counts{moments: p.moments, mapBefore: p.mapBefore, hasBefore: p.hasBefore, last: p.last, mapEnd: p.mapIn, n: p.n}
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
	// peakSeq is the peak's moment, where no window is: the replay's
	// own at rate 1 (its first pass's), the count's sampled.
	peakSeq uint64
}

// block adds a sampled heap block to the views, and to the heap in use
// at each moment of r.useAt.
func (v *views) block(bl *block) {
	r, e := v.r, &bl.e
	o, b := weight(e.size, r.im.rate)
	v.add(e.stack, false, o, b, o*float64(max(e.usable, e.size)), e.seq, bl.end)
	if !heapKind(e.kind) {
		return
	}
	for tNs, u := range r.useAt {
		if e.tNs > tNs || bl.end != ^uint64(0) && bl.endNs <= tNs {
			continue
		}
		u.inRange(e, o)
		if e.kind != kindHeap {
			continue // glibc's own mapping: in no arena
		}
		inBrk := false
		for _, m := range r.heapMaps {
			if e.addr >= m.start && e.addr < m.end {
				inBrk = true
				break
			}
		}
		if inBrk {
			u.main.add(o, b)
			continue
		}
		u.others.add(o, b)
		if h := u.heaps[e.addr&^(heapMaxBytes-1)]; h != nil {
			h.add(o, b)
		}
	}
}

// inRange adds heap block e, of weight o, to the blocks in u's
// unexplained ranges where it lies in one: glibc's large blocks whose
// headers the walk could not read, or blocks in an allocator's heap no
// rule knows, are memory the join must name as the sites' tables do.
func (u *heapUse) inRange(e *event, o float64) {
	lo, hi := e.addr, e.addr+max(e.size, 1)
	k, _ := slices.BinarySearchFunc(u.ranges, lo, func(g WalkRange, a uint64) int {
		if g.End <= a {
			return -1
		}
		return 1
	})
	var over uint64
	var res float64
	for ; k < len(u.ranges) && u.ranges[k].Start < hi; k++ {
		g := u.ranges[k]
		a, z := max(lo, g.Start), min(hi, g.End)
		over += z - a
		res += float64(g.ResidentBytes) * float64(z-a) / float64(g.End-g.Start)
	}
	if over == 0 {
		return
	}
	if u.inRanges == nil {
		u.inRanges = map[uint64]*[3]float64{}
	}
	x := u.inRanges[e.stack]
	if x == nil {
		x = &[3]float64{}
		u.inRanges[e.stack] = x
	}
	x[0] += o
	x[1] += o * float64(over)
	x[2] += o * res
}

// pieces adds every mapping piece to the views.
func (v *views) pieces() {
	r := v.r
	for k := range r.pieces {
		p := &r.pieces[k]
		o, b := r.pieceWeight(p)
		if o == 0 {
			continue // a reservation
		}
		end := ^uint64(0)
		if p.to >= 0 {
			end = r.kept[p.to].seq
		}
		v.add(r.kept[p.alloc].stack, true, o, b, 0, r.kept[p.from].seq, end)
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
// from until seq end (^0: to the end) to the views at exit and at the
// peak.
func (v *views) add(stack uint64, mmap bool, o, b, usable float64, from, end uint64) {
	r := v.r
	if end == ^uint64(0) {
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
	} else if from <= v.peakSeq && end > v.peakSeq {
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
// are grouped by heap. The replay found them where replay's useAt asked
// for tNs (useAtWalks); none elsewhere.
func (r *replayed) heapInUseAt(tNs uint64, heaps map[uint64]*estimate) (main, others estimate) {
	u := r.useAt[tNs]
	if u == nil {
		return main, others
	}
	for start, h := range heaps {
		if x := u.heaps[start]; x != nil {
			*h = *x
		}
	}
	return u.main, u.others
}

// useAt asks for the heap in use at each walk's moment that the arena
// split may read (fragmentation's walk of each list), with its heaps.
func useAtWalks(startNs uint64, lists ...[]Walk) map[uint64]*heapUse {
	at := map[uint64]*heapUse{}
	for _, walks := range lists {
		w := fragmentationWalk(startNs, walks)
		if w == nil {
			continue
		}
		u := at[w.MonoNs-startNs]
		if u == nil {
			u = &heapUse{heaps: map[uint64]*estimate{}}
			at[w.MonoNs-startNs] = u
		}
		for _, h := range w.Heaps {
			if u.heaps[h.Start] == nil {
				u.heaps[h.Start] = &estimate{}
			}
		}
	}
	// The unexplained join's walk: the heap blocks in its ranges.
	for _, walks := range lists {
		w := unexplainedWalk(startNs, walks)
		if w == nil {
			continue
		}
		u := at[w.MonoNs-startNs]
		if u == nil {
			u = &heapUse{heaps: map[uint64]*estimate{}}
			at[w.MonoNs-startNs] = u
		}
		u.ranges = slices.SortedFunc(slices.Values(w.Unexplained), func(a, b WalkRange) int { return cmp.Compare(a.Start, b.Start) })
	}
	return at
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
