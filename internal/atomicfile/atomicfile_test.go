package atomicfile

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestWriteReplacesWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.json")
	if err := WriteBytes(path, []byte("old")); err != nil {
		t.Fatal(err)
	}
	if err := WriteBytes(path, []byte("new")); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	st, _ := os.Stat(path)
	if string(b) != "new" || st.Mode().Perm() != 0o644 {
		t.Errorf("got %q mode %v, want \"new\" mode 0644", b, st.Mode().Perm())
	}
}

func TestFailedWriteKeepsOld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ck.bin")
	WriteBytes(path, []byte("good"))
	boom := errors.New("boom")
	err := Write(path, func(w io.Writer) error {
		w.Write([]byte("half"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want boom", err)
	}
	b, _ := os.ReadFile(path)
	entries, _ := os.ReadDir(dir)
	if string(b) != "good" || len(entries) != 1 {
		t.Errorf("after a failed write: %q and %d entries, want \"good\" and 1", b, len(entries))
	}
	if err := WriteBytes(filepath.Join(dir, "no/such/dir/x"), nil); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}

// TestCheckWritable: a path in a writable directory passes and leaves
// nothing behind; a missing directory, a directory as the path, a file as
// the directory fail with the path named.
func TestCheckWritable(t *testing.T) {
	dir := t.TempDir()
	if err := CheckWritable(filepath.Join(dir, "r.json")); err != nil {
		t.Errorf("writable: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("CheckWritable left %d files behind", len(ents))
	}
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{filepath.Join(dir, "nodir", "r.json"), "no such file or directory"},
		{dir, "is a directory"},
		{filepath.Join(file, "r.json"), "is not a directory"},
	} {
		err := CheckWritable(c.path)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.path) {
			t.Errorf("CheckWritable(%s) = %v, want an error naming it and %q", c.path, err, c.want)
		}
	}
}

// fullFile is a temporary file on a disk that fills up after room bytes:
// writes past it fail with ENOSPC, as on a full file system; failAt
// makes a later step (sync, close) fail instead.
type fullFile struct {
	*os.File
	room   int
	failAt string
}

func (f *fullFile) Write(p []byte) (int, error) {
	if len(p) > f.room {
		n, _ := f.File.Write(p[:f.room])
		f.room = 0
		return n, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	f.room -= len(p)
	return f.File.Write(p)
}

func (f *fullFile) Sync() error {
	if f.failAt == "sync" {
		return &os.PathError{Op: "sync", Path: f.Name(), Err: syscall.EIO}
	}
	return f.File.Sync()
}

func (f *fullFile) Close() error {
	err := f.File.Close()
	if f.failAt == "close" {
		return &os.PathError{Op: "close", Path: f.Name(), Err: syscall.EDQUOT}
	}
	return err
}

// TestDiskFull: a disk that fills up while the new file is written, or
// a sync or close that fails, leaves the previous file intact and no
// temporary file, with an error naming the path and the cause.
func TestDiskFull(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.json")
	if err := WriteBytes(path, []byte("the previous report")); err != nil {
		t.Fatal(err)
	}
	defer func(old func(string, string) (tempFile, error)) { createTemp = old }(createTemp)
	big := bytes.Repeat([]byte("x"), 3<<20) // more than the 1 MiB buffer: Write and Flush both hit the disk
	for _, c := range []struct {
		room   int
		failAt string
		data   []byte
		want   error
	}{
		{0, "", []byte("new"), syscall.ENOSPC},        // full at once: the flush fails
		{100, "", big, syscall.ENOSPC},                // full in the middle of a large write
		{len(big) + 10, "sync", big, syscall.EIO},     // the data fits, fsync fails
		{len(big) + 10, "close", big, syscall.EDQUOT}, // close reports the quota (NFS does)
	} {
		createTemp = func(dir, pattern string) (tempFile, error) {
			f, err := os.CreateTemp(dir, pattern)
			if err != nil {
				return nil, err
			}
			return &fullFile{File: f, room: c.room, failAt: c.failAt}, nil
		}
		err := WriteBytes(path, c.data)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), "writing "+path) {
			t.Errorf("room %d, fail at %q: %v, want an error naming %s and %v", c.room, c.failAt, err, path, c.want)
		}
		b, _ := os.ReadFile(path)
		ents, _ := os.ReadDir(dir)
		if string(b) != "the previous report" || len(ents) != 1 {
			t.Errorf("room %d, fail at %q: the file holds %.20q and the directory %d entries, want the previous report alone", c.room, c.failAt, b, len(ents))
		}
	}
}

