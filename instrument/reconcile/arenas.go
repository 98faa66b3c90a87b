package reconcile

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// glibcHeapFullSlack: a heap whose read-write part has grown to within this
// of GlibcHeapMaxBytes is taken as full, one its arena has outgrown. glibc
// opens another heap for an arena only when the current one cannot grow by
// the request (sysmalloc: grow_heap fails when size + request exceeds
// HEAP_MAX_SIZE), requests above the mmap threshold (128 KiB by default)
// are mmapped on their own, and the read-write part never shrinks back to
// PROT_NONE (shrink_heap only madvises, unless overcommit is strict). So a
// heap that stopped short of 64 MiB by less than the largest request is
// followed by another heap of its arena. With a threshold raised by free
// (up to 32 MiB) a heap can stop further short and is then counted as an
// arena of its own: the estimate errs towards more arenas, as the heap
// count did.
const glibcHeapFullSlack = 1 << 20

// glibcHeap is one of glibc's malloc heaps: a HEAP_MAX_SIZE-aligned
// reservation, rw bytes of it read-write from the bottom, resident bytes
// of it resident; arena is its heap_info.ar_ptr where the headers were
// read (0 otherwise).
type glibcHeap struct {
	start, rw uint64
	resident  int64
	arena     uint64
}

// countArenas tells l.heaps' arenas apart: by the heaps' headers where
// in.ReadMemory reads them, otherwise by the estimate (glibcHeapFullSlack).
func (l *layout) countArenas(in *Input) {
	if len(l.heaps) == 0 {
		return
	}
	if n, ok := arenasByHeader(in, l.heaps); ok {
		l.arenas, l.arenasExact = n, true
		return
	}
	full := 0
	for _, h := range l.heaps {
		if h.rw+glibcHeapFullSlack >= GlibcHeapMaxBytes {
			full++
		}
	}
	// Each arena has one last heap, full or not: at least one arena.
	l.arenas = max(len(l.heaps)-full, 1)
}

// arenasByHeader reads each heap's heap_info.ar_ptr, its first word (glibc
// malloc/arena.c: { mstate ar_ptr; heap_info *prev; ... }), sets each
// heap's arena and counts the distinct arenas. An arena's malloc_state follows the heap_info of its
// first heap, so a plausible ar_ptr lies just past the start of a
// 64 MiB-aligned heap; any other value, or a failed read, gives up.
func arenasByHeader(in *Input, heaps []glibcHeap) (int, bool) {
	if in.ReadMemory == nil {
		return 0, false
	}
	arenas := map[uint64]bool{}
	ars := make([]uint64, len(heaps))
	var b [8]byte
	for i, h := range heaps {
		if err := in.ReadMemory(h.start, b[:]); err != nil {
			return 0, false
		}
		ar := binary.NativeEndian.Uint64(b[:])
		if !plausibleArena(ar) {
			return 0, false
		}
		arenas[ar] = true
		ars[i] = ar
	}
	for i := range heaps {
		heaps[i].arena = ars[i]
	}
	return len(arenas), true
}

// notHeap says whether the memory at a (64 MiB-aligned) can be read and
// holds no heap_info: its first word is no plausible ar_ptr. A heap glibc
// made always has one. A Go arena has a heap's shape (Go reserves 64 MiB
// arenas aligned to their size and maps them read-write from the bottom),
// and one that no Input.GoAddrs pointed into was read as a glibc heap.
func notHeap(in *Input, a uint64) bool {
	var b [8]byte
	if in.ReadMemory == nil || in.ReadMemory(a, b[:]) != nil {
		return false
	}
	return !plausibleArena(binary.NativeEndian.Uint64(b[:]))
}

// plausibleArena says whether ar can be a heap_info.ar_ptr: an arena's
// malloc_state follows the heap_info of its first heap, so it lies just
// past the start of a 64 MiB-aligned heap.
func plausibleArena(ar uint64) bool {
	off := ar % GlibcHeapMaxBytes
	return off != 0 && off < 4<<10 && off%8 == 0
}

