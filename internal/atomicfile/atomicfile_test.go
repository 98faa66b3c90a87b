package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
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
