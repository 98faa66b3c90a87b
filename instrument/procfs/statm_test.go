package procfs

import (
	"errors"
	"runtime"
	"testing"
)

func TestParseStatm(t *testing.T) {
	s, err := ParseStatm([]byte("765 436 408 2 0 90 0\n"), "statm", 4096)
	want := Statm{SizeBytes: 765 * 4096, ResidentBytes: 436 * 4096, SharedBytes: 408 * 4096, TextBytes: 2 * 4096, DataBytes: 90 * 4096}
	if err != nil || s != want {
		t.Errorf("got %+v, %v; want %+v", s, err, want)
	}
	for _, in := range []string{"", "1 2 3", "1 2 3 4 5 6 x", "1 2 3 4 5 6 7 8", "-1 2 3 4 5 6 7"} {
		if _, err := ParseStatm([]byte(in), "statm", 4096); !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseStatm(%q) = %v, want ErrMalformed", in, err)
		}
	}
}

// TestStatmMatchesStatus checks that statm and status tell the same RSS
// and VSZ (read moments apart: allow 1 MiB), and that a read allocates
// nothing.
func TestStatmMatchesStatus(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	r, err := FS{}.OpenStatm(Self)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var m Statm
	if err := r.Read(&m); err != nil {
		t.Fatal(err)
	}
	st, err := ReadStatus(Self)
	if err != nil {
		t.Fatal(err)
	}
	near := func(a, b uint64) bool { d := int64(a) - int64(b); return d < 1<<20 && d > -1<<20 }
	if !near(m.ResidentBytes, st.VmRSSBytes) || !near(m.SizeBytes, st.VmSizeBytes) {
		t.Errorf("statm %+v, status RSS %d VSZ %d", m, st.VmRSSBytes, st.VmSizeBytes)
	}
	if n := testing.AllocsPerRun(100, func() { r.Read(&m) }); n != 0 {
		t.Errorf("StatmReader.Read allocates %v times, want 0", n)
	}
}
