package reconcile

import (
	"encoding/binary"
	"fmt"
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
// reservation, rw bytes of it read-write from the bottom.
type glibcHeap struct {
	start, rw uint64
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
// malloc/arena.c: { mstate ar_ptr; heap_info *prev; ... }), and counts the
// distinct arenas. An arena's malloc_state follows the heap_info of its
// first heap, so a plausible ar_ptr lies just past the start of a
// 64 MiB-aligned heap; any other value, or a failed read, gives up.
func arenasByHeader(in *Input, heaps []glibcHeap) (int, bool) {
	if in.ReadMemory == nil {
		return 0, false
	}
	arenas := map[uint64]bool{}
	var b [8]byte
	for _, h := range heaps {
		if err := in.ReadMemory(h.start, b[:]); err != nil {
			return 0, false
		}
		ar := binary.NativeEndian.Uint64(b[:])
		if off := ar % GlibcHeapMaxBytes; off == 0 || off >= 4<<10 || off%8 != 0 {
			return 0, false
		}
		arenas[ar] = true
	}
	return len(arenas), true
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
