package reconcile

// goArenas claims Go's heap arenas (rule 2 of classify). A mapping is Go's
// heap only where the runtime says so, and it says it three ways:
//
//   - Input.GoAddrs: the runtime allocated these heap objects and stacks,
//     so the mappings holding them are its arenas;
//   - the heap grows upward, without gaps, from its base (mheap.grow: a
//     current arena is mapped read-write, sysMap, from its bottom; only
//     its top is still PROT_NONE, and a discontiguous new arena gets the
//     old one's rest mapped first), so the read-write mappings directly
//     next to an arena mapping are the same heap (the kernel splits a
//     mapping where its flags differ);
//   - the runtime reserves whole 64 MiB arenas, aligned to their size
//     (GoHeapArenaBytes), PROT_NONE: the PROT_NONE mappings directly
//     below and above that read-write run are its reservations, up to the
//     arena boundaries (the randomised heap base, Go 1.26, leaves one at
//     the bottom of the first arena).
//
// Nothing beyond such a reservation is Go's: a read-write mapping above a
// PROT_NONE tail (where the heap has not grown yet) is someone else's,
// however close to the arena, and so is what another mapping merged with
// the reservation past an arena boundary. A mapping of another that the
// kernel merged with the read-write run itself cannot be told apart by
// address; Compute bounds what the arenas hold by runtime/metrics instead
// (go.arena.other).
func (l *layout) goArenas(in *Input) {
	for _, a := range in.GoAddrs {
		if i := l.find(a); i >= 0 && l.vmas[i].anon() {
			l.claimWhole(i, clGoArena)
		}
	}
	prot := func(v *vma) bool { return v.Perms[:3] == "---" }
	for i := 1; i < len(l.vmas); i++ { // upwards
		p, v := &l.vmas[i-1], &l.vmas[i]
		if p.owner != clGoArena || p.End != v.Start || !v.anon() || prot(p) {
			continue
		}
		if !prot(v) {
			l.claimWhole(i, clGoArena)
			continue
		}
		// The reservation above the heap: up to the last arena boundary
		// in it (the arena the heap grows in ends at one).
		if end := v.End / GoHeapArenaBytes * GoHeapArenaBytes; end > v.Start {
			if end == v.End {
				l.claimWhole(i, clGoArena)
			} else {
				l.claimRange(in, v.Start, end, clGoArena)
			}
		}
	}
	for i := len(l.vmas) - 2; i >= 0; i-- { // downwards
		v, n := &l.vmas[i], &l.vmas[i+1]
		if n.owner != clGoArena || v.End != n.Start || !v.anon() || prot(n) {
			continue
		}
		if !prot(v) {
			l.claimWhole(i, clGoArena)
			continue
		}
		// The reservation below the heap's base: from the first arena
		// boundary in it.
		if start := (v.Start + GoHeapArenaBytes - 1) / GoHeapArenaBytes * GoHeapArenaBytes; start < v.End {
			if start == v.Start {
				l.claimWhole(i, clGoArena)
			} else {
				l.claimRange(in, start, v.End, clGoArena)
			}
		}
	}
}

// goArenaProtNone sums the PROT_NONE bytes claimed for Go's arenas: its
// reservations, which no class of runtime/metrics counts.
func (l *layout) goArenaProtNone() int64 {
	var b int64
	for _, v := range l.vmas {
		if v.Perms[:3] != "---" {
			continue
		}
		if v.owner == clGoArena {
			b += int64(v.SizeBytes)
		}
		for _, s := range v.subs {
			if s.class == clGoArena {
				b += int64(s.hi - s.lo)
			}
		}
	}
	return b
}

// goArenaSpan is the lowest start and highest end of the read-write
// mappings claimed for Go's arenas (0, 0 without any).
func (l *layout) goArenaSpan() (lo, hi uint64) {
	for _, v := range l.vmas {
		if v.owner == clGoArena && v.Perms[:3] != "---" {
			if lo == 0 {
				lo = v.Start
			}
			hi = v.End
		}
	}
	return lo, hi
}
