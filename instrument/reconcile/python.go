package reconcile

import "encoding/binary"

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
