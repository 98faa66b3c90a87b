//go:build linux

package trainer

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestSaveCheckpointWriteFails: a write that fails part way leaves the
// previous checkpoint as it was and no temporary file beside it. The
// failure is real, not injected: the file size limit (RLIMIT_FSIZE) set
// below the checkpoint's size makes the kernel refuse the write with
// EFBIG, as a full disk refuses one with ENOSPC (Go leaves SIGXFSZ
// unhandled, so the process lives on). Root is subject to it too.
func TestSaveCheckpointWriteFails(t *testing.T) {
	tr := newTestTrainer(t, testOptions("tiny", 1), testCorpus(t))
	dir := t.TempDir()
	path := filepath.Join(dir, "run.ck")
	if err := tr.SaveCheckpoint(path); err != nil {
		t.Fatal(err)
	}
	prev, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tr.Step() // new weights: a save would change the file

	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Skipf("getrlimit: %v", err)
	}
	lim := old
	lim.Cur = uint64(len(prev) / 2)
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	err = tr.SaveCheckpoint(path)
	if rerr := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); rerr != nil {
		t.Fatalf("restoring RLIMIT_FSIZE: %v", rerr)
	}

	if !errors.Is(err, syscall.EFBIG) {
		t.Fatalf("SaveCheckpoint past the file size limit: %v, want EFBIG", err)
	}
	now, rerr := os.ReadFile(path)
	if rerr != nil || !bytes.Equal(now, prev) {
		t.Errorf("the previous checkpoint changed after a failed save (%v)", rerr)
	}
	if err := tr.LoadCheckpoint(path); err != nil {
		t.Errorf("the previous checkpoint no longer loads: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("files left in the directory: %v, want only run.ck", names)
	}
}

// TestReadCheckpointNotRegular: --resume of a named pipe or a device is
// refused in one line before anything is read (a pipe with no writer
// blocked the open for ever; /dev/zero was read until the process ran
// out of memory).
func TestReadCheckpointNotRegular(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "ck.fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no named pipes here:", err)
	}
	for _, c := range []struct{ path, want string }{
		{fifo, "reading checkpoint " + fifo + ": not a regular file (a named pipe)"},
		{"/dev/zero", "reading checkpoint /dev/zero: not a regular file (a character device)"},
	} {
		done := make(chan error, 1)
		go func() { _, err := ReadCheckpointInfo(c.path); done <- err }()
		select {
		case err := <-done:
			if err == nil || err.Error() != c.want {
				t.Errorf("ReadCheckpointInfo(%s) = %v, want %q", c.path, err, c.want)
			}
		case <-time.After(time.Minute): // a guard against hanging for ever, not a timing check
			t.Fatalf("ReadCheckpointInfo(%s) still blocked after a minute", c.path)
		}
	}
}
