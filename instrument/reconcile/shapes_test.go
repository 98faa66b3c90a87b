package reconcile

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"memprobe/instrument/procfs"
)

// The tests here build address spaces by hand, each the shape a real
// program showed (probe exec's smaps walks of the audit's programs), to
// pin the heuristics of classify: what is a thread stack, a file's .bss, a
// glibc arena.

// mk is one anonymous or file mapping of smaps, rss bytes resident.
func mk(start, size uint64, perms, path string, rss uint64) procfs.Mapping {
	m := procfs.Mapping{Start: start, End: start + size, Perms: perms, Path: path, SizeBytes: size, RssBytes: rss, PssBytes: rss}
	if path == "" {
		m.AnonymousBytes, m.PrivateDirtyBytes = rss, rss
	}
	return m
}

// space is an Input over ms, with VmRSS and VmSize their sums (nothing
// drifts) and no Go runtime.
func space(ms ...procfs.Mapping) Input {
	in := Input{Mappings: ms, ThreadStackBytes: 8 * MiB, OpenFile: noFiles}
	for _, m := range ms {
		in.Status.VmRSSBytes += m.RssBytes
		in.Status.VmSizeBytes += m.SizeBytes
	}
	return in
}

// noFiles is an OpenFile that finds no file: tests never read the
// machine's.
func noFiles(path string) (io.ReaderAt, error) {
	return nil, &os.PathError{Op: "open", Path: path, Err: os.ErrNotExist}
}

// files is an OpenFile serving the given contents by path.
func files(m map[string][]byte) func(string) (io.ReaderAt, error) {
	return func(path string) (io.ReaderAt, error) {
		if b, ok := m[path]; ok {
			return bytes.NewReader(b), nil
		}
		return noFiles(path)
	}
}

// pagemap is a Resident function over the given resident ranges.
func pagemap(ranges ...[2]uint64) func(lo, hi uint64) (int64, error) {
	return func(lo, hi uint64) (int64, error) {
		var n int64
		for _, r := range ranges {
			if a, z := max(lo, r[0]), min(hi, r[1]); a < z {
				n += int64(z - a)
			}
		}
		return n, nil
	}
}

