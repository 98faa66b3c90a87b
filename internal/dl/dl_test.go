package dl

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

// TestLibc calls into libc through the trampoline: integer arguments and
// result, a pointer result, an out-parameter through CallOut, and a
// missing library and symbol with dlerror's text; Call allocates nothing.
func TestLibc(t *testing.T) {
	lib, err := Open("libc.so.6")
	if err == ErrNoCgo {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Close()
	labs, err := lib.Sym("labs")
	if err != nil {
		t.Fatal(err)
	}
	if got := int64(Call(labs, uintptr(^uint64(41)))); got != 42 { // labs(-42)
		t.Errorf("labs(-42) = %d", got)
	}
	if n := testing.AllocsPerRun(100, func() { Call(labs, 7) }); n != 0 {
		t.Errorf("Call allocates %v objects per call, want 0", n)
	}
	strerror, _ := lib.Sym("strerror")
	if s := GoString(Call(strerror, 2)); !strings.Contains(s, "No such file") {
		t.Errorf("strerror(ENOENT) = %q", s)
	}
	// 14 arguments: snprintf(buf, n, fmt, 11 ints) writes through a Go
	// buffer handed as an out-parameter.
	snprintf, _ := lib.Sym("snprintf")
	buf := make([]byte, 64)
	format := append([]byte("%d %d %d %d %d %d %d %d %d %d %d"), 0)
	CallOut(snprintf, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), uintptr(unsafe.Pointer(&format[0])), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)
	end := 0
	for end < len(buf) && buf[end] != 0 {
		end++
	}
	if got := string(buf[:end]); got != "1 2 3 4 5 6 7 8 9 10 11" {
		t.Errorf("snprintf with 14 arguments wrote %q", got)
	}
	if _, err := lib.Sym("no_such_symbol_here"); err == nil || !strings.Contains(err.Error(), "no_such_symbol_here") {
		t.Errorf("Sym(missing) = %v, want dlerror naming it", err)
	}
	if _, err := Open("/nonexistent/libnothing.so"); err == nil || !strings.Contains(err.Error(), "/nonexistent/libnothing.so") {
		t.Errorf("Open(missing) = %v, want dlerror naming the file", err)
	}
}

// TestErrorsFromAnyThread: dlerror's text is per OS thread, and a
// goroutine may move to another thread between two cgo calls; reading it
// in a call of its own once gave "no CUDA driver: libcuda.so.1 not found
// ()" on a machine without the driver. Many goroutines, each yielding
// between calls so that the scheduler moves them, must each get the text
// of their own failure.
func TestErrorsFromAnyThread(t *testing.T) {
	if _, err := Open("libc.so.6"); err == ErrNoCgo {
		t.Skip(err)
	}
	lib, err := Open("libc.so.6")
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Close()
	const goroutines, rounds = 8, 1000
	errs := make(chan string, goroutines*rounds*2)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				name := fmt.Sprintf("/nonexistent/lib%d-%d.so", g, i)
				if _, err := Open(name); err == nil || !strings.Contains(err.Error(), name) {
					errs <- fmt.Sprintf("Open(%s) = %v, want dlerror naming it", name, err)
				}
				runtime.Gosched()
				sym := fmt.Sprintf("no_such_symbol_%d_%d", g, i)
				if _, err := lib.Sym(sym); err == nil || !strings.Contains(err.Error(), sym) {
					errs <- fmt.Sprintf("Sym(%s) = %v, want dlerror naming it", sym, err)
				}
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
	close(errs)
	n := 0
	for e := range errs {
		if n++; n <= 3 {
			t.Error(e)
		}
	}
	if n > 3 {
		t.Errorf("... %d failures in all, of %d calls", n, goroutines*rounds*2)
	}
}
