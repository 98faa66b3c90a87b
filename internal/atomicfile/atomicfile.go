// Package atomicfile writes a file so that readers see either the old file
// or the complete new one, never half of it: results, checkpoints and
// profiles are written to a temporary file in the same directory, synced,
// and renamed over the target. A failed write leaves the target untouched and
// no temporary file behind.
package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Write creates path with mode 0644 from what write produces: it writes a
// temporary file in path's directory, syncs it, renames it over path and
// syncs the directory, so that after a crash path holds the old file or
// the whole new one. Any error (write's own, a full disk at any step, a
// failed rename) leaves path as it was and removes the temporary file.
//
// A symbolic link is followed: the file it names is replaced, the link
// kept (a rename over the link would turn it into a regular file). A
// dangling link is followed too: the file it names is created and the
// link kept, as a shell's redirection does, never replaced by a regular
// file (the link is what its owner made, and a later reader through it
// finds the new bytes). A path that is not a regular file (a named pipe,
// /dev/null, /dev/stdout, a terminal) is written through, as a shell's
// redirection would: a rename would replace the device node or pipe with
// a regular file; there is nothing to keep atomic in a stream.
//
// It is the module's one atomic writer: schema's result and report
// writers use it too.
func Write(path string, write func(w io.Writer) error) (err error) {
	dst, through, err := Target(path)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if through {
		return writeThrough(path, write)
	}
	f, err := createTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := write(bw); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), dst); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	// The rename is durable once the directory is synced. The new file is
	// in place whatever happens here: an error only says that a crash now
	// could bring back the old one.
	if err := syncDir(filepath.Dir(dst)); err != nil {
		return fmt.Errorf("writing %s: syncing its directory: %w", path, err)
	}
	return nil
}

// Target is where Write puts path's bytes: the file path names after
// its symbolic links (one not yet there when the last link dangles), and
// whether it is written through rather than replaced (it exists and is
// neither a regular file nor a directory). A directory is an error.
func Target(path string) (dst string, through bool, err error) {
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return "", false, errors.New("is a directory")
	case err == nil && !fi.Mode().IsRegular():
		// Opened by its own name: the kernel follows /dev/stdout's
		// /proc/self/fd/1 to the pipe, which no path names.
		return path, true, nil
	case err == nil:
		if real, err := filepath.EvalSymlinks(path); err == nil {
			return real, false, nil
		}
		return path, false, nil
	case !errors.Is(err, fs.ErrNotExist):
		return path, false, nil // the write says what is wrong
	}
	// A new file, or links ending in one: follow them by hand, as
	// EvalSymlinks refuses a target that is not there yet.
	p := path
	for range 40 { // the kernel's own limit
		li, err := os.Lstat(p)
		if err != nil || li.Mode()&fs.ModeSymlink == 0 {
			return p, false, nil
		}
		link, err := os.Readlink(p)
		if err != nil {
			return p, false, nil
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(p), link)
		}
		p = link
	}
	return "", false, errors.New("too many levels of symbolic links")
}

// writeThrough writes to an existing file that is not a regular one (a
// pipe, a device), opened for writing as it is.
func writeThrough(path string, write func(w io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, unwrapPath(err))
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// CreateStaged creates the temporary file a streaming writer fills (a CPU
// profile runs for a whole job) before CommitStaged puts it at path:
// hidden, beside the file path names (Target), since a rename does not
// cross file systems. A writer that fails removes it.
func CreateStaged(path string) (*os.File, error) {
	dst, through, err := Target(path)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(dst)
	if through {
		dir = os.TempDir() // its bytes are copied into the stream
	}
	return os.CreateTemp(dir, "."+filepath.Base(dst)+".tmp*")
}

// CommitStaged puts the closed temporary file tmp (CreateStaged) at path
// as Write would: readable as os.Create makes files, renamed over the file
// path names and its directory synced; or, where path is a stream (a
// pipe, a device), its bytes copied into it. tmp is gone either way, and
// an error leaves path as it was (a stream: as far as it was written).
func CommitStaged(tmp, path string) (err error) {
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	dst, through, err := Target(path)
	if err != nil {
		return err
	}
	if through {
		f, err := os.Open(tmp)
		if err != nil {
			return err
		}
		defer f.Close()
		defer os.Remove(tmp)
		return writeThrough(path, func(w io.Writer) error { _, err := io.Copy(w, f); return err })
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		return err
	}
	return syncDir(filepath.Dir(dst))
}

// tempFile is what Write needs of its temporary file (an *os.File; tests
// put a failing one in its place).
type tempFile interface {
	io.Writer
	Chmod(fs.FileMode) error
	Sync() error
	Close() error
	Name() string
}

// createTemp makes Write's temporary file; a variable for the tests'
// disk-full injection.
var createTemp = func(dir, pattern string) (tempFile, error) { return os.CreateTemp(dir, pattern) }

// syncDir fsyncs a directory. File systems that cannot sync a directory
// (EINVAL, ENOTSUP) have nothing to make durable that way.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return err
	}
	return nil
}

