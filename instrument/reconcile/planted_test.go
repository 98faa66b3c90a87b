package reconcile

import (
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"memprobe/instrument/procfs"
	"memprobe/instrument/rtstats"
	"memprobe/ledger"
	"memprobe/report"
)

// plantUnaccounted is the test-only hook: it maps n bytes of anonymous
// memory the way C code would (mmap, outside Go's allocator, the ledger
// and every shape the reconciliation knows), writes every page so that it
// is resident, and returns its address and a function that unmaps it.
func plantUnaccounted(t *testing.T, n int) (addr uint64, unmap func()) {
	t.Helper()
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += os.Getpagesize() {
		b[i] = 1
	}
	return uint64(uintptr(unsafe.Pointer(&b[0]))), func() { syscall.Munmap(b) }
}

// TestLivePlantedIsUnexplained plants 64 MiB that no class covers and
// checks that the reconciliation reports at least 80 % of it as
// unexplained and names its mapping. The planted memory can lose at most
// Go's metadata budget (a few MiB, and only if the kernel merged it with
// a smaller candidate) or 8 MiB to a stack shape (were it placed right
// above a small PROT_NONE mapping): both leave more than 80 %.
func TestLivePlantedIsUnexplained(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	const planted = 64 << 20
	rt := rtstats.New()
	before, err := GatherSelf(rt, ledger.New(), true)
	if err != nil {
		t.Fatal(err)
	}
	base := Compute(before)

	addr, unmap := plantUnaccounted(t, planted)
	defer unmap()
	in, err := GatherSelf(rt, ledger.New(), true)
	if err != nil {
		t.Fatal(err)
	}
	r := Compute(in)
	checkSums(t, r)
	var table bytes.Buffer
	if err := report.WriteReconciliation(&table, r); err != nil {
		t.Fatal(err)
	}
	t.Logf("with %d MiB planted at %#x:\n%s", planted>>20, addr, table.String())
	if r.UnexplainedBytes < planted*8/10 {
		t.Errorf("unexplained %d B with %d B planted, want at least 80 %%", r.UnexplainedBytes, planted)
	}
	if d := r.UnexplainedBytes - base.UnexplainedBytes; d < planted*8/10 {
		t.Errorf("unexplained grew by %d B (%d -> %d) with %d B planted, want at least 80 %%", d, base.UnexplainedBytes, r.UnexplainedBytes, planted)
	}
	var named int64
	for _, p := range r.UnexplainedMappings {
		if p.Start < addr+planted && addr < p.End {
			named += p.ResidentBytes
		}
	}
	if named < planted*8/10 {
		t.Errorf("the unexplained mappings hold %d B of the planted range %#x-%#x: %+v", named, addr, addr+planted, r.UnexplainedMappings)
	}
}

// plantAt maps n bytes of anonymous read-write memory at addr exactly
// (MAP_FIXED_NOREPLACE: it fails rather than replace a mapping), or where
// the kernel likes when addr is 0, and makes every page resident
// (MADV_POPULATE_WRITE, or by writing each page where the kernel predates
// it). It is what a C library's mmap leaves: no allocator of the process,
// no ledger and no name know it.
func plantAt(t *testing.T, addr uint64, n int) (start uint64, unmap func()) {
	t.Helper()
	flags := unix.MAP_PRIVATE | unix.MAP_ANONYMOUS
	if addr != 0 {
		flags |= unix.MAP_FIXED_NOREPLACE
	}
	r, _, errno := unix.Syscall6(unix.SYS_MMAP, uintptr(addr), uintptr(n), unix.PROT_READ|unix.PROT_WRITE, uintptr(flags), ^uintptr(0), 0)
	if errno != 0 {
		t.Fatalf("planting %d B at %#x: mmap: %v", n, addr, errno)
	}
	unmap = func() { unix.Syscall(unix.SYS_MUNMAP, r, uintptr(n), 0) }
	if addr != 0 && uint64(r) != addr {
		unmap()
		t.Fatalf("planting %d B at %#x: mmap placed it at %#x (a kernel without MAP_FIXED_NOREPLACE)", n, addr, r)
	}
	if _, _, errno := unix.Syscall(unix.SYS_MADVISE, r, uintptr(n), unix.MADV_POPULATE_WRITE); errno != 0 {
		b := unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&r))), n)
		for i := 0; i < n; i += os.Getpagesize() {
			b[i] = 1
		}
	}
	return uint64(r), unmap
}

// walkUnexplained is r's unexplained bytes as the page walk sees them:
// without the status counters' drift from it (VmRSS − Σ smaps Rss, per-CPU
// batched: up to tens of MiB on a large machine), which would swamp the
// small plants.
func walkUnexplained(r Reconciliation) int64 {
	return r.UnexplainedBytes - (r.RSSBytes - r.SmapsRSSBytes)
}

// reconcileSelf gathers and computes this process's reconciliation.
func reconcileSelf(t *testing.T, rt *rtstats.Reader) Reconciliation {
	t.Helper()
	in, err := GatherSelf(rt, ledger.New(), true)
	if err != nil {
		t.Fatal(err)
	}
	r := Compute(in)
	checkSums(t, r)
	return r
}

