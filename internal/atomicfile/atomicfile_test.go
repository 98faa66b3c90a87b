package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteReplacesWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.json")
	if err := WriteBytes(path, []byte("old")); err != nil {
		t.Fatal(err)
	}
	if err := WriteBytes(path, []byte("new")); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	st, _ := os.Stat(path)
	if string(b) != "new" || st.Mode().Perm() != 0o644 {
		t.Errorf("got %q mode %v, want \"new\" mode 0644", b, st.Mode().Perm())
	}
}

func TestFailedWriteKeepsOld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ck.bin")
	WriteBytes(path, []byte("good"))
	boom := errors.New("boom")
	err := Write(path, func(w io.Writer) error {
		w.Write([]byte("half"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want boom", err)
	}
	b, _ := os.ReadFile(path)
	entries, _ := os.ReadDir(dir)
	if string(b) != "good" || len(entries) != 1 {
		t.Errorf("after a failed write: %q and %d entries, want \"good\" and 1", b, len(entries))
	}
	if err := WriteBytes(filepath.Join(dir, "no/such/dir/x"), nil); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}

// TestCheckWritable: a path in a writable directory passes and leaves
// nothing behind; a missing directory, a directory as the path, a file as
// the directory fail with the path named.
func TestCheckWritable(t *testing.T) {
	dir := t.TempDir()
	if err := CheckWritable(filepath.Join(dir, "r.json")); err != nil {
		t.Errorf("writable: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("CheckWritable left %d files behind", len(ents))
	}
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{filepath.Join(dir, "nodir", "r.json"), "no such file or directory"},
		{dir, "is a directory"},
		{filepath.Join(file, "r.json"), "is not a directory"},
	} {
		err := CheckWritable(c.path)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.path) {
			t.Errorf("CheckWritable(%s) = %v, want an error naming it and %q", c.path, err, c.want)
		}
	}
}
