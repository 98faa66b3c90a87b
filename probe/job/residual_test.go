package job

import (
	"path/filepath"
	"testing"

	"memprobe/probe/procfs"
)

// TestClassify splits the procfs smaps fixture: the anonymous mapping at
// 0xc000000000 holds a heap address, so it is Go's arena; the other
// anonymous mapping, [heap], the written page of a file mapping and
// [stack] are the residual.
func TestClassify(t *testing.T) {
	ms, err := procfs.ReadSmapsFile(filepath.Join("..", "procfs", "testdata", "smaps"))
	if err != nil {
		t.Fatal(err)
	}
	shares, arena := classify(ms, 8, []uintptr{0xc000001000})
	if arena != 40960<<10 {
		t.Errorf("go arena rss %d, want %d", arena, 40960<<10)
	}
	want := []MappingShare{
		{Name: "[heap] (glibc main malloc arena)", Class: "c.brk_heap", RssBytes: 100 << 10, AnonymousBytes: 100 << 10, SizeBytes: 132 << 10, Mappings: 1},
		{Name: "written pages of private file mappings", Class: "file.cow", RssBytes: 4 << 10, AnonymousBytes: 4 << 10, SizeBytes: 4 << 10, Mappings: 1},
		{Name: "[stack] (main thread)", Class: "stack.main", RssBytes: 16 << 10, AnonymousBytes: 16 << 10, SizeBytes: 132 << 10, Mappings: 1},
		{Name: "anon 0x7f0000000000-0x7f0002001000 (32.0 MiB mapped)", Class: "anon.outside_go_arena", RssBytes: 16384 << 10, AnonymousBytes: 16384 << 10, SizeBytes: 32772 << 10, Mappings: 1},
	}
	if len(shares) != len(want) {
		t.Fatalf("%d shares, want %d: %+v", len(shares), len(want), shares)
	}
	for i := range want {
		if shares[i] != want[i] {
			t.Errorf("share %d:\n got %+v\nwant %+v", i, shares[i], want[i])
		}
	}
	// Without a heap address the arena mapping is residual too, and with
	// n = 1 the smaller anonymous mapping is summed.
	shares, arena = classify(ms, 1, nil)
	if arena != 0 || len(shares) != 5 || shares[4].Name != "1 smaller anonymous mappings" || shares[3].RssBytes != 40960<<10 {
		t.Errorf("no heap addresses: arena %d, %+v", arena, shares)
	}
}