// TestReadOnlyDir: a directory that cannot be written fails the check
// and the write, and keeps its file. Root writes anywhere: skipped.
func TestReadOnlyDir(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores directory permissions")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "r.json")
	if err := WriteBytes(path, []byte("old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o755)
	if err := CheckWritable(path); err == nil || !strings.Contains(err.Error(), "is not writable") {
		t.Errorf("CheckWritable in a read-only directory: %v", err)
	}
	if err := WriteBytes(path, []byte("new")); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("WriteBytes in a read-only directory: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("the file holds %q, want the old one", b)
	}
}

// TestCheckDistinct: an output that is an input, or another output, by
// name or by link, is refused in one line naming both flags; "-" and ""
// are not files.
func TestCheckDistinct(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "r.json")
	if err := os.WriteFile(in, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(in, link); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "out.html")
	for _, c := range []struct {
		outs, ins []Path
		want      string
	}{
		{[]Path{{"--html", in}}, []Path{{"REPORT", in}}, "--html " + in + ": is also the input REPORT " + in},
		{[]Path{{"--html", link}}, []Path{{"REPORT", in}}, "is also the input REPORT"},
		{[]Path{{"--html", filepath.Join(dir, ".", "r.json")}}, []Path{{"REPORT", in}}, "is also the input"},
		{[]Path{{"--json", other}, {"--checkpoint", other}}, nil, "--checkpoint " + other + ": --json names the same file"},
		{[]Path{{"--json", other}}, []Path{{"REPORT", in}}, ""},
		{[]Path{{"--json", "-"}, {"--out", "-"}}, []Path{{"--data", "-"}}, ""},
		{[]Path{{"--json", ""}}, []Path{{"--data", ""}}, ""},
	} {
		err := CheckDistinct(c.outs, c.ins)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v %v: %v, want none", c.outs, c.ins, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%v %v: %v, want %q", c.outs, c.ins, err, c.want)
		}
	}
}

// TestCheckWritableProc: a directory that exists but takes no new file
// (/proc) is said to be one, not "no such file or directory".
func TestCheckWritableProc(t *testing.T) {
	if _, err := os.Stat("/proc/self"); err != nil {
		t.Skip("no /proc")
	}
	// As root, creating a file in /proc fails with ENOENT; as another user,
	// with EACCES first.
	err := CheckWritable("/proc/x.json")
	if err == nil || (err.Error() != "/proc/x.json: directory /proc does not accept new files" &&
		err.Error() != "/proc/x.json: directory /proc is not writable: permission denied") {
		t.Errorf("got %v", err)
	}
}

// TestWriteFollowsLinksAndStreams: a symbolic link is followed (the file
// it names is replaced and the link kept), a dangling one creates its
// target, and what is not a regular file (a named pipe, /dev/null) is
// written through, not replaced by a regular file. Before, the rename
// turned the link, the pipe and the device node into regular files.
func TestWriteFollowsLinksAndStreams(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.json")
	link := filepath.Join(dir, "link.json")
	if err := os.WriteFile(real, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real.json", link); err != nil {
		t.Fatal(err)
	}
	if err := CheckWritable(link); err != nil {
		t.Fatal(err)
	}
	if err := WriteBytes(link, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("%s is no longer a link: %v, %v", link, fi.Mode(), err)
	}
	if b, _ := os.ReadFile(real); string(b) != "new" {
		t.Errorf("%s holds %q, want the new bytes", real, b)
	}

	dangling := filepath.Join(dir, "dangling.json")
	if err := os.Symlink(filepath.Join(dir, "later.json"), dangling); err != nil {
		t.Fatal(err)
	}
	if err := WriteBytes(dangling, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "later.json")); err != nil || string(b) != "x" {
		t.Errorf("dangling link's target: %q, %v", b, err)
	}
	if fi, err := os.Lstat(dangling); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("%s is no longer a link", dangling)
	}

	fifo := filepath.Join(dir, "ff")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no named pipes here:", err)
	}
	got := make(chan string, 1)
	go func() {
		b, _ := os.ReadFile(fifo) // the reader the writer waits for
		got <- string(b)
	}()
	if err := CheckWritable(fifo); err != nil {
		t.Fatal(err)
	}
	if err := WriteBytes(fifo, []byte("through the pipe")); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "through the pipe" {
		t.Errorf("the pipe's reader got %q", s)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("%s is no longer a named pipe: %v", fifo, fi.Mode())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 5 {
		t.Errorf("%d entries in the directory, want 5 (no temporary file left)", len(entries))
	}

	// A device node: a null device of our own (never the system's
	// /dev/null, which a regression would replace), where mknod is
	// allowed (root, CAP_MKNOD).
	null := filepath.Join(dir, "null")
	if err := syscall.Mknod(null, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
		t.Skip("cannot make a device node here:", err)
	}
	if err := WriteBytes(null, []byte("discarded")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(null); err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
		t.Errorf("%s is no longer a character device: %v", null, fi.Mode())
	}
}

