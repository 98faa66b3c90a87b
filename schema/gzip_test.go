package schema

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadFileGzip: a compressed file reads as its content, a plain one
// as it is, and a corrupt compressed one is refused naming the file.
func TestReadFileGzip(t *testing.T) {
	dir := t.TempDir()
	want := []byte(`{"schema": "x"}`)
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	w.Write(want)
	w.Close()
	plain, packed, bad := filepath.Join(dir, "a.json"), filepath.Join(dir, "a.json.gz"), filepath.Join(dir, "bad.json.gz")
	os.WriteFile(plain, want, 0o644)
	os.WriteFile(packed, z.Bytes(), 0o644)
	os.WriteFile(bad, z.Bytes()[:z.Len()/2], 0o644)
	for _, p := range []string{plain, packed} {
		if got, err := ReadFile(p); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %q, %v; want %q", p, got, err, want)
		}
	}
	if _, err := ReadFile(bad); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "decompressing") {
		t.Errorf("truncated gzip: %v, want an error naming %s", err, bad)
	}
}
