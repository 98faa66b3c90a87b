package procfs

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// fixtures is the fixture /proc tree shared with the sampler tests.
var fixtures = NewFS(filepath.Join("..", "..", "testdata", "proc"))

func TestReadStatusFixture(t *testing.T) {
	for _, pid := range []int{4242, Self} {
		s, err := fixtures.ReadStatus(pid)
		if err != nil {
			t.Fatal(err)
		}
		// Values from testdata/proc/4242/status, times 1024.
		want := Status{
			Name:          "cat",
			VmPeakBytes:   3060 * 1024,
			VmSizeBytes:   3060 * 1024,
			VmHWMBytes:    1744 * 1024,
			VmRSSBytes:    1744 * 1024,
			RssAnonBytes:  112 * 1024,
			RssFileBytes:  1632 * 1024,
			RssShmemBytes: 0,
			VmDataBytes:   360 * 1024,
			VmStkBytes:    132 * 1024,
			VmSwapBytes:   0,
			Threads:       1,
		}
		if s != want {
			t.Errorf("pid %d:\n got %+v\nwant %+v", pid, s, want)
		}
		if s.VmRSSBytes != s.RssAnonBytes+s.RssFileBytes+s.RssShmemBytes {
			t.Errorf("VmRSS %d != RssAnon+RssFile+RssShmem", s.VmRSSBytes)
		}
	}
}

func TestReadSmapsRollupFixture(t *testing.T) {
	s, err := fixtures.ReadSmapsRollup(4242)
	if err != nil {
		t.Fatal(err)
	}
	want := SmapsRollup{
		RssBytes:          1752 * 1024,
		PssBytes:          381 * 1024,
		PssDirtyBytes:     112 * 1024,
		PssAnonBytes:      112 * 1024,
		PssFileBytes:      269 * 1024,
		SharedCleanBytes:  1568 * 1024,
		PrivateCleanBytes: 72 * 1024,
		PrivateDirtyBytes: 112 * 1024,
		ReferencedBytes:   1752 * 1024,
		AnonymousBytes:    112 * 1024,
	}
	if s != want {
		t.Errorf("\n got %+v\nwant %+v", s, want)
	}
}

func TestMalformed(t *testing.T) {
	_, err := fixtures.ReadStatus(666)
	checkParseError(t, err, "666/status: line 3: VmRSS", 3)
	_, err = fixtures.ReadSmapsRollup(666)
	checkParseError(t, err, "666/smaps_rollup: line 3: malformed line", 3)
}

func checkParseError(t *testing.T, err error, want string, line int) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %q", want)
	}
	if !errors.Is(err, ErrMalformed) {
		t.Errorf("error %q does not wrap ErrMalformed", err)
	}
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != line {
		t.Errorf("error %q is not a *ParseError at line %d", err, line)
	}
	if !strings.HasPrefix(err.Error(), "parsing ") || !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not contain %q", err, want)
	}
}

func TestParseUnits(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"VmRSS:\t  4 kB\n", 4096, true},
		{"VmRSS:\t0 kB", 0, true},
		{"VmRSS:\t4 MB\n", 0, false},
		{"VmRSS:\t4\n", 0, false},
		{"VmRSS:\t-4 kB\n", 0, false},
		{"VmRSS:\t18014398509481984 kB\n", 0, false}, // 2^54 kB overflows
		{"Threads:\tx\n", 0, false},
		{"garbage\n", 0, false},
		{"Unknown:\twhatever\n", 0, true},
	} {
		s, err := ParseStatus([]byte(tc.in), "in")
		if (err == nil) != tc.ok || s.VmRSSBytes != tc.want {
			t.Errorf("ParseStatus(%q) = %d, %v; want %d, ok=%v", tc.in, s.VmRSSBytes, err, tc.want, tc.ok)
		}
	}
}

func TestMissingPid(t *testing.T) {
	_, err := fixtures.ReadStatus(1)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("err = %v, want fs.ErrNotExist", err)
	}
}

func TestTaskCount(t *testing.T) {
	n, err := fixtures.TaskCount(4242)
	if err != nil || n != 2 {
		t.Errorf("TaskCount = %d, %v; want 2", n, err)
	}
}

func TestLive(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	s, err := ReadStatus(Self)
	if err != nil {
		t.Fatal(err)
	}
	if s.VmRSSBytes == 0 || s.Threads < 1 || s.VmSizeBytes < s.VmRSSBytes {
		t.Errorf("implausible live status %+v", s)
	}
	r, err := ReadSmapsRollup(Self)
	if err != nil {
		t.Fatal(err)
	}
	if r.RssBytes == 0 || r.PssBytes == 0 {
		t.Errorf("implausible live smaps_rollup %+v", r)
	}
	n, err := FS{}.TaskCount(Self)
	if err != nil || n < 1 {
		t.Errorf("TaskCount = %d, %v", n, err)
	}
}

func FuzzParseStatus(f *testing.F) {
	for _, p := range []string{"4242/status", "666/status"} {
		b, err := readFixture(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseStatus(b, "fuzz")
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Errorf("error %v does not wrap ErrMalformed", err)
		}
		if err == nil && s.VmRSSBytes%1024 != 0 {
			t.Errorf("VmRSSBytes %d is not whole kB", s.VmRSSBytes)
		}
	})
}

func readFixture(p string) ([]byte, error) {
	return os.ReadFile(filepath.Join(fixtures.Root(), p))
}

// TestDescendants: the live tree below this process holds a child it
// started, with this process as its parent.
func TestDescendants(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep:", err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	for _, p := range (FS{}).Descendants(os.Getpid()) {
		if p.PID == cmd.Process.Pid {
			if p.PPID != os.Getpid() {
				t.Errorf("child %d has parent %d, want %d", p.PID, p.PPID, os.Getpid())
			}
			return
		}
	}
	t.Errorf("child %d not among the descendants of %d", cmd.Process.Pid, os.Getpid())
}
