package data

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

const samplePath = "../../testdata/sample.txt"

func TestLoadSynthetic(t *testing.T) {
	d, err := Load("synthetic:1MB", 788, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Tokens) != 200_000 || d.Vocab != 788 || d.Source != "synthetic:1MB" || d.Tokenizer != nil {
		t.Errorf("Load(synthetic:1MB) = %d tokens, vocab %d, source %q, tokenizer %v; want 200000, 788, synthetic:1MB, nil",
			len(d.Tokens), d.Vocab, d.Source, d.Tokenizer)
	}
	if d.Bytes() != 400_000 {
		t.Errorf("Bytes = %d, want 400000", d.Bytes())
	}
	if got := distinct(d.Tokens); got != 788 {
		t.Errorf("%d distinct ids, want 788", got)
	}
	d, err = Load("synthetic:24MB", 788, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Tokens) != 4_800_000 {
		t.Errorf("synthetic:24MB gave %d tokens, want 4800000", len(d.Tokens))
	}
}

func TestLoadSample(t *testing.T) {
	raw, err := os.ReadFile(samplePath)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Load(samplePath, 256, 1)
	if err != nil {
		t.Fatal(err)
	}
	if d.Tokenizer == nil || d.Vocab != d.Tokenizer.Size() || d.Source != samplePath || d.Warnings != nil {
		t.Fatalf("Load(sample) = vocab %d, source %q, warnings %q", d.Vocab, d.Source, d.Warnings)
	}
	if n := utf8.RuneCount(raw); len(d.Tokens) != n {
		t.Errorf("%d tokens for %d characters", len(d.Tokens), n)
	}
	if d.Vocab >= 100 {
		t.Errorf("sample has %d distinct characters; keep it under 100", d.Vocab)
	}
	if got := d.Tokenizer.Decode(d.Tokens); got != string(raw) {
		t.Error("Decode(tokens) differs from the sample text")
	}
	for _, id := range d.Tokens {
		if int(id) >= d.Vocab {
			t.Fatalf("token %d >= vocab %d", id, d.Vocab)
		}
	}
	uni, cond := Entropies(d.Tokens)
	t.Logf("sample: %d bytes, %d tokens, vocab %d, unigram %.3f nats, H(next|current) %.3f nats",
		len(raw), len(d.Tokens), d.Vocab, uni, cond)
}

func TestLoadFileUnk(t *testing.T) {
	d, err := Load(samplePath, 40, 1)
	if err != nil {
		t.Fatal(err)
	}
	if d.Vocab != 40 || len(d.Warnings) != 1 || !strings.Contains(d.Warnings[0], "sample.txt") || !strings.Contains(d.Warnings[0], "<unk>") {
		t.Fatalf("Load(sample, cap 40): vocab %d, warnings %q", d.Vocab, d.Warnings)
	}
	t.Log(d.Warnings[0])
	unk, _ := d.Tokenizer.Unk()
	distinct, occ := d.Tokenizer.Mapped()
	n := 0
	for _, id := range d.Tokens {
		if id == unk {
			n++
		}
	}
	if n != occ || distinct == 0 {
		t.Errorf("%d <unk> tokens, Mapped = %d, %d", n, distinct, occ)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		spec string
		want string // in the message besides the spec
		is   error  // errors.Is target, if any
	}{
		{"../../testdata/data/missing.txt", "no such file", fs.ErrNotExist},
		{"../../testdata/data/empty.txt", "empty", ErrEmptyFile},
		{"../../testdata/data/binary.bin", "NUL byte", ErrNotText},
		{"../../testdata/data/latin1.txt", "UTF-8", ErrNotText},
		{dir, "directory", nil},
		{"random:1MB", "unknown kind", nil},
		{"synthetic:1KB", "fewer than the vocabulary", nil},
		{"synthetic:lots", "parsing size", nil},
		{"synthetic:", "parsing size", nil},
		{"synthetic:100TB", "limit", nil},
	} {
		_, err := Load(tc.spec, 788, 1)
		if err == nil {
			t.Errorf("Load(%q) succeeded; want an error", tc.spec)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tc.spec) || !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
			t.Errorf("Load(%q) error %q; want one line naming the spec and mentioning %q", tc.spec, msg, tc.want)
		}
		if tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("Load(%q) error %q is not %v", tc.spec, msg, tc.is)
		}
	}
	for _, vocab := range []int{0, 1, MaxVocab + 1} {
		if _, err := Load("synthetic:1MB", vocab, 1); err == nil {
			t.Errorf("Load(synthetic:1MB, vocab %d) succeeded", vocab)
		}
	}
	if _, err := Load("", 788, 1); err == nil {
		t.Error(`Load("") succeeded`)
	}
}

