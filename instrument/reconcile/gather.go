package reconcile

import (
	"fmt"
	"math"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"memprobe/instrument/procfs"
	"memprobe/instrument/rtstats"
	"memprobe/ledger"
)

// GatherSelf reads the calling process: the runtime through rt, the ledger
// l (nil is an empty ledger), and status from /proc/self; withSmaps adds
// every mapping (smaps), the threads' stack pointers, pagemap as
// Input.Resident, addresses in Go's heap arenas, the default pthread stack
// size and whether the race detector runs. Linux only. Add
// OutsideGoComponents, more GoAddrs and ThreadStacks, then Compute at once
// (pagemap is read then).
func GatherSelf(rt *rtstats.Reader, l *ledger.Ledger, withSmaps bool) (Input, error) {
	var in Input
	rt.Read(&in.Runtime)
	in.Ledger = l.Snapshot()
	for _, e := range in.Ledger {
		in.LedgerTotalBytes += e.CurrentBytes
	}
	if withSmaps {
		fs := procfs.FS{}
		ms, err := fs.ReadSmaps(procfs.Self)
		if err != nil {
			return Input{}, fmt.Errorf("reconciling: %w", err)
		}
		in.Mappings = ms
		// Without the stack pointers, stacks are found by shape alone.
		in.ThreadSPs, _ = fs.ReadThreadSPs(procfs.Self)
		page := os.Getpagesize()
		in.Resident = func(lo, hi uint64) (int64, error) { return fs.ResidentBytes(procfs.Self, lo, hi, page) }
		in.GoAddrs = goAddrs()
		in.ThreadStackBytes = pthreadDefaultStack(page)
		in.Race = raceEnabled
		in.ReadMemory = MemReader(fs.Path(procfs.Self, "mem"))
	}
	// status last, right after the page walk, so that the two agree as
	// far as the kernel's counters allow.
	st, err := procfs.ReadStatus(procfs.Self)
	if err != nil {
		return Input{}, fmt.Errorf("reconciling: %w", err)
	}
	in.Status = st
	in.Runtime.OSThreads = int64(st.Threads)
	return in, nil
}

// anchors are Go heap objects kept for the life of the process, so that
// their addresses are always in Go's arenas: one small, one large (its own
// span).
var anchors struct {
	once  sync.Once
	small *[16]byte
	large []byte
}

// goAddrs returns addresses inside Go's heap arenas: the anchors and a
// variable on the calling goroutine's stack (goroutine stacks are
// allocated from the heap's spans).
func goAddrs() []uint64 {
	anchors.once.Do(func() {
		anchors.small = new([16]byte)
		anchors.large = make([]byte, 64<<10)
	})
	var local [8]byte
	return []uint64{
		uint64(uintptr(unsafe.Pointer(anchors.small))),
		uint64(uintptr(unsafe.Pointer(&anchors.large[0]))),
		uint64(uintptr(unsafe.Pointer(&local))),
	}
}

// OpenMem is an Input.ReadMemory that reads a process's memory through
// its /proc/<pid>/mem (path), opened once, and the function that closes
// it: for a walk of another process, whose rules read a header per glibc
// heap, large block and Python pool (thousands: each open of the file
// checks ptrace access). Where it cannot be opened, err says why and
// every read fails with it.
func OpenMem(path string) (read func(addr uint64, b []byte) error, closeMem func(), err error) {
	f, err := os.Open(path)
	if err != nil {
		return func(uint64, []byte) error { return err }, func() {}, err
	}
	return func(addr uint64, b []byte) error {
		if addr > math.MaxInt64 {
			return fmt.Errorf("reading %s: address %#x out of range", path, addr)
		}
		_, err := f.ReadAt(b, int64(addr))
		return err
	}, func() { f.Close() }, nil
}

// MemReader is an Input.ReadMemory that reads a process's memory through
// its /proc/<pid>/mem (path): for this process always allowed, for another
// with ptrace access (a parent of its child, or root). Each read opens the
// file, so that an Input can be kept; a walk of another process uses
// OpenMem.
func MemReader(path string) func(addr uint64, b []byte) error {
	return func(addr uint64, b []byte) error {
		read, closeMem, err := OpenMem(path)
		if err != nil {
			return err
		}
		defer closeMem()
		return read(addr, b)
	}
}

// pthreadDefaultStack is the stack size glibc gives a thread whose creator
// sets none: RLIMIT_STACK's soft limit, or 2 MiB (x86-64's
// ARCH_STACK_DEFAULT_SIZE) when it is unlimited, rounded up to pages.
func pthreadDefaultStack(page int) int64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_STACK, &rl); err != nil || rl.Cur == 0 {
		return DefaultThreadStackReserveBytes
	}
	if rl.Cur > 1<<40 { // RLIM_INFINITY
		return 2 << 20
	}
	p := uint64(page)
	return int64((rl.Cur + p - 1) / p * p)
}
