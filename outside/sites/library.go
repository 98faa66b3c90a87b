package sites

import (
	_ "embed"

	"memprobe/internal/cshared"
)

//go:embed preload/sites.c
var source []byte

// CFlags and LDLibs are how the library is compiled, here and by make
// build (the Makefile says the same).
var (
	CFlags = []string{"-O2", "-g", "-shared", "-fPIC", "-pthread", "-fvisibility=hidden", "-Wall"}
	LDLibs = []string{"-lm"}
)

var library = &cshared.Library{Prefix: "sites", Source: source, SourceName: "sites.c", LibName: LibName,
	CFlags: CFlags, LDLibs: LDLibs, Preload: true}

// Build compiles the library from its source with gcc (once per process)
// and returns its path: for tests, which need no make build. The error
// wraps cshared.ErrNoGCC where gcc is missing.
func Build() (string, error) { return library.Build() }
