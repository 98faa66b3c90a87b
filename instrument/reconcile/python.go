package reconcile

import (
	"encoding/binary"
	"os"
)

// CPython's small-object allocator (Objects/obmalloc.c, 3.8 to 3.13 on
// 64-bit, the default build): objects of up to 512 bytes live in pools
// of 16 KiB (4 KiB before 3.10), aligned to their size, in arenas of 1
// MiB (256 KiB) that Python maps itself, so that they have no shape the
// other rules know. A pool begins with its header (struct pool_header):
//
//	ref.count      uint32 (a pointer's room)  blocks in use
//	freeblock      pointer                    the free list: in the pool, or 0
//	nextpool       pointer
//	prevpool       pointer
//	arenaindex     uint32
//	szidx          uint32                     size class: blocks of 16 (szidx+1) bytes
//	nextoffset     uint32                     the first block never used
//	maxnextoffset  uint32                     the pool's size − the block size
const (
	pythonPoolHeader  = 48
	pythonSizeClasses = 32 // 512 bytes in steps of 16
)

// pythonScanMaxPools is the most pool headers a walk reads: 2 GiB of 16
// KiB pools, about 170 ms of reads here (a variable for a test).
var pythonScanMaxPools = 1 << 17

// pythonPoolSizes are the pool sizes of CPython's versions, newest first.
var pythonPoolSizes = [2]uint64{16 << 10, 4 << 10}

// pythonPool says whether the 48 bytes h, read at the address a aligned
// to pool bytes, are a used pool's header: maxnextoffset is the pool's
// size less its size class's, and the other fields fit in the pool. A
// freed pool keeps its header and is the allocator's still.
func pythonPool(a, pool uint64, h []byte) bool {
	le := binary.NativeEndian
	count, free := le.Uint32(h[0:]), le.Uint64(h[8:])
	szidx, next, maxNext := le.Uint32(h[36:]), le.Uint32(h[40:]), le.Uint32(h[44:])
	if szidx >= pythonSizeClasses {
		return false
	}
	size := 16 * (szidx + 1)
	return uint64(maxNext) == pool-uint64(size) && next >= pythonPoolHeader && uint64(next) <= pool &&
		uint64(count) <= pool/uint64(size) && (free == 0 || free > a && free < a+pool)
}

// pythonPools claims CPython's pools (python.obmalloc): in each anonymous
// read-write mapping no source claimed, the runs of pool-aligned pools
// whose headers pythonPool takes, the pool size the one of the mapping's
// first pool. An arena's pools never used have no header and are left,
// as is what else the kernel merged with the arenas. A mapping whose
// first pool is none is passed over, and at most pythonScanMaxPools
// headers are read a walk (1.3 µs each here through /proc/PID/mem), so
// that a process with gigabytes of other anonymous memory is not read
// through; past that, a warning says what was left. Needs in.ReadMemory.
func (l *layout) pythonPools(in *Input) {
	if in.ReadMemory == nil {
		return
	}
	var h [pythonPoolHeader]byte
	reads := 0
	for i := range l.vmas {
		v := &l.vmas[i]
		if !v.anon() || v.Perms != "rw-p" || v.RssBytes == 0 || v.owner != "" {
			continue
		}
		var pool, first uint64
		for _, p := range pythonPoolSizes {
			a := (v.Start + p - 1) &^ (p - 1)
			if a+p <= v.End && in.ReadMemory(a, h[:]) == nil && pythonPool(a, p, h[:]) {
				pool, first = p, a
				break
			}
		}
		if pool == 0 {
			continue
		}
		var lo, hi uint64
		claim := func() {
			if hi > lo {
				l.claimRange(in, lo, hi, clPyMalloc)
				l.tally(clPyMalloc).count += int((hi - lo) / pool)
			}
		}
		for a := first; a+pool <= v.End; a += pool {
			if reads == pythonScanMaxPools {
				claim()
				l.warn("python.obmalloc: %d pool headers read, the most a walk reads: the pools from %#x on are left unexplained", reads, a)
				return
			}
			reads++
			if in.ReadMemory(a, h[:]) != nil || !pythonPool(a, pool, h[:]) {
				continue
			}
			if a != hi {
				claim()
				lo = a
			}
			hi = a + pool
		}
		claim()
		v.counted = true
	}
}

