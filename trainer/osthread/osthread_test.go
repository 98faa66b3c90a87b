package osthread

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func TestStartRunsOnItsOwnThread(t *testing.T) {
	if !Available() {
		t.Skip("built without cgo")
	}
	const stack = 1 << 20
	main := syscall.Gettid()
	got := make(chan [2]int, 1)
	block := make(chan struct{})
	th, err := Start(stack, func() {
		before := syscall.Gettid()
		<-block // parks the goroutine; it must come back on the same thread
		got <- [2]int{before, syscall.Gettid()}
	})
	if err != nil {
		t.Fatal(err)
	}
	close(block)
	tids := <-got
	if err := th.Join(); err != nil {
		t.Fatal(err)
	}
	if tids[0] == main || tids[0] != tids[1] {
		t.Errorf("thread ids: test %d, fn before/after blocking %v; want fn on one thread of its own", main, tids)
	}
	// glibc rounds up to whole pages; 1 MiB is already whole pages.
	if th.StackBytes() != stack {
		t.Errorf("StackBytes = %d, want %d", th.StackBytes(), stack)
	}
	if err := th.Join(); err != nil {
		t.Errorf("second Join: %v", err)
	}
}

func TestStackSizesDiffer(t *testing.T) {
	if !Available() {
		t.Skip("built without cgo")
	}
	for _, size := range []int64{MinStackBytes, 8 << 20} {
		th, err := Start(size, func() {})
		if err != nil {
			t.Fatal(err)
		}
		if err := th.Join(); err != nil {
			t.Fatal(err)
		}
		if th.StackBytes() < size {
			t.Errorf("asked for %d bytes, got %d", size, th.StackBytes())
		}
	}
}

func TestManyThreads(t *testing.T) {
	if !Available() {
		t.Skip("built without cgo")
	}
	const n = 65 // the notes' thread count
	done := make(chan int, n)
	var ths []*Thread
	for i := range n {
		th, err := Start(1<<20, func() { done <- i })
		if err != nil {
			t.Fatal(err)
		}
		ths = append(ths, th)
	}
	sum := 0
	for range n {
		sum += <-done
	}
	for _, th := range ths {
		if err := th.Join(); err != nil {
			t.Fatal(err)
		}
	}
	if sum != n*(n-1)/2 {
		t.Errorf("sum of ids %d, want %d", sum, n*(n-1)/2)
	}
}

func TestBadSize(t *testing.T) {
	for _, size := range []int64{0, MinStackBytes - 1, MaxStackBytes + 1} {
		_, err := Start(size, func() {})
		if err == nil {
			t.Errorf("Start(%d): no error", size)
			continue
		}
		if Available() && !strings.Contains(err.Error(), "out of range") {
			t.Errorf("Start(%d): %v", size, err)
		}
		if !Available() && err != ErrNoCgo {
			t.Errorf("Start(%d) without cgo: %v, want ErrNoCgo", size, err)
		}
	}
}

func TestDefaultStackBytes(t *testing.T) {
	if !Available() {
		t.Skip("built without cgo")
	}
	if d := DefaultStackBytes(); d < MinStackBytes {
		t.Errorf("DefaultStackBytes = %d", d)
	}
}

// TestStackRange checks that a running thread's stack is in Stacks, that
// /proc/self/maps has a read-write mapping starting at its low end with
// the guard directly below (glibc's layout), and that it leaves Stacks
// when its function returns.
func TestStackRange(t *testing.T) {
	if !Available() {
		t.Skip("built without cgo")
	}
	const stack = 256 << 10
	block := make(chan struct{})
	th, err := Start(stack, func() { <-block })
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := th.StackRange()
	// glibc may hand out a cached stack of an exited thread up to 4 times
	// the size asked for (an earlier test's).
	if lo == 0 || int64(hi-lo) != th.StackBytes() || hi-lo < stack || hi-lo > 4*stack || th.GuardBytes() < 0 {
		t.Errorf("StackRange = %#x-%#x (%d bytes), StackBytes %d, guard %d; want %d to %d bytes", lo, hi, hi-lo, th.StackBytes(), th.GuardBytes(), stack, 4*stack)
	}
	found := false
	for _, s := range Stacks() {
		found = found || s == Stack{Lo: lo, Hi: hi, GuardBytes: th.GuardBytes()}
	}
	if !found {
		t.Errorf("Stacks() = %+v lacks %#x-%#x", Stacks(), lo, hi)
	}
	if runtime.GOOS == "linux" {
		b, err := os.ReadFile("/proc/self/maps")
		if err != nil {
			t.Fatal(err)
		}
		var below string // the mapping ending at lo
		var at string    // the mapping starting at lo
		for line := range strings.SplitSeq(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			a, z, _ := strings.Cut(f[0], "-")
			start, _ := strconv.ParseUint(a, 16, 64)
			end, _ := strconv.ParseUint(z, 16, 64)
			if end == uint64(lo) {
				below = line
			}
			if start == uint64(lo) && end >= uint64(hi) {
				at = line
			}
		}
		if !strings.Contains(at, " rw-p ") {
			t.Errorf("no read-write mapping starts at the stack's low end %#x: %q", lo, at)
		}
		if th.GuardBytes() > 0 && !strings.Contains(below, " ---p ") {
			t.Errorf("the mapping below the stack is not a guard: %q", below)
		}
	}
	close(block)
	if err := th.Join(); err != nil {
		t.Fatal(err)
	}
	for _, s := range Stacks() {
		if s.Lo == lo {
			t.Errorf("Stacks() still lists %#x after the function returned", lo)
		}
	}
}
