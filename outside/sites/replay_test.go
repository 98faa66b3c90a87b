package sites

import (
	"slices"
	"testing"
)

// playAll plays evs (in seq order, numbered from 1) at rate 1 and returns
// the replayer after the last, and the seq of the event that ended each
// heap block, by its allocation's seq.
func playAll(evs ...event) (*replayer, map[uint64]uint64) {
	for i := range evs {
		evs[i].seq = uint64(i + 1)
	}
	p := newReplayer(&image{rate: 1, events: evs})
	ends := map[uint64]uint64{}
	p.done = func(b *block) { ends[b.e.seq] = b.end }
	for i := range evs {
		p.play(&evs[i])
	}
	return p, ends
}

// livePieces are the live pieces' ranges, by start.
func livePieces(p *replayer) [][2]uint64 {
	var out [][2]uint64
	for _, k := range p.maps {
		out = append(out, [2]uint64{p.pieces[k].start, p.pieces[k].end})
	}
	return out
}

// TestReplayerCut: a munmap in the middle of a mapping ends its piece and
// leaves two, head and tail, of the mapping's site; their bytes stay in
// use, and the mapping counts as freed by the munmap (freedBy), not as a
// temporary block.
func TestReplayerCut(t *testing.T) {
	pg := pageSize
	p, _ := playAll(
		event{addr: 16 * pg, size: 8 * pg, stack: 7, kind: kindMmap},
		event{addr: 18 * pg, size: 2 * pg, free: true, flags: flagMunmap | flagTemporary},
	)
	if got, want := livePieces(p), [][2]uint64{{16 * pg, 18 * pg}, {20 * pg, 24 * pg}}; !slices.Equal(got, want) {
		t.Errorf("live pieces %v, want %v", got, want)
	}
	if p.inBytes != float64(6*pg) || p.mapIn != float64(6*pg) || p.inObj != 2 {
		t.Errorf("in use %v B (%v in mappings), %v blocks; want 6 pages in 2 blocks", p.inBytes, p.mapIn, p.inObj)
	}
	if to := p.pieces[0].to; to < 0 || p.kept[to].seq != 2 || p.temp != 0 {
		t.Errorf("first piece ended by %d, temporary %v: want the mapping cut by the munmap (seq 2), nothing temporary", to, p.temp)
	}
	if a := p.byStack[7]; a == nil || a.allocBytes != float64(8*pg) || !a.mapped {
		t.Errorf("stack 7: %+v, want 8 pages allocated, mapped", a)
	}
	if p.peak != float64(8*pg) {
		t.Errorf("peak %v, want the 8 pages before the cut", p.peak)
	}
}

// TestReplayerCommit: an mprotect to access over a reservation commits
// what it covers (a piece of the mprotect's, in use, counted in
// commits); over no reservation it is a change of access and nothing is
// in use.
func TestReplayerCommit(t *testing.T) {
	pg := pageSize
	p, _ := playAll(
		event{addr: 64 * pg, size: 16 * pg, stack: 1, kind: kindReserve},
		event{addr: 68 * pg, size: 3*pg - 100, stack: 2, kind: kindProtect}, // rounded up to 3 pages
		event{addr: 200 * pg, size: pg, stack: 3, kind: kindProtect},        // no reservation there
	)
	if p.commits != 1 || p.commitBytes != float64(3*pg) || p.inBytes != float64(3*pg) {
		t.Errorf("commits %d of %v B, in use %v B; want 1 of 3 pages, in use", p.commits, p.commitBytes, p.inBytes)
	}
	want := [][2]uint64{{64 * pg, 68 * pg}, {68 * pg, 71 * pg}, {71 * pg, 80 * pg}}
	if got := livePieces(p); !slices.Equal(got, want) {
		t.Errorf("live pieces %v, want %v: the reservation's head and tail, the commit between", got, want)
	}
	if p.byStack[3] != nil {
		t.Errorf("stack 3: %+v, want nothing: a change of access allocates nothing", p.byStack[3])
	}
}

