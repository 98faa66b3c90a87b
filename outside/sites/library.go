package sites

import (
	"embed"
	"io/fs"
	"path"

	"memprobe/internal/cshared"
)

// The library's source: preload/sites.c, which #includes the other units
// of preload/ (one translation unit; sites.c says why).
//
//go:embed preload/*.c preload/*.h
var preload embed.FS

// CFlags and LDLibs are how the library is compiled, here and by make
// build (the Makefile says the same).
var (
	CFlags = []string{"-O2", "-g", "-shared", "-fPIC", "-pthread", "-fvisibility=hidden", "-Wall"}
	LDLibs = []string{"-lm"}
)

var library = newLibrary()

func newLibrary() *cshared.Library {
	l := &cshared.Library{Prefix: "sites", SourceName: "sites.c", LibName: LibName,
		CFlags: CFlags, LDLibs: LDLibs, Preload: true, Includes: map[string][]byte{}}
	files, err := fs.Glob(preload, "preload/*")
	if err != nil {
		panic(err) // a bad pattern: a bug here
	}
	for _, f := range files {
		text, err := preload.ReadFile(f)
		if err != nil {
			panic(err) // embedded: cannot fail
		}
		if name := path.Base(f); name == l.SourceName {
			l.Source = text
		} else {
			l.Includes[name] = text
		}
	}
	return l
}

// Build compiles the library from its source with gcc (once per process)
// and returns its path: for tests, which need no make build. The error
// wraps cshared.ErrNoGCC where gcc is missing.
func Build() (string, error) { return library.Build() }