// heapHeader is the start of glibc's heap_info (malloc/arena.c): ar_ptr,
// prev, size and mprotect_size, in that order.
type heapHeader struct {
	arena, prev, size, mprotectSize uint64
}

// readHeapHeader reads the heap_info at a through in.ReadMemory; ok is
// false where it cannot be read or is no heap's: an implausible ar_ptr, a
// prev that is not another 64 MiB-aligned heap, a size of nothing or
// beyond HEAP_MAX_SIZE or beyond what is read-write.
func readHeapHeader(in *Input, a uint64) (h heapHeader, ok bool) {
	var b [32]byte
	if in.ReadMemory == nil || in.ReadMemory(a, b[:]) != nil {
		return h, false
	}
	w := func(i int) uint64 { return binary.NativeEndian.Uint64(b[8*i:]) }
	h = heapHeader{w(0), w(1), w(2), w(3)}
	ok = plausibleArena(h.arena) && (h.prev == 0 || h.prev%GlibcHeapMaxBytes == 0 && h.prev != a) &&
		h.size > 0 && h.size <= h.mprotectSize && h.mprotectSize <= GlibcHeapMaxBytes
	return h, ok
}

// fullHeaps claims the heaps an arena grew to the whole 64 MiB (rule 8b
// of classify): in a read-write anonymous mapping no source claimed, each
// 64 MiB-aligned stretch of 64 MiB whose heap_info says so (mprotect_size
// is all of it), and a heap merged above them whose read-write head ends
// where the mapping does, with its PROT_NONE tail to the next 64 MiB.
// Nothing is claimed without in.ReadMemory: by shape alone such a heap
// is any large anonymous mapping.
func (l *layout) fullHeaps(in *Input) {
	if in.ReadMemory == nil {
		return
	}
	for i := range l.vmas {
		v := &l.vmas[i]
		if !v.anon() || v.Perms != "rw-p" || !v.free() || v.SizeBytes < GlibcHeapMaxBytes {
			continue
		}
		a := (v.Start + GlibcHeapMaxBytes - 1) / GlibcHeapMaxBytes * GlibcHeapMaxBytes
		for ; a+GlibcHeapMaxBytes <= v.End; a += GlibcHeapMaxBytes {
			if h, ok := readHeapHeader(in, a); ok && h.mprotectSize == GlibcHeapMaxBytes {
				res, _ := l.claimRange(in, a, a+GlibcHeapMaxBytes, clArenas)
				l.heaps = append(l.heaps, glibcHeap{start: a, rw: GlibcHeapMaxBytes, resident: res})
			}
		}
		if a >= v.End || i+1 == len(l.vmas) {
			continue
		}
		t := &l.vmas[i+1]
		if !t.anon() || t.Perms != "---p" || t.Start != v.End || t.End != a+GlibcHeapMaxBytes || !t.free() {
			continue
		}
		if h, ok := readHeapHeader(in, a); ok && h.mprotectSize == v.End-a {
			res, _ := l.claimRange(in, a, a+GlibcHeapMaxBytes, clArenas)
			l.heaps = append(l.heaps, glibcHeap{start: a, rw: v.End - a, resident: res})
		}
	}
}

// arenasNote says what c.malloc.arenas counts and how.
func (l *layout) arenasNote() string {
	const shape = "glibc malloc arenas: 64 MiB-aligned heaps, read-write head + PROT_NONE tail"
	heaps, arenas := plural(len(l.heaps), "heap"), plural(l.arenas, "arena")
	switch {
	case len(l.heaps) == 0, len(l.heaps) == l.arenas && !l.arenasExact:
		return shape // a heap each: nothing to add
	case l.arenasExact:
		return fmt.Sprintf("%s; %s, %s (by the heaps' headers)", shape, heaps, arenas)
	}
	return fmt.Sprintf("%s; %s, %s (estimated: a heap within %s of 64 MiB is one its arena outgrew)",
		shape, heaps, arenas, iec(glibcHeapFullSlack))
}

