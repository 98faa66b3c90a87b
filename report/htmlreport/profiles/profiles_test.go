package profiles

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"memprobe/internal/table"
	"memprobe/schema"
)

// TestResolve: paths under the report's directory resolve; "..", an
// absolute path elsewhere and a symbolic link out of it do not.
func TestResolve(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "prof"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "prof", "a.heap.pprof"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "prof", "link.pprof")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path, want string
		outside    bool
	}{
		{"prof/a.heap.pprof", "prof/a.heap.pprof", false},
		{"./prof/../prof/a.heap.pprof", "prof/a.heap.pprof", false},
		{filepath.Join(dir, "prof", "a.heap.pprof"), "prof/a.heap.pprof", false},
		{"../../etc/passwd", "", true},
		{"prof/../../x", "", true},
		{"/etc/passwd", "", true},
		{filepath.Dir(dir), "", true},
	} {
		got, err := Resolve(dir, c.path)
		if c.outside {
			if !errors.Is(err, ErrOutside) {
				t.Errorf("Resolve(%q) = %q, %v; want ErrOutside", c.path, got, err)
			}
			if f, err := Open(dir, c.path); err == nil {
				f.Close()
				t.Errorf("Open(%q) opened it", c.path)
			}
			continue
		}
		if err != nil || got != filepath.FromSlash(c.want) {
			t.Errorf("Resolve(%q) = %q, %v; want %q", c.path, got, err, c.want)
		}
		f, err := Open(dir, c.path)
		if err != nil {
			t.Errorf("Open(%q): %v", c.path, err)
			continue
		}
		f.Close()
	}
	// The link resolves as a name under dir, but os.Root refuses to follow it out.
	if _, err := Resolve(dir, "prof/link.pprof"); err != nil {
		t.Errorf("Resolve(link): %v", err)
	}
	if f, err := Open(dir, "prof/link.pprof"); err == nil {
		f.Close()
		t.Error("Open followed a symbolic link out of the report's directory")
	}
}

func TestTable(t *testing.T) {
	rep := &schema.Report{Runs: []schema.Run{
		{Name: "threads-before", Repetitions: []schema.Result{{Profiles: &schema.Profiles{Files: []schema.ProfileFile{
			{Kind: "cpu", Path: "prof/threads-before-r1.cpu.pprof"},
			{Kind: "heap", Path: "prof/threads-before-r1.heap.pprof"},
			{Kind: "heap-peak", Path: "prof/threads-before-r1.heap-peak-01.pprof", HeapLiveBytes: 3 << 20},
			{Kind: "heap-peak", Path: "prof/threads-before-r1.heap-peak-02.pprof", HeapLiveBytes: 5 << 20},
		}}}}},
		{Name: "threads-P6", Repetitions: []schema.Result{{}, {Profiles: &schema.Profiles{Files: []schema.ProfileFile{
			{Kind: "cpu", Path: "a/x.cpu.pprof"}, {Kind: "heap", Path: "b/x.heap.pprof"},
		}}}}},
	}}
	var b strings.Builder
	if err := WriteTable(&b, rep, table.Text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"prof/threads-before-r1.{cpu,heap}.pprof", "5 MiB",
		"threads-P6", "a/x.cpu.pprof, b/x.heap.pprof",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	if n := len(List(rep)); n != 6 {
		t.Errorf("List: %d profiles, want 6", n)
	}
	if Table(&schema.Report{Runs: []schema.Run{{Name: "x"}}}) != nil {
		t.Error("a report without profiles has a profile table")
	}
}
