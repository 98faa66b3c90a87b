package dl

import (
	"strings"
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
