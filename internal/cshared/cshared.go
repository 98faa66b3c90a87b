// Package cshared compiles one C file into a shared library with gcc, once
// per set of preprocessor definitions in a process: how the test doubles
// of the NVIDIA libraries (internal/fakecuda, internal/fakenvml) are
// built on a machine with no NVIDIA driver, so that the run-time bindings
// (trainer/device/cudadrv, instrument/gpumem) run their real code paths in
// every test run.
//
// Each set of definitions is its own library file and so, once loaded,
// its own instance with its own state: tests that must not share a fake's
// state ask for different definitions. The files live under
// $TMPDIR/memprobe-<Prefix>-<pid>/ (a process cannot remove a library it
// still maps); Build removes the directories of processes that have
// exited.
package cshared

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

var (
	// ErrNoCgo is wrapped by Build's error in a build without cgo: the
	// bindings a fake stands in for refuse every library there, so there
	// is nothing to test on it.
	ErrNoCgo = errors.New("CGO_ENABLED=0: the run-time bindings need cgo, so there is nothing to test on a fake library")
	// ErrNoGCC is wrapped by Build's error when gcc is not installed.
	ErrNoGCC = errors.New("gcc not found: the fake library cannot be built")
)

// Library is one C source and how to compile it.
type Library struct {
	// Prefix names the build directories and the errors ("fakecuda").
	Prefix string
	// Source is the C file's text and SourceName its file name.
	Source     []byte
	SourceName string
	// Includes are the files Source #includes ("unit.c"), by name:
	// written beside it.
	Includes map[string][]byte
	// LibName is the shared library's file name: the soname of the
	// library it stands in for, so that a loader's message names what it
	// would.
	LibName string
	// CFlags go before the definitions, LDLibs after the source.
	CFlags, LDLibs []string
	// Preload says the library is loaded by another program
	// (LD_PRELOAD), not by this one through cgo: it is built in a
	// build without cgo too.
	Preload bool

	mu     sync.Mutex
	builds map[string]string // normalised definitions → library path
	root   string
}

// Build compiles the library for defines (once per set of them in the
// process) and returns its path. A definition is "NAME" or "NAME=VALUE",
// a leading -D accepted. Without cgo the error wraps ErrNoCgo, without gcc
// ErrNoGCC: a test skips on those and fails on any other.
func (l *Library) Build(defines ...string) (string, error) {
	if !cgoEnabled && !l.Preload {
		return "", fmt.Errorf("%s: %w", l.Prefix, ErrNoCgo)
	}
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		return "", fmt.Errorf("%s: %w (%v)", l.Prefix, ErrNoGCC, err)
	}
	flags := make([]string, 0, len(defines))
	for _, d := range defines {
		d = strings.TrimPrefix(d, "-D")
		name, _, _ := strings.Cut(d, "=")
		if !isIdent(name) {
			return "", fmt.Errorf("%s.Build: %q is not a preprocessor definition", l.Prefix, d)
		}
		flags = append(flags, "-D"+d)
	}
	sort.Strings(flags)
	key := strings.Join(flags, " ")

	l.mu.Lock()
	defer l.mu.Unlock()
	if p, ok := l.builds[key]; ok {
		return p, nil
	}
	if l.root == "" {
		removeStale(l.Prefix)
		root := filepath.Join(os.TempDir(), fmt.Sprintf("memprobe-%s-%d", l.Prefix, os.Getpid()))
		if err := os.MkdirAll(root, 0o755); err != nil {
			return "", fmt.Errorf("%s.Build: %w", l.Prefix, err)
		}
		l.root, l.builds = root, map[string]string{}
	}
	dir, err := os.MkdirTemp(l.root, "build-")
	if err != nil {
		return "", fmt.Errorf("%s.Build: %w", l.Prefix, err)
	}
	src := filepath.Join(dir, l.SourceName)
	if err := os.WriteFile(src, l.Source, 0o644); err != nil {
		return "", fmt.Errorf("%s.Build: %w", l.Prefix, err)
	}
	for name, text := range l.Includes {
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(name)), text, 0o644); err != nil {
			return "", fmt.Errorf("%s.Build: %w", l.Prefix, err)
		}
	}
	lib := filepath.Join(dir, l.LibName)
	args := append(append([]string{}, l.CFlags...), flags...)
	args = append(args, "-o", lib, src)
	args = append(args, l.LDLibs...)
	cmd := exec.Command(gcc, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s.Build: gcc %s: %v\n%s", l.Prefix, strings.Join(args, " "), err, out)
	}
	l.builds[key] = lib
	return lib, nil
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// removeStale deletes the build directories of processes that have exited
// (a process cannot remove its own: the library stays mapped until it
// exits).
func removeStale(prefix string) {
	ents, err := os.ReadDir(os.TempDir())
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), "memprobe-"+prefix+"-")
		if !ok || !e.IsDir() {
			continue
		}
		pid, err := strconv.Atoi(rest)
		if err != nil || pid == os.Getpid() || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.RemoveAll(filepath.Join(os.TempDir(), e.Name()))
		}
	}
}
