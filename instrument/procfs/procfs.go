// Package procfs reads the Linux /proc files the probe needs:
// /proc/<pid>/status and smaps_rollup for the sampler; smaps (every
// mapping), task/*/syscall (the threads' stack pointers) and pagemap (the
// resident pages of an address range) for the reconciliation.
//
// It is the first stage of the probe: procfs turns kernel text into
// numbers, [memprobe/instrument/sampler] turns numbers into a timeline, and
// [memprobe/instrument/reconcile] explains the resident set.
//
// Every size is converted from the kernel's kB (which are KiB) to bytes at
// parse time, so no caller ever sees a kB value. Reads go through an [FS]
// whose root defaults to /proc; tests point it at fixture trees under
// testdata/proc, so they never depend on the live /proc.
//
// This is our own small parser rather than github.com/prometheus/procfs:
// we need a handful of fields, errors that name the file and line, and
// smaps_rollup's Private_*/Shared_* split, and a line scanner over
// fixtures is simpler than adapting procfs's types.
package procfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// DefaultRoot is where the live proc filesystem is mounted.
const DefaultRoot = "/proc"

// Self is the pid that reads /proc/self, the calling process.
const Self = 0

// ErrMalformed is wrapped by every parse error: the file exists but a line
// cannot be read as "Key: value [kB]".
var ErrMalformed = errors.New("malformed line")

// FS is a proc filesystem rooted at a directory. The zero FS reads
// DefaultRoot.
type FS struct {
	root string
}

// NewFS returns an FS rooted at root; "" means DefaultRoot.
func NewFS(root string) FS { return FS{root: root} }

// Root is the directory this FS reads.
func (fs FS) Root() string {
	if fs.root == "" {
		return DefaultRoot
	}
	return fs.root
}

// Path returns the path of file in pid's directory; pid Self is "self".
func (fs FS) Path(pid int, file string) string {
	dir := "self"
	if pid != Self {
		dir = strconv.Itoa(pid)
	}
	return filepath.Join(fs.Root(), dir, file)
}

// ReadStatus reads /proc/<pid>/status from the default root.
func ReadStatus(pid int) (Status, error) { return FS{}.ReadStatus(pid) }

// ReadSmapsRollup reads /proc/<pid>/smaps_rollup from the default root.
func ReadSmapsRollup(pid int) (SmapsRollup, error) { return FS{}.ReadSmapsRollup(pid) }

// ReadStatus reads and parses <root>/<pid>/status.
func (fs FS) ReadStatus(pid int) (Status, error) {
	path := fs.Path(pid, "status")
	b, err := os.ReadFile(path)
	if err != nil {
		return Status{}, fmt.Errorf("reading status: %w", err)
	}
	return ParseStatus(b, path)
}

// ReadSmapsRollup reads and parses <root>/<pid>/smaps_rollup (Linux 4.14+).
// The kernel walks every mapping to produce it, so it costs far more than
// status on a large process.
func (fs FS) ReadSmapsRollup(pid int) (SmapsRollup, error) {
	path := fs.Path(pid, "smaps_rollup")
	b, err := os.ReadFile(path)
	if err != nil {
		return SmapsRollup{}, fmt.Errorf("reading smaps_rollup: %w", err)
	}
	return ParseSmapsRollup(b, path)
}

// TaskCount counts the entries of <root>/<pid>/task, one per thread.
func (fs FS) TaskCount(pid int) (int, error) {
	ents, err := os.ReadDir(fs.Path(pid, "task"))
	if err != nil {
		return 0, fmt.Errorf("counting tasks: %w", err)
	}
	return len(ents), nil
}

// ParseError is a parse failure in a named file at a 1-based line.
type ParseError struct {
	Path string
	Line int
	Err  error
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("parsing %s: line %d: %v", e.Path, e.Line, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }
