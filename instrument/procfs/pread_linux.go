package procfs

import (
	"syscall"
	"unsafe"
)

const rawReads = true

// rawPread is pread(2) by syscall.RawSyscall6: for reads that return in
// microseconds, without the scheduler's bookkeeping of a blocking call.
func rawPread(fd int, b []byte, off int64) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, _, e := syscall.RawSyscall6(syscall.SYS_PREAD64, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(off), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}
