package data

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