// plural is "1 heap", "2 heaps".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// mmappedChunks claims glibc's large blocks (c.malloc.mmap): malloc serves
// a block of M_MMAP_THRESHOLD (128 KiB, raised as large blocks are freed)
// and more with an anonymous mapping of its own, and the chunk's header is
// its first 16 bytes: prev_size 0, then the chunk's size, the mapping's,
// a multiple of the page, with IS_MMAPPED (2) and no other flag
// (malloc/malloc.c sysmalloc_mmap). The kernel merges neighbouring
// mappings, so one mapping may hold several chunks, each right after the
// last; those it holds from its start are claimed. A block memalign placed
// inside a larger mapping is found by the header glibc wrote at the
// mapping's start before it cut the aligned block out (malloc/malloc.c
// _int_memalign). Needs in.ReadMemory; glibc 2.41+ names these mappings
// where the kernel keeps names (classify, by name).
//
// The allocation-site library's own mappings (probe.sites: probe exec
// --sites) are claimed the same way, by the header each begins with
// (SitesOwnMagic, then its length), and the chain goes on after them. A
// mapping claimed from its start (by .bss) is read from where that claim
// ends. Where the chain breaks in a mapping that held something known (a
// .bss, a chunk, a buffer), what follows is read page by page for the
// library's next buffer (ownScan), and the chain goes on from it:
// the kernel merges into a library's .bss whatever fills the gap above
// it, in the order it was mapped, so a buffer may sit behind a page of
// ld.so's or the program's that has no header. A chunk's header is too
// weak a sign to be looked for that way (zeros, then a small number); what
// sits behind such a page is not claimed.
func (l *layout) mmappedChunks(in *Input) {
	if in.ReadMemory == nil {
		return
	}
	page := uint64(os.Getpagesize())
	scan := ownScan{left: sitesScanMaxPages, off: !l.sitesLibMapped()}
	for i := range l.vmas {
		v := &l.vmas[i]
		if !v.anon() || v.Perms != "rw-p" || v.owner != "" || v.RssBytes == 0 {
			continue
		}
		head := claimedHead(v, page)
		a, n := l.chunkChain(in, i, head, page)
		if head == v.Start && n == 0 {
			continue // nothing known at its start: not read further
		}
		for a < v.End {
			b := scan.next(l, in, v, a+page, page)
			if b >= v.End {
				break
			}
			if a, n = l.chunkChain(in, i, b, page); n == 0 {
				a = b
			}
		}
	}
}

// chunkChain claims the chain of headers in mapping i from a: glibc's
// mmapped chunks and the library's buffers, each right after the last. It
// returns where the chain ends (v.End or past it where it ran to the end)
// and how many it claimed.
//
// A chunk may run on into the mappings above: the kernel splits a
// mapping where part of it gets other flags, and numpy (1.x, 2.x) calls
// madvise(MADV_HUGEPAGE) on every block of 4 MiB and more from the first
// page boundary after the block's start, which leaves the chunk's header
// alone in a 4 KiB mapping below the rest of it (VmFlags "hg"). A chunk
// is claimed across the unclaimed read-write anonymous mappings that
// continue it without a gap (contiguous).
func (l *layout) chunkChain(in *Input, i int, a, page uint64) (end uint64, n int) {
	v := &l.vmas[i]
	span := l.contiguous(i)
	var b [16]byte
	for a < v.End {
		if in.ReadMemory(a, b[:]) != nil {
			break
		}
		prev, head := binary.NativeEndian.Uint64(b[:8]), binary.NativeEndian.Uint64(b[8:])
		size, class := head&^7, clMmap
		if prev == SitesOwnMagic {
			size, class = head, clSitesOwn
		} else if prev != 0 || head&7 != 2 {
			break
		}
		if size == 0 || size%page != 0 || size > span-a {
			break
		}
		if _, got := l.claimRange(in, a, a+size, class); got == 0 {
			break // claimed already (a stack the kernel merged in)
		}
		l.tally(class).count++
		for k := i; k < len(l.vmas) && l.vmas[k].Start < a+size; k++ {
			l.vmas[k].counted = true
		}
		a += size
		n++
	}
	return a, n
}