// TestStaged: a staged file is put in place as Write puts its own: over
// the file a link names (the link kept), into a named pipe, and not at
// all when the commit fails; its temporary file is gone in every case.
func TestStaged(t *testing.T) {
	dir := t.TempDir()
	real, link := filepath.Join(dir, "p.pprof"), filepath.Join(dir, "link.pprof")
	os.WriteFile(real, []byte("old"), 0o644)
	os.Symlink("p.pprof", link)
	stage := func(path, content string) string {
		t.Helper()
		f, err := CreateStaged(path)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(content)
		f.Close()
		return f.Name()
	}
	tmp := stage(link, "profile")
	if err := CommitStaged(tmp, link); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(real); string(b) != "profile" {
		t.Errorf("%s holds %q", real, b)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("%s is no longer a link", link)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("temporary file %s left: %v", tmp, err)
	}

	fifo := filepath.Join(dir, "ff")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no named pipes here:", err)
	}
	got := make(chan string, 1)
	go func() { b, _ := os.ReadFile(fifo); got <- string(b) }()
	tmp = stage(fifo, "streamed")
	if err := CommitStaged(tmp, fifo); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "streamed" {
		t.Errorf("the pipe's reader got %q", s)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("temporary file %s left: %v", tmp, err)
	}
}

// TestWriteDanglingLinks: Write's dangling-link rule. A chain of links
// whose last names a missing file, relative or absolute, creates that file
// and keeps every link; so does CommitStaged. A dangling link into a
// missing directory is an error that leaves the link as it was.
func TestWriteDanglingLinks(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target.json")
	first, second := filepath.Join(dir, "first.json"), filepath.Join(dir, "second.json")
	if err := os.Symlink("second.json", first); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, second); err != nil {
		t.Fatal(err)
	}
	isLink := func(p string) bool {
		fi, err := os.Lstat(p)
		return err == nil && fi.Mode()&fs.ModeSymlink != 0
	}
	if err := WriteBytes(first, []byte("one")); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "one" || !isLink(first) || !isLink(second) {
		t.Errorf("after Write through two links: target %q (%v), links kept %v %v; want the target made, both links kept", b, err, isLink(first), isLink(second))
	}

	staged := filepath.Join(dir, "staged.pprof")
	if err := os.Symlink("staged-target.pprof", staged); err != nil {
		t.Fatal(err)
	}
	f, err := CreateStaged(staged)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("profile")
	f.Close()
	if err := CommitStaged(f.Name(), staged); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "staged-target.pprof")); err != nil || string(b) != "profile" || !isLink(staged) {
		t.Errorf("after CommitStaged through a dangling link: target %q (%v), link kept %v", b, err, isLink(staged))
	}

	nowhere := filepath.Join(dir, "nowhere.json")
	if err := os.Symlink(filepath.Join(dir, "missing", "x.json"), nowhere); err != nil {
		t.Fatal(err)
	}
	if err := WriteBytes(nowhere, []byte("x")); err == nil {
		t.Error("Write through a link into a missing directory: no error")
	}
	if !isLink(nowhere) {
		t.Errorf("%s is no longer a link after a failed write", nowhere)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}
