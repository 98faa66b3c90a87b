package procfs

import (
	"errors"
	"path/filepath"
	"runtime"
	"testing"
)

func TestReadSmapsFixture(t *testing.T) {
	ms, err := NewFS("testdata").ReadSmaps(0) // testdata/self/smaps does not exist
	if err == nil {
		t.Fatalf("read %d mappings from a missing file", len(ms))
	}
	ms, err = ReadSmapsFile(filepath.Join("testdata", "smaps"))
	if err != nil {
		t.Fatal(err)
	}
	// Values from testdata/smaps, times 1024.
	want := []Mapping{
		{Start: 0x400000, End: 0x401000, Perms: "r-xp", Path: "/usr/bin/probe", SizeBytes: 4 << 10, RssBytes: 4 << 10, PssBytes: 4 << 10},
		{Start: 0xc000000000, End: 0xc004000000, Perms: "rw-p", SizeBytes: 65536 << 10, RssBytes: 40960 << 10, PssBytes: 40960 << 10, PrivateDirtyBytes: 40960 << 10, AnonymousBytes: 40960 << 10},
		{Start: 0x1000000, End: 0x1021000, Perms: "rw-p", Path: "[heap]", SizeBytes: 132 << 10, RssBytes: 100 << 10, PssBytes: 100 << 10, PrivateDirtyBytes: 100 << 10, AnonymousBytes: 100 << 10},
		{Start: 0x7f0000000000, End: 0x7f0002001000, Perms: "rw-p", SizeBytes: 32772 << 10, RssBytes: 16384 << 10, PssBytes: 16384 << 10, PrivateDirtyBytes: 16384 << 10, AnonymousBytes: 16384 << 10},
		{Start: 0x7f0010000000, End: 0x7f0010001000, Perms: "rw-p", Path: "/tmp/a b.so (deleted)", SizeBytes: 4 << 10, RssBytes: 4 << 10, PssBytes: 4 << 10, PrivateDirtyBytes: 4 << 10, AnonymousBytes: 4 << 10},
		{Start: 0x7ffd00000000, End: 0x7ffd00021000, Perms: "rw-p", Path: "[stack]", SizeBytes: 132 << 10, RssBytes: 16 << 10, PssBytes: 16 << 10, PrivateDirtyBytes: 16 << 10, AnonymousBytes: 16 << 10},
	}
	if len(ms) != len(want) {
		t.Fatalf("%d mappings, want %d: %+v", len(ms), len(want), ms)
	}
	for i := range want {
		if ms[i] != want[i] {
			t.Errorf("mapping %d:\n got %+v\nwant %+v", i, ms[i], want[i])
		}
	}
}

// TestParseSmapsRereadArea: a [heap] that grew between two of the
// kernel's reads is printed twice from one start (sqlite3's, 117360 and
// 117492 kB): the later one is kept, once, so the parts cannot pass RSS.
// The old parser kept both.
func TestParseSmapsRereadArea(t *testing.T) {
	text := `55727000f000-557270010000 r--p 00000000 08:01 42 /usr/bin/sqlite3
Size:                  4 kB
Rss:                   4 kB
557272f8d000-55727a229000 rw-p 00000000 00:00 0                          [heap]
Size:             117360 kB
Rss:              117360 kB
557272f8d000-55727a24a000 rw-p 00000000 00:00 0                          [heap]
Size:             117492 kB
Rss:              117492 kB
7f0e86e62000-7f0e88e63000 rw-p 00000000 00:00 0 
Size:              32772 kB
Rss:               30732 kB
`
	ms, err := ParseSmaps([]byte(text), "smaps")
	if err != nil {
		t.Fatal(err)
	}
	var rss uint64
	for _, m := range ms {
		rss += m.RssBytes
	}
	if len(ms) != 3 || ms[1].Path != "[heap]" || ms[1].End != 0x55727a24a000 || ms[1].RssBytes != 117492<<10 || rss != (4+117492+30732)<<10 {
		t.Errorf("mappings %+v (Σ Rss %d): want the binary, the later [heap] once, the anonymous one", ms, rss)
	}
}

func TestParseSmapsMalformed(t *testing.T) {
	for _, in := range []string{
		"Rss: 4 kB\n", // before any header
		"00400000-00401000 r-xp 00000000 fe:00 123 /x\nRss: 4 MB\n",
		"00400000-00401000 r-xp 00000000 fe:00 123 /x\ngarbage\n",
	} {
		_, err := ParseSmaps([]byte(in), "in")
		var pe *ParseError
		if !errors.Is(err, ErrMalformed) || !errors.As(err, &pe) {
			t.Errorf("ParseSmaps(%q) = %v, want a *ParseError wrapping ErrMalformed", in, err)
		}
	}
}

func TestReadSmapsLive(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	ms, err := FS{}.ReadSmaps(Self)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ReadSmapsRollup(Self)
	if err != nil {
		t.Fatal(err)
	}
	var rss uint64
	for _, m := range ms {
		rss += m.RssBytes
		if m.End <= m.Start || m.SizeBytes != m.End-m.Start {
			t.Errorf("mapping %+v: size does not match its range", m)
		}
	}
	// Two reads, moments apart: allow the test's own growth.
	if d := int64(rss) - int64(r.RssBytes); d > 4<<20 || d < -4<<20 {
		t.Errorf("smaps Rss sums to %d, smaps_rollup says %d", rss, r.RssBytes)
	}
}