// contiguous is where the run of mappings from i that one chunk may span
// ends: i, then each unclaimed read-write anonymous mapping that starts
// where the last ends.
func (l *layout) contiguous(i int) uint64 {
	end := l.vmas[i].End
	for k := i + 1; k < len(l.vmas); k++ {
		w := &l.vmas[k]
		if w.Start != end || !w.anon() || w.Perms != "rw-p" || !w.free() {
			break
		}
		end = w.End
	}
	return end
}

// sitesScanMaxPages is the most pages a walk reads for the library's
// buffers past a break in a chain (ownScan): 256 MiB of pages, about
// 85 ms of reads at 1.3 µs each (a variable for a test).
var sitesScanMaxPages = 1 << 16

// ownScan is the walk's reads past breaks: left is what sitesScanMaxPages
// leaves; warned says the warning that it ran out was given; off, that the
// process has no allocation-site library, so no buffer of it to look for
// (an in-process walk of the trainer read 42,000 pages past its glibc
// chunks, each through an open of /proc/self/mem, for nothing).
type ownScan struct {
	left   int
	warned bool
	off    bool
}

// sitesLibName is the allocation-site library's file name (outside/sites'
// LibName), whose mapping says its buffers may be in the process.
const sitesLibName = "libmemprobe-sites.so"

// sitesLibMapped says whether the process has the allocation-site library
// mapped.
func (l *layout) sitesLibMapped() bool {
	return slices.ContainsFunc(l.vmas, func(v vma) bool { return filepath.Base(v.Path) == sitesLibName })
}

// next returns the first page of v from a, outside its claimed ranges,
// that begins one of the library's buffers (its header, a length of whole
// pages that fits in v); v.End where none does or the reads run out.
func (s *ownScan) next(l *layout, in *Input, v *vma, a, page uint64) uint64 {
	if s.off {
		return v.End
	}
	var b [16]byte
	for ; a < v.End; a += page {
		if k := slices.IndexFunc(v.subs, func(x sub) bool { return x.lo <= a && a < x.hi }); k >= 0 {
			a = (v.subs[k].hi+page-1)&^(page-1) - page
			continue
		}
		if s.left == 0 {
			if !s.warned {
				l.warn("probe.sites: %d pages read past breaks in the chains of headers, the most a walk reads: the library's buffers from %#x on may be left unexplained", sitesScanMaxPages, a)
				s.warned = true
			}
			return v.End
		}
		s.left--
		if in.ReadMemory(a, b[:]) != nil || binary.NativeEndian.Uint64(b[:8]) != SitesOwnMagic {
			continue
		}
		if n := binary.NativeEndian.Uint64(b[8:]); n > 0 && n%page == 0 && n <= v.End-a {
			return a
		}
	}
	return v.End
}

// claimedHead is where the claims on v from its start end, rounded up to
// a page: v.Start where nothing is claimed there. A mapping the kernel
// merged with what lies below it (a library's .bss) holds the chain
// after that.
func claimedHead(v *vma, page uint64) uint64 {
	end := v.Start
	for more := true; more; {
		more = false
		for _, s := range v.subs {
			if s.lo <= end && s.hi > end {
				end, more = s.hi, true
			}
		}
	}
	return (end + page - 1) &^ (page - 1)
}

// SitesOwnMagic begins every mapping the allocation-site library
// (outside/sites/preload, OWN_MAGIC) makes for itself, followed by the
// mapping's length: "SITESOWN" in little-endian bytes.
const SitesOwnMagic = 0x4e574f5345544953
