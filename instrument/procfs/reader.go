package procfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
)

// FileReader re-reads one /proc file through a descriptor it keeps open,
// into a buffer it reuses, so that a read allocates nothing once the buffer
// has grown to the file's size. The kernel regenerates a seq_file such as
// status or smaps_rollup on every read from offset 0, so each Read sees the
// values of that moment. This is what lets the sampler run beside a
// zero-allocation training loop without adding to its allocation counts.
//
// A FileReader is not safe for concurrent use.
type FileReader struct {
	f    *os.File
	fd   int  // f's descriptor, where raw
	raw  bool // read by rawPread
	path string
	buf  []byte
}

// OpenFile opens <root>/<pid>/<file> for repeated reads.
func (fs FS) OpenFile(pid int, file string) (*FileReader, error) {
	return fs.openFile(pid, file, false)
}

// openFile opens <root>/<pid>/<file>; raw says to read it with raw
// system calls, for files the kernel prints without waiting on a lock
// of the process's (status, statm; not smaps_rollup, which takes the
// mmap lock). A raw call does not enter the Go scheduler's syscall
// state, which wakes the runtime's sysmon from its sleep: with the
// sampler's 100 reads a second that was half the probe's context
// switches, and a third of its CPU while it watched (docs/exec.md, Cost).
func (fs FS) openFile(pid int, file string, raw bool) (*FileReader, error) {
	path := fs.Path(pid, file)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", file, err)
	}
	r := &FileReader{f: f, path: path, buf: make([]byte, 4096)}
	if raw && rawReads {
		r.fd, r.raw = int(f.Fd()), true
	}
	return r, nil
}

// Path is the file this reader reads.
func (r *FileReader) Path() string { return r.path }

// Read returns the file's whole content now. The slice is the reader's
// buffer: it is overwritten by the next Read, and the caller must copy what
// it keeps.
func (r *FileReader) Read() ([]byte, error) {
	for {
		n, err := r.readAt()
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", r.path, err)
		}
		if n < len(r.buf) {
			return r.buf[:n], nil
		}
		r.buf = make([]byte, 2*len(r.buf)) // the file outgrew the buffer
	}
}

// readAt fills buf from offset 0 and returns how much it read; a short
// count means the whole file is in buf.
func (r *FileReader) readAt() (int, error) {
	n := 0
	for n < len(r.buf) {
		m, err := r.readAtOffset(n)
		n += m
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if m == 0 {
			return n, nil
		}
	}
	return n, nil
}

// readAtOffset reads into buf[off:] from offset off.
func (r *FileReader) readAtOffset(off int) (int, error) {
	if !r.raw {
		return r.f.ReadAt(r.buf[off:], int64(off))
	}
	n, err := rawPread(r.fd, r.buf[off:], int64(off))
	runtime.KeepAlive(r.f) // the descriptor stays open through the call
	if err != nil {
		return 0, &os.PathError{Op: "read", Path: r.path, Err: err}
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// Close closes the descriptor.
func (r *FileReader) Close() error { return r.f.Close() }

// StatusReader reads /proc/<pid>/status repeatedly without allocating.
type StatusReader struct{ r *FileReader }

// OpenStatus opens <root>/<pid>/status for repeated reads.
func (fs FS) OpenStatus(pid int) (*StatusReader, error) {
	r, err := fs.openFile(pid, "status", true)
	if err != nil {
		return nil, fmt.Errorf("reading status: %w", err)
	}
	return &StatusReader{r}, nil
}

// Read fills s with the file's current values. It allocates nothing once
// warm: s.Name is kept when the process name has not changed.
func (r *StatusReader) Read(s *Status) error {
	b, err := r.r.Read()
	if err != nil {
		return err
	}
	return parseStatusInto(b, r.r.path, s)
}

// Close closes the descriptor.
func (r *StatusReader) Close() error { return r.r.Close() }

// SmapsRollupReader reads /proc/<pid>/smaps_rollup repeatedly without
// allocating.
type SmapsRollupReader struct{ r *FileReader }

// OpenSmapsRollup opens <root>/<pid>/smaps_rollup for repeated reads.
func (fs FS) OpenSmapsRollup(pid int) (*SmapsRollupReader, error) {
	r, err := fs.OpenFile(pid, "smaps_rollup")
	if err != nil {
		return nil, fmt.Errorf("reading smaps_rollup: %w", err)
	}
	return &SmapsRollupReader{r}, nil
}

// Read fills s with the file's current values.
func (r *SmapsRollupReader) Read(s *SmapsRollup) error {
	b, err := r.r.Read()
	if err != nil {
		return err
	}
	v, err := ParseSmapsRollup(b, r.r.path)
	*s = v
	return err
}

// Close closes the descriptor.
func (r *SmapsRollupReader) Close() error { return r.r.Close() }

// parseStatusInto is ParseStatus into *s, reusing s.Name when the Name line
// has not changed, so that a repeated read allocates nothing.
func parseStatusInto(b []byte, path string, s *Status) error {
	name := s.Name
	v, err := parseStatus(b, path, name)
	*s = v
	return err
}
