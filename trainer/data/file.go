package data

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular is wrapped by ReadRegularFile's refusal of anything but a
// regular file: a named pipe, a device, a socket or a directory.
var ErrNotRegular = errors.New("not a regular file")

// maxFileBytes bounds a dataset file: a text of that many bytes makes at
// most that many tokens, the synthetic corpus's limit.
const maxFileBytes = maxSyntheticTokens

// ReadRegularFile reads the whole of the regular file at path, by the size
// it has when opened, and no more than limit bytes (limit <= 0: no limit).
// Anything else is refused before it is read: a directory ("is a
// directory"), and a named pipe, device or socket (ErrNotRegular, with
// its kind), whose reading could block for ever (a pipe with no writer,
// /proc/kmsg) or never end (/dev/zero). A file past limit is refused
// from its size. A regular file of size 0 reads as empty, though files
// such as /proc's report 0 and have something to read: their contents
// cannot be bounded. Errors do not repeat path (the caller names it).
func ReadRegularFile(path string, limit int64) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, unwrapPath(err)
	}
	if err := checkRegular(fi, limit); err != nil {
		return nil, err
	}
	if fi.Size() == 0 {
		return []byte{}, nil // not even opened: /proc/kmsg's reads block
	}
	// Opened without blocking, in case path was replaced by a pipe since
	// the Stat; the descriptor's own Stat is what counts.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, unwrapPath(err)
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, unwrapPath(err)
	}
	if err := checkRegular(fi, limit); err != nil {
		return nil, err
	}
	b := make([]byte, fi.Size())
	n, err := io.ReadFull(f, b)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, unwrapPath(err)
	}
	return b[:n], nil // a file that shrank since its Stat reads as it is now
}

// CheckFile says, from its Stat alone, why path could not be a dataset
// file (missing, a directory, not a regular file, past the size limit,
// empty: ErrEmptyFile), or nil: what probe run checks before it starts a
// child that would load it. Errors do not repeat path.
func CheckFile(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return unwrapPath(err)
	}
	if err := checkRegular(fi, maxFileBytes); err != nil {
		return err
	}
	if fi.Size() == 0 {
		return ErrEmptyFile
	}
	return nil
}

// checkRegular refuses a file ReadRegularFile does not read.
func checkRegular(fi fs.FileInfo, limit int64) error {
	switch m := fi.Mode(); {
	case m.IsDir():
		return errors.New("is a directory")
	case !m.IsRegular():
		return fmt.Errorf("%w (%s)", ErrNotRegular, fileKind(m))
	case limit > 0 && fi.Size() > limit:
		return fmt.Errorf("%d bytes, more than the limit of %d", fi.Size(), limit)
	}
	return nil
}

// fileKind names the type of a file that is not regular.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeIrregular != 0:
		return "an irregular file"
	}
	return "type " + m.Type().String()
}

// unwrapPath drops the path an *fs.PathError repeats.
func unwrapPath(err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Err
	}
	return err
}
