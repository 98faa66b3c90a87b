package procfs

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestReadWhole: a file larger than the first buffer (256 KiB) comes back
// whole, through the doubling, and so does /proc/self/maps; a missing
// file is an error. (That its reads print no area twice is
// outside's TestWalkAreaOnce, against a program growing its heap.)
func TestReadWhole(t *testing.T) {
	want := bytes.Repeat([]byte("0123456789abcdef"), 40000) // 640000 B
	path := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(path, want, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, hint := range []int{0, 1000, len(want), 2 << 20} {
		got, err := ReadWhole(path, hint)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("hint %d: %d bytes, %v; want the file's %d", hint, len(got), err, len(want))
		}
	}
	if b, err := ReadWhole("/proc/self/maps", 0); err != nil || !bytes.Contains(b, []byte("[stack]")) {
		t.Errorf("/proc/self/maps: %d bytes, %v; want the maps with [stack]", len(b), err)
	}
	if _, err := ReadWhole(filepath.Join(t.TempDir(), "none"), 0); !os.IsNotExist(err) {
		t.Errorf("a missing file: %v, want not exist", err)
	}
}