// TestLoadColonPath checks that an existing file whose name looks like
// "kind:rest" loads as a file rather than failing as an unknown kind.
func TestLoadColonPath(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes:v2.txt"), []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	if d, err := Load("notes:v2.txt", 788, 1); err != nil || d.Vocab != 3 {
		t.Errorf("Load(notes:v2.txt) = %v; want a 3-character vocabulary", err)
	}
}

// TestCheckSpec: the spec checks Load makes first, without loading.
func TestCheckSpec(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ spec, want string }{
		{"synthetic:1MB", ""},
		{"../../testdata/sample.txt", ""},
		{"synthetic:abc", `dataset "synthetic:abc"`},
		{"synthetic:-1", `dataset "synthetic:-1"`},
		{"synthetic:1PB", `unknown unit "PB"`},
		{"synthetic:5TB", "more than the limit"},
		{"synthetic:10", "fewer than the vocabulary"},
		{"", "empty spec"},
		{"hf:tinystories", `unknown kind "hf"`},
		{dir + "/missing.txt", ""}, // existence is Load's: a runtime error
	} {
		err := CheckSpec(c.spec, 788)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("CheckSpec(%q): %v", c.spec, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("CheckSpec(%q) = %v, want %q", c.spec, err, c.want)
		}
	}
}

// TestLoadNotRegular: a named pipe, a device or a /proc file is refused in
// one line before anything is read: opening a pipe with no writer blocks
// for ever, and /dev/zero never ends (the whole of it was read, until the
// process died out of memory). A /proc file reports size 0 and reads as
// empty.
func TestLoadNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "ff")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no named pipes here:", err)
	}
	cases := []struct {
		spec, want string
		is         error
	}{
		{fifo, "not a regular file (a named pipe)", ErrNotRegular},
		{dir, "is a directory", nil},
	}
	for _, p := range []struct{ path, want string }{
		{"/dev/zero", "not a regular file (a character device)"},
		{"/dev/null", "not a regular file (a character device)"},
		{"/proc/self/status", "file is empty"},
	} {
		if _, err := os.Stat(p.path); err == nil {
			cases = append(cases, struct {
				spec, want string
				is         error
			}{p.path, p.want, nil})
		}
	}
	for _, c := range cases {
		done := make(chan error, 1)
		go func() { _, err := Load(c.spec, 788, 1); done <- err }()
		var err error
		select {
		case err = <-done:
		case <-time.After(time.Minute): // a guard against hanging for ever, not a timing check
			t.Fatalf("Load(%q) still blocked after a minute", c.spec)
		}
		want := fmt.Sprintf("loading dataset file %q: %s", c.spec, c.want)
		if err == nil || err.Error() != want {
			t.Errorf("Load(%q) = %v, want %q", c.spec, err, want)
		}
		if c.is != nil && !errors.Is(err, c.is) {
			t.Errorf("Load(%q) error %v is not %v", c.spec, err, c.is)
		}
	}
}

// TestReadRegularFile: a regular file is read whole, by its size; one past
// the limit is refused from its size, without reading it.
func TestReadRegularFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.txt")
	if err := os.WriteFile(path, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadRegularFile(path, 5); err != nil || string(b) != "hello" {
		t.Errorf("ReadRegularFile = %q, %v; want hello", b, err)
	}
	if b, err := ReadRegularFile(path, 4); err == nil || err.Error() != "5 bytes, more than the limit of 4" {
		t.Errorf("ReadRegularFile past the limit = %q, %v", b, err)
	}
	if _, err := ReadRegularFile(filepath.Join(dir, "missing"), 0); !errors.Is(err, fs.ErrNotExist) || strings.Contains(err.Error(), dir) {
		t.Errorf("missing file: %v, want ErrNotExist without the path", err)
	}
	empty := filepath.Join(dir, "e.txt")
	os.WriteFile(empty, nil, 0o644)
	if b, err := ReadRegularFile(empty, 0); err != nil || len(b) != 0 {
		t.Errorf("empty file = %q, %v", b, err)
	}
}

// TestSizeUnitsListed: both ParseSize errors that list the units list the
// same ones, every unit it accepts.
func TestSizeUnitsListed(t *testing.T) {
	_, noNumber := ParseSize("MB")
	_, badUnit := ParseSize("1XB")
	const all = "B, KB, MB, GB, TB, KiB, MiB, GiB, TiB"
	for _, err := range []error{noNumber, badUnit} {
		if err == nil || !strings.Contains(err.Error(), all+")") {
			t.Errorf("%v: want the units listed as %s", err, all)
		}
	}
	for _, u := range strings.Split(all, ", ") {
		if _, err := ParseSize("1" + u); err != nil {
			t.Errorf("listed unit %s is refused: %v", u, err)
		}
	}
}
