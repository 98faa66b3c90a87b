package schema

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// writeFile puts b at path so that a reader sees the old file or the whole
// new one: a temporary file in path's directory, synced, renamed over the
// file path names (after its symbolic links, so a link is kept), and the
// directory synced. An existing path that is not a regular file (a pipe,
// /dev/stdout) is written through, as a shell's redirection would. Any
// error leaves path as it was and no temporary file behind.
//
// It is a minimal internal/atomicfile.WriteBytes (a dangling link is
// replaced rather than followed), kept here so that schema imports no
// memprobe package (see the package doc).
func writeFile(path string, b []byte) (err error) {
	dst, err := filepath.EvalSymlinks(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		dst = path // a new file (a dangling link is replaced, not followed)
	case err != nil:
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if fi, err := os.Stat(dst); err == nil {
		switch {
		case fi.IsDir():
			return fmt.Errorf("writing %s: is a directory", path)
		case !fi.Mode().IsRegular():
			// Opened by its own name: the kernel follows /dev/stdout's
			// /proc/self/fd/1 to the pipe, which no path names.
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				return fmt.Errorf("writing %s: %w", path, err)
			}
			_, err = f.Write(b)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("writing %s: %w", path, err)
			}
			return nil
		}
	}
	f, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(b); err != nil {
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
	// The new file is in place; syncing the directory makes the rename
	// survive a crash. File systems that cannot sync a directory (EINVAL,
	// ENOTSUP) have nothing to make durable that way.
	d, err := os.Open(filepath.Dir(dst))
	if err != nil {
		return fmt.Errorf("writing %s: syncing its directory: %w", path, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return fmt.Errorf("writing %s: syncing its directory: %w", path, err)
	}
	return nil
}