// checkPlanted reconciles the process before and after plant, which maps
// planted bytes and returns their ranges, and requires the unexplained
// bytes (as the page walk sees them) to grow by the planted bytes within
// ±10 %.
func checkPlanted(t *testing.T, planted int64, plant func() (ranges [][2]uint64, unmap func())) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	// Go's metadata outside its arenas is unexplained (probable Go
	// metadata), and a GC cycle changes it (mark bits come from fresh
	// 64 KiB chunks): warm up (the first walks allocate what later ones
	// reuse), then read twice without a GC between.
	rt := rtstats.New()
	for range 2 {
		reconcileSelf(t, rt)
	}
	runtime.GC()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	base := reconcileSelf(t, rt)
	ranges, unmap := plant()
	defer unmap()
	r := reconcileSelf(t, rt)
	var table bytes.Buffer
	if err := report.WriteReconciliation(&table, r); err != nil {
		t.Fatal(err)
	}
	d := walkUnexplained(r) - walkUnexplained(base)
	t.Logf("planted %d B in %#x: unexplained (page walk) %d -> %d B, +%d B\n%s", planted, ranges, walkUnexplained(base), walkUnexplained(r), d, table.String())
	if d < planted*9/10 || d > planted*11/10 {
		t.Errorf("unexplained grew by %d B with %d B planted, want within ±10 %%", d, planted)
		t.Logf("before:\n%s\nmappings before: %+v\nafter: %+v", renderString(base), base.UnexplainedMappings, r.UnexplainedMappings)
	}
	// The listing names the 8 largest unexplained mappings and sums the
	// rest in one line (Start and End 0): a plant of small pieces may be
	// there, among other mappings (the race runtime's).
	var named int64
	for _, p := range r.UnexplainedMappings {
		if p.Start == 0 && p.End == 0 {
			named += p.ResidentBytes
			continue
		}
		for _, g := range ranges {
			if p.Start < g[1] && g[0] < p.End {
				named += p.ResidentBytes
				break
			}
		}
	}
	if named < planted*9/10 {
		t.Errorf("the unexplained mappings hold %d B of the plants %#x: %+v", named, ranges, r.UnexplainedMappings)
	}
}

// TestPlanted1MiB: 1 MiB of C memory (mmap, every page touched) is
// unexplained, not Go metadata by size.
func TestPlanted1MiB(t *testing.T) {
	checkPlanted(t, 1<<20, func() ([][2]uint64, func()) {
		a, unmap := plantAt(t, 0, 1<<20)
		return [][2]uint64{{a, a + 1<<20}}, unmap
	})
}

// TestPlanted4x256KiB: four 256 KiB C mmaps, each smaller than what Go's
// metadata classes count, are unexplained. Holes between them keep them
// four mappings.
func TestPlanted4x256KiB(t *testing.T) {
	const n, gap = 256 << 10, 64 << 10
	checkPlanted(t, 4*n, func() ([][2]uint64, func()) {
		a, unmapAll := plantAt(t, 0, 4*(n+gap))
		var ranges [][2]uint64
		for i := range 4 {
			lo := a + uint64(i*(n+gap))
			unix.Syscall(unix.SYS_MUNMAP, uintptr(lo+n), gap, 0) // a hole above each
			ranges = append(ranges, [2]uint64{lo, lo + n})
		}
		return ranges, unmapAll
	})
}

// TestPlantedAboveGoArena: 32 MiB mapped right above Go's arena
// reservation (the PROT_NONE top of the arena the heap grows in) is
// unexplained, not go.arena.other.
func TestPlantedAboveGoArena(t *testing.T) {
	const n = 32 << 20
	checkPlanted(t, n, func() ([][2]uint64, func()) {
		in, err := GatherSelf(rtstats.New(), ledger.New(), true)
		if err != nil {
			t.Fatal(err)
		}
		top := arenaRunTop(t, in)
		a, unmap := plantAt(t, top, n)
		return [][2]uint64{{a, a + n}}, unmap
	})
}

// arenaRunTop is where to plant right above the run of anonymous
// mappings that holds Go's heap (in.GoAddrs[0]): the end of the heap's
// PROT_NONE reservation, or, where the heap has filled its arena to the
// boundary and there is no reservation above, one page past it (a plant
// right at a read-write run's end would merge with it, which
// TestComputeNextToGoArena's fixtures cover).
func arenaRunTop(t *testing.T, in Input) uint64 {
	t.Helper()
	ms := in.Mappings
	i := slices.IndexFunc(ms, func(m procfs.Mapping) bool { return m.Start <= in.GoAddrs[0] && in.GoAddrs[0] < m.End })
	if i < 0 {
		t.Fatalf("no mapping holds the Go heap address %#x", in.GoAddrs[0])
	}
	for i+1 < len(ms) && ms[i+1].Start == ms[i].End && ms[i+1].Path == "" {
		i++
	}
	if ms[i].End%GoHeapArenaBytes != 0 {
		t.Fatalf("Go's heap run ends in %+v: not at an arena boundary", ms[i])
	}
	if ms[i].Perms[:3] != "---" {
		t.Logf("Go's heap fills its arena to %#x: planting a page above it", ms[i].End)
		return ms[i].End + uint64(os.Getpagesize())
	}
	return ms[i].End
}

func renderString(r Reconciliation) string {
	var b bytes.Buffer
	report.WriteReconciliation(&b, r)
	return b.String()
}
