package procfs

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

func TestStatusReaderFixture(t *testing.T) {
	r, err := fixtures.OpenStatus(4242)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	want, err := fixtures.ReadStatus(4242)
	if err != nil {
		t.Fatal(err)
	}
	var s Status
	for i := 0; i < 3; i++ { // re-reads give the same values
		if err := r.Read(&s); err != nil {
			t.Fatal(err)
		}
		if s != want {
			t.Errorf("read %d:\n got %+v\nwant %+v", i, s, want)
		}
	}
	sr, err := fixtures.OpenSmapsRollup(4242)
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	wantSm, _ := fixtures.ReadSmapsRollup(4242)
	var sm SmapsRollup
	if err := sr.Read(&sm); err != nil || sm != wantSm {
		t.Errorf("smaps_rollup: %+v, %v; want %+v", sm, err, wantSm)
	}
}

func TestStatusReaderMalformed(t *testing.T) {
	r, err := fixtures.OpenStatus(666)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var s Status
	checkParseError(t, r.Read(&s), "666/status: line 3: VmRSS", 3)
}

func TestOpenMissing(t *testing.T) {
	_, err := fixtures.OpenStatus(1)
	if err == nil || !strings.Contains(err.Error(), "status") {
		t.Errorf("err = %v, want an error naming status", err)
	}
}

// TestFileReaderGrows reads a file larger than the initial buffer, then the
// same file after it shrank: the reader returns exactly the current content,
// by os.File's reads and by raw system calls (status and statm's).
func TestFileReaderGrows(t *testing.T) {
	for _, raw := range []bool{false, true} {
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, "7"), 0o755); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "7", "status")
		big := strings.Repeat("Foo:\t1 kB\n", 1000) // 10,000 bytes > 4096
		if err := os.WriteFile(p, []byte(big), 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := NewFS(dir).openFile(7, "status", raw)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if r.raw != (raw && rawReads) {
			t.Errorf("raw %v: reader's raw is %v", raw, r.raw)
		}
		b, err := r.Read()
		if err != nil || string(b) != big {
			t.Fatalf("raw %v: read %d bytes, %v; want %d", raw, len(b), err, len(big))
		}
		if err := os.WriteFile(p, []byte("Name:\tx\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if b, err = r.Read(); err != nil || string(b) != "Name:\tx\n" {
			t.Errorf("raw %v: after shrink: %q, %v", raw, b, err)
		}
	}
}

// TestRawReadExited: a raw read of a reaped process's status fails with
// ESRCH, as os.File's does; the sampler tells an exit by it.
func TestRawReadExited(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	cmd := exec.Command("sleep", "10")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	r, err := FS{}.OpenStatus(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var s Status
	if err := r.Read(&s); err != nil || s.VmRSSBytes == 0 {
		t.Fatalf("live: %+v, %v", s, err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	err = r.Read(&s)
	if !errors.Is(err, syscall.ESRCH) || !strings.Contains(err.Error(), "status") {
		t.Errorf("after the exit: %v, want ESRCH naming status", err)
	}
}

// TestStatusReaderNoAllocs is the property the sampler relies on: reading
// the live status again allocates nothing.
func TestStatusReaderNoAllocs(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	r, err := FS{}.OpenStatus(Self)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var s Status
	if err := r.Read(&s); err != nil {
		t.Fatal(err)
	}
	if s.VmRSSBytes == 0 || s.Threads < 1 {
		t.Fatalf("implausible live status %+v", s)
	}
	if n := testing.AllocsPerRun(100, func() { r.Read(&s) }); n != 0 {
		t.Errorf("StatusReader.Read allocates %v times per read, want 0", n)
	}
	sr, err := FS{}.OpenSmapsRollup(Self)
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	var sm SmapsRollup
	if n := testing.AllocsPerRun(20, func() { sr.Read(&sm) }); n != 0 {
		t.Errorf("SmapsRollupReader.Read allocates %v times per read, want 0", n)
	}
	if sm.RssBytes == 0 {
		t.Errorf("implausible smaps_rollup %+v", sm)
	}
}