// pythonArenaBytes are CPython's arena sizes by pool size: 1 MiB with 16
// KiB pools (3.10+), 256 KiB with 4 KiB pools before. Python maps each
// arena on its own (mmap of the arena's size), so the kernel merges it
// with its anonymous neighbours.
func pythonArenaBytes(pool uint64) uint64 {
	if pool == pythonPoolSizes[1] {
		return 256 << 10
	}
	return 1 << 20
}

// chunksAfterPools is rule 11 of classify: glibc's large blocks that the
// kernel merged above CPython's arenas. mmappedChunks reads a chain from
// a mapping's start, or after what an earlier rule claimed there, and an
// arena has no header at its start, so twelve 20 MiB bytearrays beside
// lists of strings (each mapping: one or two 1 MiB arenas, then a chunk)
// were unexplained. An arena ends within its size of the end of its last
// run of pools (its pools never used carry no header): each page from
// there up to an arena's size on is tried as a chunk's header, and the
// chain from it is claimed where it runs, without a gap, to the end of
// the contiguous mappings or to within a pool of the next run of pools.
// That end is what makes the weak header (zeros, then a small number) a
// sign; at most pythonScanMaxPools pages are read a walk.
func (l *layout) chunksAfterPools(in *Input) {
	if in.ReadMemory == nil {
		return
	}
	page := uint64(os.Getpagesize())
	reads := 0
	for i := range l.vmas {
		v := &l.vmas[i]
		if !v.anon() || v.Perms != "rw-p" || v.owner != "" || len(v.subs) == 0 {
			continue
		}
		for k := 0; k < len(v.subs); k++ {
			s := v.subs[k]
			if s.class != clPyMalloc || (k+1 < len(v.subs) && v.subs[k+1].lo == s.hi) {
				continue // not the end of a run of pools
			}
			pool := pythonPoolSizes[0]
			if (s.hi-s.lo)%pool != 0 {
				pool = pythonPoolSizes[1]
			}
			stop := min(s.hi+pythonArenaBytes(pool), v.End, l.nextSub(v, s.hi))
			for c := (s.hi + page - 1) &^ (page - 1); c < stop && reads < pythonScanMaxPools; c += page {
				reads++
				if l.chainReaches(in, i, c, page, pool) {
					l.chunkChain(in, i, c, page)
					break
				}
			}
		}
	}
}

// nextSub is where the first claimed range of v at or above a begins;
// v.End where none does.
func (l *layout) nextSub(v *vma, a uint64) uint64 {
	end := v.End
	for _, s := range v.subs {
		if s.lo >= a {
			end = min(end, s.lo)
		}
	}
	return end
}

// chainReaches says whether the chunk headers from a in mapping i chain,
// each right after the last, to the end of the contiguous mappings from
// i, or to within pool bytes below the next claimed range of the mapping
// the chain ends in (the next arena's first pool).
func (l *layout) chainReaches(in *Input, i int, a, page, pool uint64) bool {
	span := l.contiguous(i)
	var b [16]byte
	n := 0
	for a < span {
		if in.ReadMemory(a, b[:]) != nil {
			return false
		}
		prev, head := binary.NativeEndian.Uint64(b[:8]), binary.NativeEndian.Uint64(b[8:])
		size := head &^ 7
		if prev != 0 || head&7 != 2 || size == 0 || size%page != 0 || size > span-a {
			break
		}
		a += size
		n++
	}
	if n == 0 {
		return false
	}
	if a == span {
		return true
	}
	k := l.find(a)
	if k < 0 {
		return false
	}
	next := l.nextSub(&l.vmas[k], a)
	return next < l.vmas[k].End && next-a < pool
}