// TestReplayerFree: a free ends the sampled block at its address (a
// temporary one counts as such); a second allocation at an address whose
// block was never seen freed ends the first there; a free of an address
// never sampled changes nothing.
func TestReplayerFree(t *testing.T) {
	p, ends := playAll(
		event{addr: 0x1000, size: 100, stack: 1, kind: kindHeap},
		event{addr: 0x1000, size: 50, stack: 2, kind: kindHeap}, // the first freed unseen
		event{addr: 0x1000, free: true, flags: flagTemporary},
		event{addr: 0x9000, free: true},
	)
	if ends[1] != 2 || ends[2] != 3 || len(ends) != 2 {
		t.Errorf("ends %v, want the first block ended by seq 2, the second by 3", ends)
	}
	if p.inBytes != 0 || p.inObj != 0 || p.peak != 100 {
		t.Errorf("in use %v B, %v blocks, peak %v; want none, the peak the first block's 100 B", p.inBytes, p.inObj, p.peak)
	}
	if a := p.byStack[2]; a == nil || a.tempObj != 1 || p.temp != 1 {
		t.Errorf("stack 2 %+v, temporary %v: want its block temporary", a, p.temp)
	}
}

// TestCountedPeak: where the library counted every block, the peak is
// the moment the count and the mappings' estimate together are largest,
// and the window the sampled allocations within 1 % of it.
func TestCountedPeak(t *testing.T) {
	im := &image{rate: 4096, counted: true, countPeak: 1000, countSeq: 2, countEnd: 10,
		events: []event{
			{seq: 1, count: 500, kind: kindHeap, size: 64},
			{seq: 2, count: 1000, kind: kindHeap, size: 64},
			{seq: 3, count: 990, kind: kindHeap, size: 64},
			{seq: 4, count: 995, kind: kindHeap, size: 64},
			{seq: 5, count: 200, kind: kindHeap, size: 64},
		}}
	r := &replayed{im: im}
	mapAt := []float64{0, 0, 0, 100, 0} // a mapping in use at seq 4 only
	c := counts{n: 5, last: im.events[4], hasBefore: true, mapBefore: mapAt[1]}
	for i, e := range im.events {
		c.moments = append(c.moments, moment{seq: e.seq, tNs: e.tNs, count: e.count, mapIn: mapAt[i]})
	}
	v := &views{r: r}
	heapPeak := r.countedPeak(c, v)
	if heapPeak != 995 || r.peakSeq != 4 || r.source != "counted" {
		t.Errorf("heap peak %v at seq %d (%s); want 995 at 4: with the mapping the largest moment", heapPeak, r.peakSeq, r.source)
	}
	if want := []uint64{4}; !slices.Equal(v.window, want) {
		t.Errorf("window %v, want %v", v.window, want)
	}
}

// TestViewsAdd: a block in use over part of the window counts at the
// peak by the share of the window's moments it was in use at; one never
// freed counts at exit too.
func TestViewsAdd(t *testing.T) {
	im := &image{rate: 1}
	r := &replayed{im: im, byStack: map[uint64]*acc{}, source: "counted"}
	v := &views{r: r, window: []uint64{2, 4, 6, 8}}
	v.add(1, false, 1, 100, 128, 3, 7)      // made at seq 3, freed at seq 7: in use at 4 and 6
	v.add(2, true, 1, 40, 0, 5, ^uint64(0)) // a mapping from seq 5 on: at 6 and 8, and at exit
	if a := r.byStack[1]; a.peakBytes != 50 || a.exitBytes != 0 || v.peakAsked != 50 || v.peakUsable != 64 {
		t.Errorf("block: stack %+v, asked %v usable %v at the peak; want 50 B at the peak (half the window), none at exit", a, v.peakAsked, v.peakUsable)
	}
	if a := r.byStack[2]; a.peakBytes != 20 || a.exitBytes != 40 || r.peak != 20 || r.peakMapped != 20 || r.exit != 40 {
		t.Errorf("mapping: stack %+v, peak %v (%v mapped), exit %v; want 20 B at the peak, 40 at exit", a, r.peak, r.peakMapped, r.exit)
	}
	v.scaleCounted(1000)
	if r.peak != 20+1000*50.0/64 || r.exit != 40 {
		t.Errorf("scaled: peak %v, exit %v; want the count scaled by asked over usable, plus the mapping", r.peak, r.exit)
	}
}