// elfFile is the ELF header and program headers of a 64-bit x86-64
// object with the given PT_LOAD segments: all the .bss rule reads.
func elfFile(typ elf.Type, loads ...elf.ProgHeader) []byte {
	var b bytes.Buffer
	hdr := elf.Header64{
		Type: uint16(typ), Machine: uint16(elf.EM_X86_64), Version: uint32(elf.EV_CURRENT),
		Phoff: 64, Ehsize: 64, Phentsize: 56, Phnum: uint16(len(loads)),
	}
	copy(hdr.Ident[:], elf.ELFMAG)
	hdr.Ident[elf.EI_CLASS], hdr.Ident[elf.EI_DATA], hdr.Ident[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	binary.Write(&b, binary.LittleEndian, hdr)
	for _, l := range loads {
		binary.Write(&b, binary.LittleEndian, elf.Prog64{Type: uint32(elf.PT_LOAD), Flags: uint32(l.Flags),
			Off: l.Off, Vaddr: l.Vaddr, Paddr: l.Vaddr, Filesz: l.Filesz, Memsz: l.Memsz, Align: 0x1000})
	}
	return b.Bytes()
}

func load(flags elf.ProgFlag, off, vaddr, filesz, memsz uint64) elf.ProgHeader {
	return elf.ProgHeader{Type: elf.PT_LOAD, Flags: flags, Off: off, Vaddr: vaddr, Filesz: filesz, Memsz: memsz}
}

// fixtureFiles are the ELF headers of testdata/smaps_cgo's two objects:
// the binary's data segment has 32 MiB of .bss, libc's 52 KiB (its real
// layout: RELRO splits the data mapping, the .bss ends mid-page).
func fixtureFiles() map[string][]byte {
	return map[string][]byte{
		"/usr/bin/probe": elfFile(elf.ET_EXEC,
			load(elf.PF_R, 0, 0x400000, 0x2000, 0x2000),
			load(elf.PF_R|elf.PF_X, 0x2000, 0x402000, 0x100000, 0x100000),
			load(elf.PF_R|elf.PF_W, 0x102000, 0x502000, 0x800, 0x2000e40)),
		"/usr/lib/x86_64-linux-gnu/libc.so.6": elfFile(elf.ET_DYN,
			load(elf.PF_R, 0, 0, 0x25388, 0x25388),
			load(elf.PF_R|elf.PF_X, 0x26000, 0x26000, 0x1550fc, 0x1550fc),
			load(elf.PF_R|elf.PF_W, 0x17c8d0, 0x17c8d0, 0x5700, 0x12680)),
	}
}

func partsByName(r Reconciliation) map[string]Part {
	got := map[string]Part{}
	for _, p := range r.Parts {
		got[p.Name] = p
	}
	return got
}

// cStack is a glibc thread stack: a 4 KiB guard, then size read-write, rss
// of it resident.
func cStack(guard, size, rss uint64) []procfs.Mapping {
	return []procfs.Mapping{mk(guard, 4*KiB, "---p", "", 0), mk(guard+4*KiB, size, "rw-p", "", rss)}
}

// TestGoHeapIsNotAThreadStack: a pure-Go binary seen from outside (no Go
// heap address known). Its threads' stack pointers lie in Go's heap
// mapping (g0 and goroutine stacks), which has megabytes of PROT_NONE
// reservation below it, not a guard: it is no thread stack, and its
// resident bytes stay unexplained. The C stack beside it, with glibc's
// guard, is still found by its thread's stack pointer. (Before the fix
// the heap's first 8 MiB were a "thread stack" with a 64 KiB "guard" cut
// from the reservation.)
func TestGoHeapIsNotAThreadStack(t *testing.T) {
	const heap = 0x2b8644000000
	ms := []procfs.Mapping{
		mk(heap, 8*MiB, "---p", "", 0),
		mk(heap+8*MiB, 108*MiB, "rw-p", "", 100*MiB),
		mk(heap+116*MiB, 12*MiB, "---p", "", 0),
	}
	ms = append(ms, cStack(0x7f0000000000, 8*MiB, 16*KiB)...)
	in := space(ms...)
	in.ThreadSPs = []procfs.ThreadSP{
		{TID: 1, SP: heap + 8*MiB + 0x10f00},         // a Go thread on g0
		{TID: 2, SP: heap + 20*MiB},                  // one on a goroutine stack
		{TID: 3, SP: 0x7f0000001000 + 8*MiB - 0x300}, // a C thread, blocked
	}
	in.Resident = pagemap([2]uint64{0x7f0000001000 + 8*MiB - 16*KiB, 0x7f0000001000 + 8*MiB})
	r := Compute(in)
	checkSums(t, r)
	want := ThreadStack{Lo: 0x7f0000001000, Hi: 0x7f0000801000, TID: 3, ReservedBytes: 8 * MiB, GuardBytes: 4 * KiB, ResidentBytes: 16 * KiB, Source: "syscall sp"}
	if len(r.ThreadStacks) != 1 || r.ThreadStacks[0] != want {
		t.Errorf("stacks %+v, want only %+v", r.ThreadStacks, want)
	}
	if p := partsByName(r)["stacks.threads"]; p.Bytes != 16*KiB || p.ReservedBytes != 8*MiB+4*KiB || p.Count != 1 {
		t.Errorf("stacks.threads %+v", p)
	}
	if r.UnexplainedBytes != 100*MiB || len(r.UnexplainedMappings) != 1 || r.UnexplainedMappings[0].Start != heap+8*MiB || r.UnexplainedMappings[0].ResidentBytes != 100*MiB {
		t.Errorf("unexplained %+v, want Go's heap mapping whole", r.UnexplainedMappings)
	}
}

// TestBSSNotAboveSharedMapping: bss.c maps 64 MiB anonymous, then a 1 MiB
// file MAP_SHARED read-write that lands right below it. A shared mapping
// has no .bss: the 64 MiB stay unexplained.
func TestBSSNotAboveSharedMapping(t *testing.T) {
	in := space(
		mk(0x7ff5e0000000, 1*MiB, "rw-s", "/tmp/audit2/c/data.bin", 4*KiB),
		mk(0x7ff5e0100000, 64*MiB, "rw-p", "", 64*MiB),
	)
	r := Compute(in)
	checkSums(t, r)
	if p := partsByName(r)["file.bss"]; p.Bytes != 0 || p.ReservedBytes != 0 {
		t.Errorf("file.bss %+v, want nothing", p)
	}
	if r.UnexplainedBytes != 64*MiB || len(r.UnexplainedMappings) != 1 || r.UnexplainedMappings[0].Start != 0x7ff5e0100000 {
		t.Errorf("unexplained %d: %+v, want the 64 MiB", r.UnexplainedBytes, r.UnexplainedMappings)
	}
}

// TestBSSBoundedByELF: the .bss is the anonymous mapping above a loaded
// object's data only up to the end its segment has in memory. Here the
// kernel merged a library's 12 KiB .bss with a 64 MiB mapping placed
// right above it: 12 KiB are .bss (8 KiB resident, by pagemap), the rest
// is left to the other rules (unexplained). A private writable mapping
// of a file that is not ELF (one mapping, a data file) has no .bss either.
func TestBSSBoundedByELF(t *testing.T) {
	const lib = 0x7f1000000000
	in := space(
		mk(0x7e0000000000, 1*MiB, "rw-p", "/data/table.bin", 1*MiB),
		mk(0x7e0000100000, 2*MiB, "rw-p", "", 2*MiB),
		mk(lib, 4*KiB, "r--p", "/usr/lib/libx.so", 4*KiB),
		mk(lib+4*KiB, 4*KiB, "r-xp", "/usr/lib/libx.so", 4*KiB),
		mk(lib+8*KiB, 4*KiB, "rw-p", "/usr/lib/libx.so", 4*KiB),
		mk(lib+12*KiB, 64*MiB+12*KiB, "rw-p", "", 40*MiB+8*KiB),
	)
	in.OpenFile = files(map[string][]byte{
		"/data/table.bin": bytes.Repeat([]byte{7}, 4096),
		"/usr/lib/libx.so": elfFile(elf.ET_DYN,
			load(elf.PF_R, 0, 0, 0x800, 0x800),
			load(elf.PF_R|elf.PF_X, 0x1000, 0x1000, 0x900, 0x900),
			// .data ends at 0x2a00 in the file, .bss at 0x5010 in
			// memory: anonymous from 0x3000 to 0x6000.
			load(elf.PF_R|elf.PF_W, 0x2000, 0x2000, 0xa00, 0x3010)),
	})
	in.Resident = pagemap([2]uint64{lib + 12*KiB, lib + 20*KiB}, [2]uint64{lib + 24*KiB, lib + 24*KiB + 40*MiB})
	r := Compute(in)
	checkSums(t, r)
	if p := partsByName(r)["file.bss"]; p.Bytes != 8*KiB || p.ReservedBytes != 12*KiB || p.Count != 1 {
		t.Errorf("file.bss %+v, want 8 KiB resident of 12 KiB, 1", p)
	}
	if len(r.Files) != 2 || r.Files[1].Path != "/usr/lib/libx.so" || r.Files[1].BSSResidentBytes != 8*KiB || r.Files[1].BSSReservedBytes != 12*KiB {
		t.Errorf("files %+v", r.Files)
	}
	var big, data bool
	for _, p := range r.UnexplainedMappings {
		big = big || p.Start == lib+12*KiB && p.ResidentBytes == 40*MiB && p.ReservedBytes == 64*MiB
		data = data || p.Start == 0x7e0000100000 && p.ResidentBytes == 2*MiB
	}
	if !big || !data || r.UnexplainedBytes != 42*MiB || len(r.Warnings) != 0 {
		t.Errorf("unexplained %+v, want the 64 MiB above the .bss and the 2 MiB above the data file; warnings %q", r.UnexplainedMappings, r.Warnings)
	}
}

// TestBSSUnreadableFile: where the headers cannot be read (a deleted
// binary, a file in another mount namespace) an object mapped in pieces
// keeps the old assumption, the whole anonymous mapping above its data,
// and a warning says so. A segment whose memory ends on its last file
// page has no .bss: the mapping above it is not claimed.
func TestBSSUnreadableFile(t *testing.T) {
	in := space(
		mk(0x400000, 8*KiB, "r-xp", "/app/trainer (deleted)", 8*KiB),
		mk(0x402000, 4*KiB, "rw-p", "/app/trainer (deleted)", 4*KiB),
		mk(0x403000, 200*KiB, "rw-p", "", 60*KiB),
		mk(0x7f2000000000, 4*KiB, "r--p", "/usr/lib/liby.so", 4*KiB),
		mk(0x7f2000001000, 4*KiB, "rw-p", "/usr/lib/liby.so", 4*KiB),
		mk(0x7f2000002000, 1*MiB, "rw-p", "", 1*MiB),
	)
	in.OpenFile = files(map[string][]byte{
		"/usr/lib/liby.so": elfFile(elf.ET_DYN,
			load(elf.PF_R, 0, 0, 0x800, 0x800),
			load(elf.PF_R|elf.PF_W, 0x1000, 0x1000, 0x100, 0x180)),
	})
	r := Compute(in)
	checkSums(t, r)
	if p := partsByName(r)["file.bss"]; p.Bytes != 60*KiB || p.ReservedBytes != 200*KiB || p.Count != 1 {
		t.Errorf("file.bss %+v, want the deleted binary's 200 KiB whole", p)
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "/app/trainer (deleted) (the file is deleted)") || !strings.Contains(r.Warnings[0], "taken whole") {
		t.Errorf("warnings %q", r.Warnings)
	}
	if r.UnexplainedBytes != 1*MiB || len(r.UnexplainedMappings) != 1 || r.UnexplainedMappings[0].Start != 0x7f2000002000 {
		t.Errorf("unexplained %+v, want liby's neighbour", r.UnexplainedMappings)
	}
}

// TestBigThreadStacks: stacks grow down, so a stack larger than the
// default holds its frames at the top of its mapping. bigstack.c: one
// thread, 16 MiB stack, 4 MiB written, blocked: its stack pointer is above
// the default 8 MiB, and the whole mapping is its stack (before: the
// bottom 8 MiB, nothing resident, and the 4 MiB unexplained). A running
// thread's (no stack pointer) 16 MiB stack is claimed whole where pagemap
// shows glibc's shape: its top page (the thread descriptor) resident,
// nothing where a default-size stack's top would be. A default stack the
// kernel merged with a mapping above has its top there, and only the
// default size is claimed; so is everything without pagemap.
func TestBigThreadStacks(t *testing.T) {
	const (
		blocked = 0x7f0000000000 // 16 MiB, stack pointer 4 MiB below the top
		running = 0x7f0010000000 // 16 MiB, no stack pointer
		merged  = 0x7f0020000000 // 8 MiB stack + 24 MiB above it
		huge    = 0x7f0100000000 // 1 GiB, blocked (thr 4 1048576 1 1500)
	)
	var ms []procfs.Mapping
	ms = append(ms, cStack(blocked, 16*MiB, 4*MiB+8*KiB)...)
	ms = append(ms, cStack(running, 16*MiB, 64*KiB)...)
	ms = append(ms, cStack(merged, 32*MiB, 2*MiB+8*KiB)...)
	ms = append(ms, cStack(huge, 1024*MiB, 24*KiB)...)
	in := space(ms...)
	top := func(base, size uint64) uint64 { return base + 4*KiB + size }
	in.ThreadSPs = []procfs.ThreadSP{
		{TID: 11, SP: top(blocked, 16*MiB) - 4*MiB - 0x100},
		{TID: 12},
		{TID: 14, SP: top(huge, 1024*MiB) - 20*KiB},
	}
	in.Resident = pagemap(
		[2]uint64{top(blocked, 16*MiB) - 4*MiB - 8*KiB, top(blocked, 16*MiB)},
		[2]uint64{top(running, 16*MiB) - 64*KiB, top(running, 16*MiB)},
		[2]uint64{merged + 4*KiB + 8*MiB - 8*KiB, merged + 4*KiB + 8*MiB}, // the stack's top
		[2]uint64{top(merged, 32*MiB) - 2*MiB, top(merged, 32*MiB)},       // the neighbour's
		[2]uint64{top(huge, 1024*MiB) - 24*KiB, top(huge, 1024*MiB)},
	)
	r := Compute(in)
	checkSums(t, r)
	want := []ThreadStack{
		{Lo: blocked + 4*KiB, Hi: top(blocked, 16*MiB), TID: 11, ReservedBytes: 16 * MiB, GuardBytes: 4 * KiB, ResidentBytes: 4*MiB + 8*KiB, Source: "syscall sp"},
		{Lo: running + 4*KiB, Hi: top(running, 16*MiB), ReservedBytes: 16 * MiB, GuardBytes: 4 * KiB, ResidentBytes: 64 * KiB, Source: "guard shape"},
		{Lo: merged + 4*KiB, Hi: merged + 4*KiB + 8*MiB, ReservedBytes: 8 * MiB, GuardBytes: 4 * KiB, ResidentBytes: 8 * KiB, Source: "guard shape"},
		{Lo: huge + 4*KiB, Hi: top(huge, 1024*MiB), TID: 14, ReservedBytes: 1024 * MiB, GuardBytes: 4 * KiB, ResidentBytes: 24 * KiB, Source: "syscall sp"},
	}
	if len(r.ThreadStacks) != len(want) {
		t.Fatalf("stacks %+v", r.ThreadStacks)
	}
	for i, w := range want {
		if r.ThreadStacks[i] != w {
			t.Errorf("stack %d:\n got %+v\nwant %+v", i, r.ThreadStacks[i], w)
		}
	}
	// Only the merged neighbour's 2 MiB are unexplained.
	if r.UnexplainedBytes != 2*MiB || len(r.UnexplainedMappings) != 1 || r.UnexplainedMappings[0].Start != merged+4*KiB {
		t.Errorf("unexplained %d: %+v", r.UnexplainedBytes, r.UnexplainedMappings)
	}

	// Without pagemap the running thread's stack cannot be told from a
	// merged one: the default size. The blocked threads' pointers still
	// say.
	in.Resident = nil
	r = Compute(in)
	checkSums(t, r)
	checkWalk(t, r)
	if len(r.ThreadStacks) != 4 || r.ThreadStacks[0].ReservedBytes != 16*MiB || r.ThreadStacks[1].ReservedBytes != 8*MiB || r.ThreadStacks[3].ReservedBytes != 1024*MiB {
		t.Errorf("without pagemap: stacks %+v", r.ThreadStacks)
	}
}

// heapsSpace is arena.c's address space, and a second thread's arena: one
// arena grew past its first heap (64 MiB less 44 KiB read-write) into a
// second (16 MiB), the other has one heap of 132 KiB.
func heapsSpace() Input {
	return space(
		mk(0x7fa964000000, 16*MiB+72*KiB, "rw-p", "", 16*MiB+72*KiB),
		mk(0x7fa965012000, 48*MiB-72*KiB, "---p", "", 0),
		mk(0x7fa96c000000, 64*MiB-44*KiB, "rw-p", "", 64*MiB-44*KiB),
		mk(0x7fa96fff5000, 44*KiB, "---p", "", 0),
		mk(0x7fa974000000, 132*KiB, "rw-p", "", 16*KiB),
		mk(0x7fa974021000, 64*MiB-132*KiB, "---p", "", 0),
	)
}

// TestArenasNotHeaps: arena.c's worker mallocs 80 MiB in 64 KiB pieces,
// so its arena has two 64 MiB heaps. Three heaps are two arenas (before:
// three), estimated from the full heap; GlibcHeaps keeps the heaps.
func TestArenasNotHeaps(t *testing.T) {
	r := Compute(heapsSpace())
	checkSums(t, r)
	p := partsByName(r)["c.malloc.arenas"]
	if r.GlibcArenas != 2 || r.GlibcHeaps != 3 || r.GlibcArenasExact || p.Count != 2 || p.ReservedBytes != 192*MiB || p.Bytes != 80*MiB+44*KiB || r.UnexplainedBytes != 0 {
		t.Errorf("arenas %d, heaps %d, exact %v; part %+v; unexplained %d B, want none", r.GlibcArenas, r.GlibcHeaps, r.GlibcArenasExact, p, r.UnexplainedBytes)
	}
	if !strings.Contains(p.Note, "3 heaps, 2 arenas (estimated") {
		t.Errorf("note %q", p.Note)
	}
	// Each heap with its own resident bytes (exec --sites splits them),
	// no arena without the headers.
	want := []MallocHeap{
		{StartAddr: 0x7fa964000000, ReadWriteBytes: 16*MiB + 72*KiB, ResidentBytes: 16*MiB + 72*KiB},
		{StartAddr: 0x7fa96c000000, ReadWriteBytes: 64*MiB - 44*KiB, ResidentBytes: 64*MiB - 44*KiB},
		{StartAddr: 0x7fa974000000, ReadWriteBytes: 132 * KiB, ResidentBytes: 16 * KiB},
	}
	if !slices.Equal(r.MallocHeaps, want) {
		t.Errorf("heaps %+v, want %+v", r.MallocHeaps, want)
	}
}

// TestArenasByHeader: with the process's memory readable, each heap's
// heap_info.ar_ptr says its arena. Here the small heap's arena is the
// same as the others' (a thread that outgrew the first heap, freed, then
// grew again: glibc deletes only the top heap), which no size can show;
// and where a read fails the estimate stands.
func TestArenasByHeader(t *testing.T) {
	in := heapsSpace()
	arena := uint64(0x7fa96c000000 + 48) // the first heap's, past its heap_info
	in.ReadMemory = func(addr uint64, b []byte) error {
		switch addr {
		case 0x7fa964000000, 0x7fa96c000000, 0x7fa974000000:
			binary.NativeEndian.PutUint64(b, arena)
			return nil
		}
		return errors.New("unmapped")
	}
	r := Compute(in)
	if r.GlibcArenas != 1 || r.GlibcHeaps != 3 || !r.GlibcArenasExact || partsByName(r)["c.malloc.arenas"].Count != 1 {
		t.Errorf("arenas %d, heaps %d, exact %v", r.GlibcArenas, r.GlibcHeaps, r.GlibcArenasExact)
	}
	for _, h := range r.MallocHeaps {
		if h.ArenaAddr != arena {
			t.Errorf("heap %+v: arena %#x, want %#x", h, h.ArenaAddr, arena)
		}
	}
	in.ReadMemory = func(addr uint64, b []byte) error { return errors.New("EIO") }
	if r := Compute(in); r.GlibcArenas != 2 || r.GlibcArenasExact || len(r.MallocHeaps) != 3 || r.MallocHeaps[0].ArenaAddr != 0 {
		t.Errorf("unreadable: arenas %d, exact %v; want the estimate 2", r.GlibcArenas, r.GlibcArenasExact)
	}
	// Readable, with no heap_info (a Go arena has a heap's shape: 64
	// MiB-aligned, read-write from its bottom, PROT_NONE above): no heap.
	// Before, by shape alone, such an arena was c.malloc.arenas (12 MiB
	// of a Go test's heap, once in CI).
	in.ReadMemory = func(addr uint64, b []byte) error { binary.NativeEndian.PutUint64(b, 0x1234); return nil }
	if r := Compute(in); r.GlibcArenas != 0 || r.GlibcHeaps != 0 || partsByName(r)["c.malloc.arenas"].Bytes != 0 || r.UnexplainedBytes < 80*MiB {
		t.Errorf("no heap_info: arenas %d, heaps %d, part %+v, unexplained %d; want none and the 80 MiB unexplained",
			r.GlibcArenas, r.GlibcHeaps, partsByName(r)["c.malloc.arenas"], r.UnexplainedBytes)
	}
}

// heapMemory is a ReadMemory serving glibc heap_info headers (ar_ptr,
// prev, size, mprotect_size) at the given addresses, and failing
// elsewhere.
func heapMemory(headers map[uint64][4]uint64) func(addr uint64, b []byte) error {
	return func(addr uint64, b []byte) error {
		h, ok := headers[addr]
		if !ok {
			return errors.New("unmapped")
		}
		var w [32]byte
		for i, x := range h {
			binary.NativeEndian.PutUint64(w[8*i:], x)
		}
		copy(b, w[:])
		return nil
	}
}

// TestFullHeaps: a heap its arena grew to the whole 64 MiB has no
// PROT_NONE tail, and the kernel merges it with the arena's next heap
// mapped right above it. With the memory readable, the heaps' headers
// find both: one arena, two heaps, 128 MiB reserved, and what pagemap
// says resident. A 64 MiB-aligned anonymous mapping whose first words are
// no heap's header stays unexplained, and without ReadMemory nothing is
// claimed by shape.
func TestFullHeaps(t *testing.T) {
	const heap = 0x7f0000000000
	const other = 0x7f1000000000
	in := space(
		mk(heap, 65*MiB, "rw-p", "", 65*MiB), // a full heap and the next one's 1 MiB head
		mk(heap+65*MiB, 63*MiB, "---p", "", 0),
		mk(other, 64*MiB, "rw-p", "", 64*MiB), // not a heap
	)
	in.Resident = pagemap([2]uint64{heap, heap + 65*MiB}, [2]uint64{other, other + 64*MiB})
	arena := uint64(heap + 48)
	in.ReadMemory = heapMemory(map[uint64][4]uint64{
		heap:          {arena, 0, 64 * MiB, 64 * MiB},
		heap + 64*MiB: {arena, heap, 1 * MiB, 1 * MiB},
		other:         {0x1234, 0, 0, 0},
	})
	r := Compute(in)
	checkSums(t, r)
	p := partsByName(r)["c.malloc.arenas"]
	if r.GlibcHeaps != 2 || r.GlibcArenas != 1 || !r.GlibcArenasExact || p.Bytes != 65*MiB || p.ReservedBytes != 128*MiB {
		t.Errorf("heaps %d, arenas %d (exact %v), part %+v; want 2 heaps of 1 arena, 65 MiB of 128 MiB", r.GlibcHeaps, r.GlibcArenas, r.GlibcArenasExact, p)
	}
	if r.UnexplainedBytes != 64*MiB || len(r.UnexplainedMappings) != 1 || r.UnexplainedMappings[0].Start != other {
		t.Errorf("unexplained %d B in %+v; want the other 64 MiB mapping", r.UnexplainedBytes, r.UnexplainedMappings)
	}

	in.ReadMemory = nil
	r = Compute(in)
	checkSums(t, r)
	if r.GlibcHeaps != 0 || r.UnexplainedBytes != 129*MiB {
		t.Errorf("without ReadMemory: heaps %d, unexplained %d B; want none, 129 MiB", r.GlibcHeaps, r.UnexplainedBytes)
	}
}

// chunkMemory is a ReadMemory serving 16-byte words pairs (prev_size,
// size and flags) at the given addresses, and failing elsewhere.
func chunkMemory(headers map[uint64][2]uint64) func(addr uint64, b []byte) error {
	return func(addr uint64, b []byte) error {
		h, ok := headers[addr]
		if !ok {
			return errors.New("unmapped")
		}
		var w [16]byte
		binary.NativeEndian.PutUint64(w[:], h[0])
		binary.NativeEndian.PutUint64(w[8:], h[1])
		copy(b, w[:])
		return nil
	}
}

// TestMmappedChunks: glibc's large blocks are claimed by their headers
// (prev_size 0, a page-multiple size with IS_MMAPPED alone), three of
// them merged by the kernel into one mapping with a mapping of the
// program's own after them, which stays unexplained. Mappings whose first
// words only look like a header stay unexplained: a size beyond the
// mapping, PREV_INUSE set, a prev_size, a size not of whole pages. And
// without ReadMemory nothing is claimed by shape.
func TestMmappedChunks(t *testing.T) {
	const merged = 0x7f0000000000
	const (
		tooBig   = 0x7f1000000000
		inUse    = 0x7f2000000000
		prevSize = 0x7f3000000000
		odd      = 0x7f4000000000
	)
	in := space(
		mk(merged, 3*MiB+192*KiB, "rw-p", "", 3*MiB+192*KiB),
		mk(tooBig, 4*MiB, "rw-p", "", 4*MiB),
		mk(inUse, 1*MiB, "rw-p", "", 1*MiB),
		mk(prevSize, 1*MiB, "rw-p", "", 1*MiB),
		mk(odd, 1*MiB, "rw-p", "", 1*MiB),
	)
	in.Resident = pagemap([2]uint64{merged, merged + 3*MiB + 192*KiB}, [2]uint64{tooBig, tooBig + 4*MiB},
		[2]uint64{inUse, inUse + MiB}, [2]uint64{prevSize, prevSize + MiB}, [2]uint64{odd, odd + MiB})
	in.ReadMemory = chunkMemory(map[uint64][2]uint64{
		merged:                   {0, 1*MiB | 2},
		merged + 1*MiB:           {0, 2*MiB | 2},
		merged + 3*MiB:           {0, 128*KiB | 2},
		merged + 3*MiB + 128*KiB: {0x6f6f6f6f, 0x6f6f6f6f}, // the program's own
		tooBig:                   {0, 8*MiB | 2},
		inUse:                    {0, 1*MiB | 3},
		prevSize:                 {16, 1*MiB | 2},
		odd:                      {0, (1*MiB - 16) | 2},
	})
	r := Compute(in)
	checkSums(t, r)
	p := partsByName(r)["c.malloc.mmap"]
	if p.Count != 3 || p.Bytes != 3*MiB+128*KiB || p.ReservedBytes != 3*MiB+128*KiB {
		t.Errorf("c.malloc.mmap %+v; want 3 blocks, 3 MiB + 128 KiB resident and reserved", p)
	}
	if want := int64(64*KiB + 7*MiB); r.UnexplainedBytes != want || len(r.UnexplainedMappings) != 5 {
		t.Errorf("unexplained %d B in %d pieces (%+v); want %d B in 5: the merged mapping's tail and the four lookalikes",
			r.UnexplainedBytes, len(r.UnexplainedMappings), r.UnexplainedMappings, want)
	}

	in.ReadMemory = nil
	r = Compute(in)
	checkSums(t, r)
	if p := partsByName(r)["c.malloc.mmap"]; p.Count != 0 || r.UnexplainedBytes != int64(10*MiB+192*KiB) {
		t.Errorf("without ReadMemory: c.malloc.mmap %+v, unexplained %d B; want none, all of it", p, r.UnexplainedBytes)
	}
}

// TestSitesOwnBuffers: the allocation-site library's own mappings are
// claimed by their headers (SitesOwnMagic, the length) as probe.sites,
// alone or where the kernel merged one between two of glibc's large
// blocks, whose chain then goes on past it. A length not of whole pages,
// or beyond the mapping, is no header. Planted: the buffer as the
// library wrote it before it had headers (its list pointers first): the
// chain stops at it, and the block after it is unexplained.
func TestSitesOwnBuffers(t *testing.T) {
	const (
		merged = 0x7f0000000000 // 1 MiB chunk, 128 KiB buffer, 2 MiB chunk
		alone  = 0x7f1000000000 // a buffer of 132 KiB
		odd    = 0x7f2000000000
		long   = 0x7f3000000000
	)
	in := space(
		mk(merged, 3*MiB+128*KiB, "rw-p", "", 3*MiB+128*KiB),
		mk(alone, 132*KiB, "rw-p", "", 132*KiB),
		mk(odd, 1*MiB, "rw-p", "", 1*MiB),
		mk(long, 1*MiB, "rw-p", "", 1*MiB),
	)
	in.Resident = pagemap([2]uint64{merged, merged + 3*MiB + 128*KiB}, [2]uint64{alone, alone + 132*KiB},
		[2]uint64{odd, odd + MiB}, [2]uint64{long, long + MiB})
	headers := map[uint64][2]uint64{
		merged:                   {0, 1*MiB | 2},
		merged + 1*MiB:           {SitesOwnMagic, 128 * KiB},
		merged + 1*MiB + 128*KiB: {0, 2*MiB | 2},
		alone:                    {SitesOwnMagic, 132 * KiB},
		odd:                      {SitesOwnMagic, 1*MiB - 16},
		long:                     {SitesOwnMagic, 2 * MiB},
	}
	in.ReadMemory = chunkMemory(headers)
	r := Compute(in)
	checkSums(t, r)
	parts := partsByName(r)
	if p := parts["probe.sites"]; p.Count != 2 || p.Bytes != 260*KiB {
		t.Errorf("probe.sites %+v; want 2 buffers, 260 KiB resident", p)
	}
	if p := parts["c.malloc.mmap"]; p.Count != 2 || p.Bytes != 3*MiB {
		t.Errorf("c.malloc.mmap %+v; want 2 blocks, 3 MiB: the chain goes on past the buffer", p)
	}
	if want := int64(2 * MiB); r.UnexplainedBytes != want {
		t.Errorf("unexplained %d B (%+v); want %d: the two lookalikes", r.UnexplainedBytes, r.UnexplainedMappings, want)
	}

	headers[merged+1*MiB] = [2]uint64{0x7f0000200000, 0x7f00003ff640} // next, owner
	delete(headers, alone)
	r = Compute(in)
	checkSums(t, r)
	if p := partsByName(r)["c.malloc.mmap"]; p.Count != 1 || r.UnexplainedBytes != int64(4*MiB+260*KiB) {
		t.Errorf("buffers without headers: c.malloc.mmap %+v, unexplained %d B; want 1 block, the buffers, the block after and the lookalikes unexplained",
			p, r.UnexplainedBytes)
	}
}

// TestSitesOwnAfterBSS: where the kernel merged a library's .bss with
// what was mapped right above it, the chain of headers is read from the
// page after the .bss: a buffer of the library's, then one of glibc's
// large blocks. Without ReadMemory both stay unexplained.
func TestSitesOwnAfterBSS(t *testing.T) {
	const lib = 0x7f1000000000
	in := space(
		mk(lib, 4*KiB, "r--p", "/usr/lib/libx.so", 4*KiB),
		mk(lib+4*KiB, 4*KiB, "r-xp", "/usr/lib/libx.so", 4*KiB),
		mk(lib+8*KiB, 4*KiB, "rw-p", "/usr/lib/libx.so", 4*KiB),
		mk(lib+12*KiB, 12*KiB+1*MiB, "rw-p", "", 12*KiB+1*MiB),
	)
	in.OpenFile = files(map[string][]byte{
		"/usr/lib/libx.so": elfFile(elf.ET_DYN,
			load(elf.PF_R, 0, 0, 0x800, 0x800),
			load(elf.PF_R|elf.PF_X, 0x1000, 0x1000, 0x900, 0x900),
			load(elf.PF_R|elf.PF_W, 0x2000, 0x2000, 0xa00, 0x3010)), // .bss to 0x6000
	})
	in.Resident = pagemap([2]uint64{lib + 12*KiB, lib + 24*KiB + 1*MiB})
	in.ReadMemory = chunkMemory(map[uint64][2]uint64{
		lib + 24*KiB:           {SitesOwnMagic, 128 * KiB},
		lib + 24*KiB + 128*KiB: {0, 896*KiB | 2},
	})
	r := Compute(in)
	checkSums(t, r)
	parts := partsByName(r)
	if p, c := parts["probe.sites"], parts["c.malloc.mmap"]; p.Bytes != 128*KiB || p.Count != 1 || c.Bytes != 896*KiB || c.Count != 1 || r.UnexplainedBytes != 0 {
		t.Errorf("probe.sites %+v, c.malloc.mmap %+v, unexplained %d B; want the buffer's 128 KiB, the block's 896 KiB, none", p, c, r.UnexplainedBytes)
	}
	in.ReadMemory = nil
	if r := Compute(in); r.UnexplainedBytes != 1*MiB {
		t.Errorf("without ReadMemory: unexplained %d B; want 1 MiB", r.UnexplainedBytes)
	}
}

// TestSitesOwnBehindOther: the layout of e8ab4cf's failures, where
// outside's TestExecSitesOwnBuffers claimed 0 to 5 of the library's 7
// buffers. A gap above a library's .bss is filled from its top down: the
// library's buffers first, then what another maps later (ld.so's or
// libunwind's pages, the program's own) in the hole left between them and
// the .bss. The kernel merges all of it into the .bss's mapping, and the
// chain of headers read from the .bss's end stops at the first page that
// has none. Which buffers sit behind such a page depends on the gaps'
// sizes, so on the libraries' (a page more of .bss), and on the threads'
// timing. Read past the break, the library's buffers are found by their
// headers wherever they land, the chunk after one of them too; what has no
// header stays unexplained.
func TestSitesOwnBehindOther(t *testing.T) {
	const lib = 0x7f1000000000
	const bss = lib + 12*KiB // .bss to lib+24 KiB, then what was merged
	const buf = 104 * KiB
	merged := []struct {
		size   uint64
		header [2]uint64
	}{
		{8 * KiB, [2]uint64{0x7f10000a1000, 0x51}}, // ld.so's: a pointer, a size
		{buf, [2]uint64{SitesOwnMagic, buf}},
		{buf, [2]uint64{SitesOwnMagic, buf}},
		{12 * KiB, [2]uint64{0, 0x21}}, // libunwind's pool: a free chunk's look, no mmapped one
		{buf, [2]uint64{SitesOwnMagic, buf}},
		{128 * KiB, [2]uint64{0, 128*KiB | 2}}, // glibc's large block, after a buffer
		{4 * KiB, [2]uint64{0, 0}},             // a page never written
		{buf, [2]uint64{SitesOwnMagic, buf}},
	}
	headers := map[uint64][2]uint64{}
	a := uint64(bss + 12*KiB)
	for _, m := range merged {
		headers[a] = m.header
		a += m.size
	}
	in := space(
		mk(lib, 4*KiB, "r--p", "/usr/lib/libmemprobe-sites.so", 4*KiB),
		mk(lib+4*KiB, 4*KiB, "r-xp", "/usr/lib/libmemprobe-sites.so", 4*KiB),
		mk(lib+8*KiB, 4*KiB, "rw-p", "/usr/lib/libmemprobe-sites.so", 4*KiB),
		mk(bss, a-bss, "rw-p", "", a-bss),
	)
	libELF := elfFile(elf.ET_DYN,
		load(elf.PF_R, 0, 0, 0x800, 0x800),
		load(elf.PF_R|elf.PF_X, 0x1000, 0x1000, 0x900, 0x900),
		load(elf.PF_R|elf.PF_W, 0x2000, 0x2000, 0xa00, 0x3010)) // .bss to 0x6000
	in.OpenFile = files(map[string][]byte{"/usr/lib/libmemprobe-sites.so": libELF})
	in.Resident = pagemap([2]uint64{bss, a})
	in.ReadMemory = func(addr uint64, b []byte) error {
		clear(b) // what has no header planted reads as zeros
		if h, ok := headers[addr]; ok {
			binary.NativeEndian.PutUint64(b[:8], h[0])
			binary.NativeEndian.PutUint64(b[8:], h[1])
		}
		return nil
	}
	r := Compute(in)
	checkSums(t, r)
	parts := partsByName(r)
	if p := parts["probe.sites"]; p.Count != 4 || p.Bytes != 4*buf {
		t.Errorf("probe.sites %+v; want the 4 buffers, %d B", p, 4*buf)
	}
	if p := parts["c.malloc.mmap"]; p.Count != 1 || p.Bytes != 128*KiB {
		t.Errorf("c.malloc.mmap %+v; want the block after the third buffer, 128 KiB", p)
	}
	if want := int64(24 * KiB); r.UnexplainedBytes != want {
		t.Errorf("unexplained %d B (%+v); want %d: the pages with no header", r.UnexplainedBytes, r.UnexplainedMappings, want)
	}

	// A process without the library: no page read past a break, and
	// only the buffers of the chain from the .bss claimed.
	other := in
	other.Mappings = slices.Clone(in.Mappings)
	for k := range other.Mappings[:3] {
		other.Mappings[k].Path = "/usr/lib/libx.so"
	}
	other.OpenFile = files(map[string][]byte{"/usr/lib/libx.so": libELF})
	reads := 0
	other.ReadMemory = func(addr uint64, b []byte) error { reads++; return in.ReadMemory(addr, b) }
	r = Compute(other)
	checkSums(t, r)
	if p := partsByName(r)["probe.sites"]; p.Count != 0 || reads > 8 {
		t.Errorf("no library mapped: probe.sites %+v after %d reads; want none claimed past the break, and no scan", p, reads)
	}

	// At most so many pages read past the breaks a walk: the rest
	// unexplained, and said.
	defer func(n int) { sitesScanMaxPages = n }(sitesScanMaxPages)
	sitesScanMaxPages = 2
	r = Compute(in)
	checkSums(t, r)
	checkWalk(t, r)
	if p := partsByName(r)["probe.sites"]; p.Count != 2 || !strings.Contains(strings.Join(r.Warnings, "\n"), "2 pages read past breaks") {
		t.Errorf("reading at most 2 pages past the breaks: probe.sites %+v, warnings %q; want the 2 buffers behind the first break and a warning", p, r.Warnings)
	}
}

// pyPool is a CPython pool header (pythonPool's fields) for a pool at a of
// pool bytes holding blocks of size class szidx.
func pyPool(a, pool uint64, szidx uint32) []byte {
	h := make([]byte, pythonPoolHeader)
	size := 16 * (szidx + 1)
	binary.LittleEndian.PutUint32(h[0:], 3)          // blocks in use
	binary.LittleEndian.PutUint64(h[8:], a+4*64)     // the free list, in the pool
	binary.LittleEndian.PutUint64(h[16:], a)         // nextpool
	binary.LittleEndian.PutUint64(h[24:], a)         // prevpool
	binary.LittleEndian.PutUint32(h[32:], 7)         // arenaindex
	binary.LittleEndian.PutUint32(h[36:], szidx)     // size class
	binary.LittleEndian.PutUint32(h[40:], 48+3*size) // nextoffset
	binary.LittleEndian.PutUint32(h[44:], uint32(pool)-size)
	return h
}

// TestPythonPools: CPython's pools are claimed by their headers
// (python.obmalloc), runs of them in an arena the kernel merged with its
// neighbours, a never-used pool (no header) between two runs left out; 4
// KiB pools (Python before 3.10) too. A mapping whose first pool-aligned
// words only look like a header stays unexplained: maxnextoffset not the
// pool's size less the block's, a free list outside the pool, a size
// class past 512 bytes. Without ReadMemory nothing is claimed.
func TestPythonPools(t *testing.T) {
	const (
		arena    = 0x7f0000000000 // 16 KiB pools: 4, a virgin one, 2
		old      = 0x7f1000000000 // 4 KiB pools: 3
		badMax   = 0x7f2000000000
		badFree  = 0x7f3000000000
		badClass = 0x7f4000000000
		p16, p4  = 16 * KiB, 4 * KiB
	)
	mem := map[uint64][]byte{}
	for i := uint64(0); i < 7; i++ {
		if i != 4 {
			mem[arena+i*p16] = pyPool(arena+i*p16, p16, uint32(i))
		}
	}
	for i := uint64(0); i < 3; i++ {
		mem[old+i*p4] = pyPool(old+i*p4, p4, 1)
	}
	mem[badMax] = pyPool(badMax, p16, 2)
	binary.LittleEndian.PutUint32(mem[badMax][44:], uint32(p16)-16)
	mem[badFree] = pyPool(badFree, p16, 2)
	binary.LittleEndian.PutUint64(mem[badFree][8:], badFree+p16+8)
	mem[badClass] = pyPool(badClass, p16, 40)
	in := space(
		mk(arena, 8*p16, "rw-p", "", 8*p16),
		mk(old, 3*p4, "rw-p", "", 3*p4),
		mk(badMax, p16, "rw-p", "", p16),
		mk(badFree, p16, "rw-p", "", p16),
		mk(badClass, p16, "rw-p", "", p16),
	)
	in.Resident = pagemap([2]uint64{arena, arena + 8*p16}, [2]uint64{old, old + 3*p4},
		[2]uint64{badMax, badMax + p16}, [2]uint64{badFree, badFree + p16}, [2]uint64{badClass, badClass + p16})
	in.ReadMemory = func(addr uint64, b []byte) error {
		h, ok := mem[addr]
		if !ok {
			clear(b) // a pool never used: zeros
			return nil
		}
		copy(b, h)
		return nil
	}
	r := Compute(in)
	checkSums(t, r)
	p := partsByName(r)["python.obmalloc"]
	if want := int64(6*p16 + 3*p4); p.Count != 9 || p.Bytes != want || p.ReservedBytes != want {
		t.Errorf("python.obmalloc %+v; want 9 pools, %d B resident and reserved", p, want)
	}
	if want := int64(2*p16 + 3*p16); r.UnexplainedBytes != want {
		t.Errorf("unexplained %d B (%+v); want %d: the virgin pool, the arena's last 16 KiB and the three lookalikes", r.UnexplainedBytes, r.UnexplainedMappings, want)
	}

	// At most so many headers a walk: the rest unexplained, and said.
	defer func(n int) { pythonScanMaxPools = n }(pythonScanMaxPools)
	pythonScanMaxPools = 3
	r = Compute(in)
	checkSums(t, r)
	checkWalk(t, r)
	if p := partsByName(r)["python.obmalloc"]; p.Count != 3 || !strings.Contains(strings.Join(r.Warnings, "\n"), "3 pool headers read") {
		t.Errorf("reading at most 3 headers: python.obmalloc %+v, warnings %q; want 3 pools and a warning", p, r.Warnings)
	}
	pythonScanMaxPools = 1 << 17

	in.ReadMemory = nil
	r = Compute(in)
	checkSums(t, r)
	if p := partsByName(r)["python.obmalloc"]; p.Count != 0 || r.UnexplainedBytes != 8*p16+3*p4+3*p16 {
		t.Errorf("without ReadMemory: python.obmalloc %+v, unexplained %d B; want none, all of it", p, r.UnexplainedBytes)
	}
}

// TestOpenUnder: a mapped file is opened under the process's root; where
// that root may not be read, as this process sees the path.
func TestOpenUnder(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	os.MkdirAll(filepath.Join(root, "lib"), 0o755)
	os.WriteFile(filepath.Join(root, "lib", "x.so"), []byte("inside"), 0o644)
	ra, err := OpenUnder(root)("/lib/x.so")
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 6)
	ra.ReadAt(b, 0)
	ra.(io.Closer).Close()
	if string(b) != "inside" {
		t.Errorf("read %q under the root", b)
	}
	if _, err := OpenUnder(root)("/lib/missing.so"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file under the root: %v", err)
	}
	if _, err := OpenUnder(dir)("/root/../root"); err == nil {
		t.Error("a directory opened as a mapped file")
	}
	if os.Geteuid() == 0 {
		return // root reads any directory: no permission case to make
	}
	locked := filepath.Join(dir, "locked")
	os.Mkdir(locked, 0o000)
	self := filepath.Join(dir, "self.txt")
	os.WriteFile(self, []byte("outside"), 0o644)
	if ra, err := OpenUnder(locked)(self); err != nil {
		t.Errorf("a root that may not be read: %v, want the path opened as is", err)
	} else {
		ra.(io.Closer).Close()
	}
}

