// Package golden compares what a test printed with a file in testdata/, the
// way golang.org/x/perf's and google/pprof's command tests do: `go test
// -update` rewrites the files, and a mismatch leaves the output beside the
// golden file as NAME.got for diffing.
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Update is the -update flag of every test binary that imports this package.
var Update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// Check compares got with testdata/name.
func Check(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *Update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		os.WriteFile(path+".got", got, 0o644)
		t.Errorf("%s differs from the golden file; the output is in %s.got:\n%s", path, path, got)
	} else {
		os.Remove(path + ".got")
	}
}

// FirstDiff names the first line where have and want differ, for a test
// that compares a document with what renders it: "line N: have …, want …".
func FirstDiff(have, want []byte) string {
	hl, wl := bytes.Split(have, []byte("\n")), bytes.Split(want, []byte("\n"))
	for i := range max(len(hl), len(wl)) {
		var h, w []byte
		if i < len(hl) {
			h = hl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if !bytes.Equal(h, w) {
			return fmt.Sprintf("line %d:\n  have %q\n  want %q", i+1, h, w)
		}
	}
	return "(same lines)"
}
