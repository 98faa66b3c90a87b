// Package sitestest builds the allocation-site library for the tests of
// the packages that run programs under it (outside, run/runner,
// cmd/probe), from its source, with no make.
package sitestest

import (
	"errors"
	"testing"

	"memprobe/internal/cshared"
	"memprobe/outside/sites"
)

// Lib builds the library and points the probe at it for the rest of the
// test (sites.EnvLib); it skips the test where gcc is missing.
func Lib(t testing.TB) string {
	t.Helper()
	lib, err := sites.Build()
	switch {
	case errors.Is(err, cshared.ErrNoGCC):
		t.Skip("gcc not found: the allocation-site library cannot be built")
	case err != nil:
		t.Fatal(err)
	}
	t.Setenv(sites.EnvLib, lib)
	return lib
}
