package schema

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteFile: a file is replaced whole, a symbolic link kept and its
// target replaced, a dangling link kept and its target created, a device
// written through, a directory refused; no temporary file is left behind.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "r.json")
	if err := os.WriteFile(file, []byte("old, and longer than the new bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(file, []byte("new")); err != nil {
		t.Fatalf("writeFile %s: %v", file, err)
	}
	if b, _ := os.ReadFile(file); string(b) != "new" {
		t.Errorf("%s holds %q, want %q", file, b, "new")
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("%s: mode %v (%v), want 0644", file, fi.Mode(), err)
	}

	link := filepath.Join(dir, "link.json")
	if err := os.Symlink("r.json", link); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(link, []byte("through the link")); err != nil {
		t.Fatalf("writeFile %s: %v", link, err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("%s is no longer a symbolic link (%v)", link, err)
	}
	if b, _ := os.ReadFile(file); string(b) != "through the link" {
		t.Errorf("the link's target holds %q, want what was written through the link", b)
	}

	// A dangling link is followed: the file it names is created and the
	// link kept. schema's own copy of the writer replaced the link with a
	// regular file, losing the link and writing beside it rather than
	// where the commands' check (atomicfile.CheckWritable) had looked.
	dangling := filepath.Join(dir, "dangling.json")
	later := filepath.Join(dir, "later.json")
	if err := os.Symlink("later.json", dangling); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(dangling, []byte("made through the link")); err != nil {
		t.Fatalf("writeFile %s: %v", dangling, err)
	}
	if fi, err := os.Lstat(dangling); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("%s is no longer a symbolic link (%v)", dangling, err)
	}
	if b, err := os.ReadFile(later); err != nil || string(b) != "made through the link" {
		t.Errorf("the dangling link's target holds %q (%v), want what was written through the link", b, err)
	}

	if err := writeFile(os.DevNull, []byte("x")); err != nil {
		t.Errorf("writeFile %s: %v (want it written through)", os.DevNull, err)
	}
	if err := writeFile(dir, []byte("x")); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("writeFile on a directory: %v, want \"is a directory\"", err)
	}
	if err := writeFile(filepath.Join(dir, "missing", "r.json"), []byte("x")); err == nil {
		t.Error("writeFile into a missing directory: no error")
	}

	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}
