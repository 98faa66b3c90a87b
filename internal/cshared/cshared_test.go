package cshared

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuild: one library file per set of definitions, whatever their
// order or -D prefix; a definition that is not one is refused before gcc
// runs; a source gcc rejects fails with gcc's words.
func TestBuild(t *testing.T) {
	l := &Library{Prefix: "csharedtest", Source: []byte("int twice(int x) { return 2 * X * x; }\n"), SourceName: "t.c",
		LibName: "libt.so", CFlags: []string{"-shared", "-fPIC"}}
	a, err := l.Build("X=1", "-DY")
	if errors.Is(err, ErrNoCgo) || errors.Is(err, ErrNoGCC) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if b, err := l.Build("Y", "X=1"); err != nil || b != a {
		t.Errorf("the same definitions again: %s, %v; want %s", b, err, a)
	}
	if c, err := l.Build("X=2"); err != nil || c == a || filepath.Base(c) != "libt.so" {
		t.Errorf("other definitions: %s, %v; want another libt.so", c, err)
	}
	if _, err := os.Stat(a); err != nil {
		t.Error(err)
	}
	if _, err := l.Build("1X"); err == nil || !strings.Contains(err.Error(), `"1X" is not a preprocessor definition`) {
		t.Errorf("Build(1X) = %v", err)
	}
	bad := &Library{Prefix: "csharedtest", Source: []byte("this is not C\n"), SourceName: "bad.c", LibName: "libbad.so", CFlags: []string{"-shared"}}
	if _, err := bad.Build(); err == nil || !strings.Contains(err.Error(), "csharedtest.Build: gcc") {
		t.Errorf("bad source: %v, want gcc's error", err)
	}
}
