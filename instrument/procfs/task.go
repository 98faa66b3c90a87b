package procfs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ThreadSP is where one thread's stack pointer was while it was blocked:
// /proc/<pid>/task/<tid>/syscall.
type ThreadSP struct {
	TID int `json:"tid"`
	// SP is the user stack pointer; 0 when the thread was running (the
	// kernel cannot say) or the file could not be read.
	SP uint64 `json:"sp"`
}

// ReadThreadSPs reads /proc/<pid>/task/*/syscall: for each thread blocked
// in a system call (or otherwise off the CPU), its user stack pointer. A
// thread that exits while it is being read is left out. Reading another
// thread's syscall file needs ptrace access, which a process has to itself.
func (fs FS) ReadThreadSPs(pid int) ([]ThreadSP, error) {
	dir := fs.Path(pid, "task")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading thread stack pointers: %w", err)
	}
	out := make([]ThreadSP, 0, len(ents))
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		path := dir + "/" + e.Name() + "/syscall"
		b, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue // exited
		}
		if err != nil {
			out = append(out, ThreadSP{TID: tid})
			continue
		}
		sp, err := ParseSyscallSP(b, path)
		if err != nil {
			return nil, err
		}
		out = append(out, ThreadSP{TID: tid, SP: sp})
	}
	return out, nil
}

// ParseSyscallSP reads the stack pointer from the text of a task's syscall
// file: "nr a1 a2 a3 a4 a5 a6 sp pc" for a thread blocked in a system
// call, "-1 sp pc" for one blocked elsewhere, "running" (SP 0) for one on
// a CPU. path names the file in errors.
func ParseSyscallSP(b []byte, path string) (uint64, error) {
	f := strings.Fields(string(bytes.TrimSpace(b)))
	var field string
	switch {
	case len(f) == 1 && f[0] == "running":
		return 0, nil
	case len(f) == 3 && f[0] == "-1":
		field = f[1]
	case len(f) == 9:
		field = f[7]
	default:
		return 0, &ParseError{path, 1, fmt.Errorf("%w: want \"nr a1..a6 sp pc\", \"-1 sp pc\" or \"running\": %q", ErrMalformed, b)}
	}
	sp, err := strconv.ParseUint(strings.TrimPrefix(field, "0x"), 16, 64)
	if err != nil {
		return 0, &ParseError{path, 1, fmt.Errorf("%w: stack pointer %q", ErrMalformed, field)}
	}
	return sp, nil
}

// ResidentBytes counts the resident pages of [lo, hi) in pid's address
// space from <root>/<pid>/pagemap (one 64-bit entry per page, bit 63 set
// when the page is present in RAM; a swapped page is not counted). lo and
// hi are rounded out to pages of pageSize bytes. It is how a part of a
// mapping is measured when smaps, which counts whole mappings, cannot
// separate it: a thread stack that the kernel merged with its neighbour.
func (fs FS) ResidentBytes(pid int, lo, hi uint64, pageSize int) (int64, error) {
	if pageSize <= 0 || pageSize&(pageSize-1) != 0 {
		return 0, fmt.Errorf("reading pagemap: page size %d is not a power of two", pageSize)
	}
	ps := uint64(pageSize)
	first, last := lo/ps, (hi+ps-1)/ps
	if last <= first {
		return 0, nil
	}
	f, err := os.Open(fs.Path(pid, "pagemap"))
	if err != nil {
		return 0, fmt.Errorf("reading pagemap: %w", err)
	}
	defer f.Close()
	buf := make([]byte, 8*min(last-first, 4096))
	var pages int64
	for p := first; p < last; {
		n := min(last-p, uint64(len(buf)/8))
		if _, err := f.ReadAt(buf[:8*n], int64(8*p)); err != nil {
			return 0, fmt.Errorf("reading pagemap at page %#x: %w", p, err)
		}
		for i := range n {
			if binary.LittleEndian.Uint64(buf[8*i:])&(1<<63) != 0 {
				pages++
			}
		}
		p += n
	}
	return pages * int64(pageSize), nil
}
