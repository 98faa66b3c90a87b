package schema

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpen: Open reads a result, a report and decode records each by its
// own reader, a directory's *.json files in name order, and refuses an
// empty directory, a missing path and a damaged file in one line naming
// the file.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	copyTo := func(src, name string) string {
		t.Helper()
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, name)
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return dst
	}
	// Named so that name order differs from the order they are made in.
	report := copyTo("../report/testdata/run-report.json", "a-report.json")
	decode := copyTo("testdata/decode.json", "b-decode.json")
	result := copyTo("testdata/result.json", "c-result.json")
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not read"), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		path, want string
	}{{result, "result"}, {report, "report"}, {decode, "decode"}} {
		files, err := Open(c.path)
		if err != nil {
			t.Fatalf("Open %s: %v", c.path, err)
		}
		if len(files) != 1 || files[0].Path != c.path || holds(files[0]) != c.want {
			t.Errorf("Open %s: %d files; want one, a %s", c.path, len(files), c.want)
		}
	}

	files, err := Open(dir)
	if err != nil {
		t.Fatalf("Open %s: %v", dir, err)
	}
	var got []string
	for _, f := range files {
		got = append(got, filepath.Base(f.Path)+" "+holds(f))
	}
	if want := "a-report.json report, b-decode.json decode, c-result.json result"; strings.Join(got, ", ") != want {
		t.Errorf("Open %s: %s, want %s", dir, strings.Join(got, ", "), want)
	}
	if len(files) == 3 && len(files[1].Decode) < 2 {
		t.Errorf("Open %s: %d decode records, want the fixture's array of several", decode, len(files[1].Decode))
	}

	if _, err := Open(t.TempDir()); !errors.Is(err, ErrNoFiles) {
		t.Errorf("Open of an empty directory: %v, want ErrNoFiles", err)
	}
	missing := filepath.Join(dir, "missing.json")
	if _, err := Open(missing); !errors.Is(err, fs.ErrNotExist) || strings.Count(err.Error(), missing) != 1 {
		t.Errorf("Open %s: %v, want not-exist naming it once", missing, err)
	}
	bad := filepath.Join(dir, "d-bad.json")
	if err := os.WriteFile(bad, []byte(`{"schema": "memprobe.train/v3", "steps": "many"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "reading result " + bad + ": line 1: field steps: a JSON string where an integer is wanted"
	if _, err := Open(dir); err == nil || err.Error() != want {
		t.Errorf("Open of a directory holding a damaged result:\n got %v\nwant %s", err, want)
	}
}

// TestDecodeFile: the file's content picks the reader, whatever its
// version, so that the refusal names what the file is.
func TestDecodeFile(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"schema": "memprobe.train/v2"}`, `reading result f.json: unsupported schema: schema "memprobe.train/v2", this build reads "memprobe.train/v3"`},
		{`{"schema": "memprobe.decode/v0"}`, `reading decode result f.json: unsupported schema: schema "memprobe.decode/v0", this build reads "memprobe.decode/v1"`},
		{`[]`, `reading decode result f.json: an empty array, no mode measured`},
		{`{"schema": "memprobe.report/v9"}`, `reading report f.json: unsupported schema: schema "memprobe.report/v9", this build reads "memprobe.report/v1"`},
		{`{}`, `reading report f.json: unsupported schema: no "schema" field (not a memprobe report, or one from before schemas)`},
	} {
		_, err := DecodeFile([]byte(c.in), "f.json")
		if err == nil || err.Error() != c.want {
			t.Errorf("DecodeFile(%s):\n got %v\nwant %s", c.in, err, c.want)
		}
	}
}

// holds names what f holds, "" for none or more than one.
func holds(f File) string {
	var kinds []string
	if f.Result != nil {
		kinds = append(kinds, "result")
	}
	if f.Report != nil {
		kinds = append(kinds, "report")
	}
	if len(f.Decode) > 0 {
		kinds = append(kinds, "decode")
	}
	if len(kinds) != 1 {
		return ""
	}
	return kinds[0]
}