// WriteBytes creates path with mode 0644 holding b.
func WriteBytes(path string, b []byte) error {
	return Write(path, func(w io.Writer) error { _, err := w.Write(b); return err })
}

// CheckWritable fails at once when path could not be written later: its
// directory is missing, not a directory or not writable, or path itself is
// a directory. It creates and removes a temporary file beside path, the
// way Write will. Call it before long work whose result goes to path.
func CheckWritable(path string) error {
	dst, through, err := Target(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if through {
		// Opening a named pipe for writing waits for a reader: ask the
		// kernel for permission instead.
		if err := syscall.Access(path, 2 /* W_OK */); err != nil {
			return fmt.Errorf("%s: not writable: %w", path, err)
		}
		return nil
	}
	dir := filepath.Dir(dst)
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%s: directory %s: %w", path, dir, unwrapPath(err))
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s: %s is not a directory", path, dir)
	}
	f, err := os.CreateTemp(dir, ".check-*")
	if errors.Is(err, fs.ErrNotExist) {
		// The directory is there but takes no new file: /proc, /sys.
		return fmt.Errorf("%s: directory %s does not accept new files", path, dir)
	}
	if err != nil {
		return fmt.Errorf("%s: directory %s is not writable: %w", path, dir, unwrapPath(err))
	}
	f.Close()
	return os.Remove(f.Name())
}

// unwrapPath drops the path an *fs.PathError repeats.
func unwrapPath(err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Err
	}
	return err
}

// Path is a file a command reads or writes, with the flag (or argument)
// that named it, for errors: {"--json", "r.json"}; "" for an argument
// that needs no name.
type Path struct{ Flag, Path string }

// CheckDistinct fails when an output would replace an input or another
// output: the same path, or two names of one file (a link, "./a" and
// "a"). Without it `probe report r.json --html r.json` replaces the
// report it reads with the page, and `probe train --json X --checkpoint
// X` writes one file over the other, each exiting 0. Empty paths are
// skipped, and so is "-" (standard output). Call it before any work,
// beside CheckWritable.
func CheckDistinct(outputs, inputs []Path) error {
	same := func(a, b string) bool {
		if filepath.Clean(a) == filepath.Clean(b) {
			return true
		}
		fa, errA := os.Stat(a)
		fb, errB := os.Stat(b)
		return errA == nil && errB == nil && os.SameFile(fa, fb)
	}
	skip := func(p string) bool { return p == "" || p == "-" }
	for i, o := range outputs {
		if skip(o.Path) {
			continue
		}
		for _, in := range inputs {
			if !skip(in.Path) && same(o.Path, in.Path) {
				what := in.Path
				if in.Flag != "" {
					what = in.Flag + " " + in.Path
				}
				return fmt.Errorf("%s %s: is also the input %s: writing it would replace what is read; name another file", o.Flag, o.Path, what)
			}
		}
		for _, other := range outputs[:i] {
			if !skip(other.Path) && same(o.Path, other.Path) {
				return fmt.Errorf("%s %s: %s names the same file: one output would replace the other; name two files", o.Flag, o.Path, other.Flag)
			}
		}
	}
	return nil
}
