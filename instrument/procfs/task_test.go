package procfs

import (
	"errors"
	"os"
	"runtime"
	"syscall"
	"testing"
	"unsafe"
)

func TestParseSyscallSP(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
	}{
		{"202 0xc0cce0 0x80 0x0 0x0 0x0 0x0 0x7f2f0fffed78 0x4952c3\n", 0x7f2f0fffed78},
		{"-1 0x7ffd1234 0x4952c3\n", 0x7ffd1234},
		{"running\n", 0},
	} {
		got, err := ParseSyscallSP([]byte(tc.in), "syscall")
		if err != nil || got != tc.want {
			t.Errorf("ParseSyscallSP(%q) = %#x, %v; want %#x", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "202 0x1 0x2", "202 0x0 0x0 0x0 0x0 0x0 0x0 zz 0x1"} {
		_, err := ParseSyscallSP([]byte(in), "syscall")
		var pe *ParseError
		if !errors.Is(err, ErrMalformed) || !errors.As(err, &pe) {
			t.Errorf("ParseSyscallSP(%q) = %v, want a *ParseError wrapping ErrMalformed", in, err)
		}
	}
}

func TestReadThreadSPsLive(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	sps, err := FS{}.ReadThreadSPs(Self)
	if err != nil {
		t.Fatal(err)
	}
	n, err := FS{}.TaskCount(Self)
	if err != nil {
		t.Fatal(err)
	}
	// Threads may start or exit between the two reads.
	if len(sps) == 0 || len(sps) > n+16 {
		t.Errorf("%d stack pointers for %d threads", len(sps), n)
	}
	blocked := 0
	for _, s := range sps {
		if s.SP != 0 {
			blocked++
		}
	}
	if blocked == 0 {
		t.Errorf("no thread blocked: %+v", sps)
	}
}

// TestResidentBytesLive maps 64 pages, touches every other one, and counts
// them through pagemap.
func TestResidentBytesLive(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	ps := os.Getpagesize()
	b, err := syscall.Mmap(-1, 0, 64*ps, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(b)
	for i := 0; i < 64; i += 2 {
		b[i*ps] = 1
	}
	lo := addrOf(b)
	got, err := FS{}.ResidentBytes(Self, lo, lo+uint64(64*ps), ps)
	if err != nil {
		t.Fatal(err)
	}
	if got != int64(32*ps) {
		t.Errorf("resident %d bytes, want %d", got, 32*ps)
	}
	if _, err := (FS{}).ResidentBytes(Self, lo, lo+1, 3000); err == nil {
		t.Error("page size 3000 accepted")
	}
}

func addrOf(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(&b[0]))) }
