package procfs

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

// The /proc parsers read files the kernel writes, but also fixture trees
// and files a user points the tool at: none may panic, every refusal is
// a *ParseError (or an error) naming the file, and what they accept is
// consistent. Seeds: the fixtures of this package's tests, real lines
// from a kernel, and the damaged inputs in testdata/fuzz/<FuzzName>.

const fuzzPath = "fuzz/proc/1/file"

func namesPath(t *testing.T, err error) {
	t.Helper()
	if !strings.Contains(err.Error(), fuzzPath) {
		t.Fatalf("error does not name the file: %v", err)
	}
}

func addSelf(f *testing.F, name string) {
	if b, err := os.ReadFile("/proc/self/" + name); err == nil {
		f.Add(b)
	}
}

// FuzzParseStatusPath (beside procfs_test.go's FuzzParseStatus): every accepted size is a whole number of KiB (the
// file gives kB), and a second parse gives the same.
func FuzzParseStatusPath(f *testing.F) {
	addSelf(f, "status")
	f.Add([]byte("Name:\tprobe\nVmPeak:\t  123 kB\nVmRSS:\t 18446744073709551615 kB\nThreads:\t3\n"))
	f.Add([]byte("VmHWM: 12 MB\n"))
	f.Add([]byte("VmRSS:\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseStatus(b, fuzzPath)
		if err != nil {
			namesPath(t, err)
			return
		}
		for _, v := range []uint64{s.VmPeakBytes, s.VmRSSBytes, s.VmHWMBytes, s.VmSizeBytes, s.VmStkBytes} {
			if v%1024 != 0 {
				t.Fatalf("a size of %d bytes from a kB field", v)
			}
		}
		again, _ := ParseStatus(b, fuzzPath)
		if !reflect.DeepEqual(s, again) {
			t.Fatal("two parses differ")
		}
	})
}

// FuzzParseSmaps: every accepted mapping has start <= end, a 4-letter
// permission string, and a path without surrounding space.
func FuzzParseSmaps(f *testing.F) {
	if b, err := os.ReadFile("testdata/smaps"); err == nil {
		f.Add(b)
	}
	addSelf(f, "smaps")
	f.Add([]byte("00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/dbus daemon\nSize:  328 kB\nRss: 4 kB\n"))
	f.Add([]byte("7f00-7e00 rw-p 0 0 0\nRss: 4 kB\n"))
	f.Add([]byte("Rss: 4 kB\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ms, err := ParseSmaps(b, fuzzPath)
		if err != nil {
			namesPath(t, err)
			return
		}
		for _, m := range ms {
			if m.Start > m.End || len(m.Perms) != 4 || m.Path != strings.TrimSpace(m.Path) {
				t.Fatalf("accepted mapping %+v", m)
			}
		}
	})
}

// FuzzParseSmapsRollup: refusals name the file.
func FuzzParseSmapsRollup(f *testing.F) {
	addSelf(f, "smaps_rollup")
	f.Add([]byte("00400000-7fff0000 ---p 00000000 00:00 0 [rollup]\nRss: 12 kB\nPss: 10 kB\nSwap: 0 kB\n"))
	f.Add([]byte("Rss: lots\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseSmapsRollup(b, fuzzPath)
		if err != nil {
			namesPath(t, err)
			return
		}
		again, _ := ParseSmapsRollup(b, fuzzPath)
		if !reflect.DeepEqual(r, again) {
			t.Fatal("two parses differ")
		}
	})
}

// FuzzParseStatm: sizes are whole pages; refusals name the file.
func FuzzParseStatm(f *testing.F) {
	addSelf(f, "statm")
	f.Add([]byte("1 2 3 4 0 5 0\n"))
	f.Add([]byte("18446744073709551615 1 1 1 0 1 0\n"))
	f.Add([]byte("1 2\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseStatm(b, fuzzPath, 4096)
		if err != nil {
			namesPath(t, err)
			return
		}
		if s.ResidentBytes%4096 != 0 || s.SizeBytes%4096 != 0 {
			t.Fatalf("accepted %+v: not whole pages", s)
		}
	})
}

// FuzzParseSyscallSP: a task's syscall file gives a stack pointer, 0 for
// "running"; a refusal is a *ParseError naming the file.
func FuzzParseSyscallSP(f *testing.F) {
	addSelf(f, "syscall")
	f.Add([]byte("202 0xc000 0x80 0x0 0x0 0x0 0x0 0x7ffd1234 0x46e1a3\n"))
	f.Add([]byte("-1 0x7ffd1234 0x46e1a3\n"))
	f.Add([]byte("running\n"))
	f.Add([]byte("-1 zz 0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		sp, err := ParseSyscallSP(b, fuzzPath)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("not a *ParseError: %v", err)
			}
			namesPath(t, err)
			return
		}
		if strings.TrimSpace(string(b)) == "running" && sp != 0 {
			t.Fatalf("running thread with SP %#x", sp)
		}
	})
}
