package reconcile

import (
	"bytes"
	"os"
	"runtime"
	"syscall"
	"testing"
	"unsafe"

	"memprobe/probe/ledger"
	"memprobe/probe/rtstats"
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
	if err := Render(&table, r); err != nil {
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