// TestGPUDeviceMappings: mappings of a GPU driver's device files (a CUDA
// context's pinned host memory and apertures) are their own part,
// gpu.driver, whole (private pages written included), not file pages of
// file.mapped or file.cow; they are listed with the files by device; and
// an anonymous mapping right above one is not taken for its .bss.
func TestGPUDeviceMappings(t *testing.T) {
	ctl := mk(0x7f0000000000, 2*MiB, "rw-s", "/dev/nvidiactl", 2*MiB)
	uvm := mk(0x7f0000200000, 4*MiB, "rw-p", "/dev/nvidia-uvm", 1*MiB)
	uvm.AnonymousBytes = 512 * KiB
	in := space(
		ctl, uvm,
		mk(0x7f0000600000, 8*MiB, "rw-p", "", 8*MiB),
		mk(0x7f1000000000, 64*MiB, "rw-s", "/dev/nvidia0", 0),
		mk(0x7f2000000000, 1*MiB, "r-xp", "/usr/lib/libc.so.6", 512*KiB),
	)
	r := Compute(in)
	checkSums(t, r)
	parts := partsByName(r)
	if g := parts["gpu.driver"]; g.Bytes != 3*MiB || g.ReservedBytes != 70*MiB || g.Count != 3 {
		t.Errorf("gpu.driver %+v, want 3 MiB resident of 70 MiB in 3 mappings", g)
	}
	if f, c := parts["file.mapped"], parts["file.cow"]; f.Bytes != 512*KiB || f.ReservedBytes != 1*MiB || c.Bytes != 0 {
		t.Errorf("file.mapped %+v, file.cow %+v: want libc's 512 KiB of 1 MiB and nothing written", f, c)
	}
	if b := parts["file.bss"]; b.Bytes != 0 {
		t.Errorf("file.bss %+v: the anonymous mapping above a device's is not its .bss", b)
	}
	if r.UnexplainedBytes != 8*MiB {
		t.Errorf("unexplained %d, want the 8 MiB anonymous mapping", r.UnexplainedBytes)
	}
	found := false
	for _, f := range r.Files {
		found = found || f.Path == "/dev/nvidiactl" && f.ResidentBytes == 2*MiB
	}
	if !found {
		t.Errorf("files %+v lack /dev/nvidiactl with 2 MiB resident", r.Files)
	}
	if !GPUDevice("/dev/dri/renderD128") || !GPUDevice("/dev/kfd") || GPUDevice("/dev/zero") || GPUDevice("/usr/lib/libnvidia-ml.so.1") {
		t.Error("GPUDevice: wrong on /dev/dri/renderD128, /dev/kfd, /dev/zero or libnvidia-ml")
	}
}

// TestNumpyHugepageChunks: testdata/smaps_numpy is the anonymous memory of
// Debian 12's python3.11 with numpy 1.24 holding ten 20 MiB arrays, and
// smaps_numpy.heads the first 16 bytes of each read-write mapping and of
// each chunk its chain reaches, as read from /proc/PID/mem. numpy
// madvises each large block MADV_HUGEPAGE from the page after its start,
// so each glibc chunk (20 MiB + 4 KiB) is two mappings: its header alone
// in 4 KiB, the rest with VmFlags "hg". Each is one c.malloc.mmap block,
// claimed across both; before, all 200 MiB were unexplained.
func TestNumpyHugepageChunks(t *testing.T) {
	ms, err := procfs.ReadSmapsFile(filepath.Join("testdata", "smaps_numpy"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join("testdata", "smaps_numpy.heads"))
	if err != nil {
		t.Fatal(err)
	}
	heads := map[uint64][2]uint64{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var a, p, s uint64
		if _, err := fmt.Sscanf(line, "%x %x %x", &a, &p, &s); err != nil {
			t.Fatalf("smaps_numpy.heads: %q: %v", line, err)
		}
		heads[a] = [2]uint64{p, s}
	}
	in := space(ms...)
	in.ReadMemory = chunkMemory(heads)
	r := Compute(in)
	checkSums(t, r)
	checkWalk(t, r)
	const block = 20*MiB + 4*KiB
	p := partsByName(r)["c.malloc.mmap"]
	if p.Count < 10 || p.Bytes < 10*block || p.ReservedBytes < 10*block {
		t.Errorf("c.malloc.mmap %+v; want at least the ten 20 MiB arrays' chunks (%d B each)", p, block)
	}
	for _, u := range r.UnexplainedAll {
		if u.ResidentBytes >= 16*MiB {
			t.Errorf("unexplained %#x-%#x: %d B resident; want none of the arrays unexplained", u.Start, u.End, u.ResidentBytes)
		}
	}
}

// pyArenaChunks is memory holding CPython arenas of 16 KiB pools (used
// pools from each arena's start, the rest never used: zeros) and chunk
// headers: what the kernel merges when Python maps its arenas beside
// glibc's large blocks.
func pyArenaChunks(arenas map[uint64]int, chunks map[uint64][2]uint64) func(addr uint64, b []byte) error {
	return func(addr uint64, b []byte) error {
		clear(b)
		if h, ok := chunks[addr]; ok {
			binary.NativeEndian.PutUint64(b, h[0])
			binary.NativeEndian.PutUint64(b[8:], h[1])
			return nil
		}
		for a, used := range arenas {
			if addr >= a && addr < a+uint64(used)*16*KiB && (addr-a)%(16*KiB) == 0 {
				copy(b, pyPool(addr, 16*KiB, 3))
			}
		}
		return nil
	}
}

// TestChunksAfterPythonArenas: the mixed program's shape (twelve 20 MiB
// bytearrays beside lists of strings, Debian's python3.11): the kernel
// merged one or two 1 MiB obmalloc arenas below each chunk, and the chain
// read from the mapping's start stopped at the arena; 240 MiB were
// unexplained. The chunk after the arenas is claimed where its chain runs
// to the mapping's end (one arena, part used), or to the next arena's
// pools (two chunks, between arenas). A lookalike header whose chain
// stops short of both is not.
func TestChunksAfterPythonArenas(t *testing.T) {
	const (
		one     = 0x7f0000000000 // arena (40 pools used), chunk 20 MiB + 4 KiB
		between = 0x7f1000000000 // arena, chunk 2 MiB, arena (full), chunk 4 MiB
		fake    = 0x7f2000000000 // arena, a header of 1 MiB in 3 MiB
		block   = 20*MiB + 4*KiB
	)
	in := space(
		mk(one, MiB+block, "rw-p", "", MiB+block),
		mk(between, 2*MiB+6*MiB, "rw-p", "", 8*MiB),
		mk(fake, 4*MiB, "rw-p", "", 4*MiB),
	)
	in.Resident = pagemap([2]uint64{one, one + MiB + block}, [2]uint64{between, between + 8*MiB}, [2]uint64{fake, fake + 4*MiB})
	in.ReadMemory = pyArenaChunks(
		map[uint64]int{one: 40, between: 64, between + 3*MiB: 64, fake: 64},
		map[uint64][2]uint64{one + MiB: {0, block | 2}, between + MiB: {0, 2*MiB | 2}, between + 4*MiB: {0, 4*MiB | 2}, fake + MiB: {0, MiB | 2}})
	r := Compute(in)
	checkSums(t, r)
	checkWalk(t, r)
	p := partsByName(r)["c.malloc.mmap"]
	if want := int64(block + 6*MiB); p.Count != 3 || p.Bytes != want {
		t.Errorf("c.malloc.mmap %+v; want 3 blocks, %d B", p, want)
	}
	// Left: the first arena's 24 pools never used, and the lookalike's 3 MiB.
	if want := int64(24*16*KiB + 3*MiB); r.UnexplainedBytes != want {
		t.Errorf("unexplained %d B (%+v); want %d", r.UnexplainedBytes, r.UnexplainedMappings, want)
	}
}
