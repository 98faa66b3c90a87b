package data

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzLoadFile: loading any file as a dataset never panics; a refusal
// names the file; an accepted dataset has only ids below its vocabulary
// and, when no character went to <unk>, decodes back to the file's text.
// Seeds (testdata/fuzz/FuzzLoadFile and below): prose, one character,
// multi-byte UTF-8, binary, invalid UTF-8, more characters than the cap.
func FuzzLoadFile(f *testing.F) {
	f.Add([]byte("the quick brown fox jumps over the lazy dog\n"), uint16(788))
	f.Add([]byte("a"), uint16(2))
	f.Add([]byte("héllo wörld, 日本語 🙂\n"), uint16(5))
	f.Add([]byte("\x00\x01\x02binary"), uint16(788))
	f.Add([]byte("bad \xff\xfe utf-8"), uint16(788))
	f.Add([]byte("abcdefghijklmnopqrstuvwxyz"), uint16(4))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte, vocab uint16) {
		path := filepath.Join(dir, "data.txt")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		d, err := Load(path, int(vocab), 1)
		if err != nil {
			if !strings.Contains(err.Error(), path) && !strings.Contains(err.Error(), "vocabulary cap") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if len(d.Tokens) != utf8.RuneCount(b) || d.Vocab < 1 || d.Vocab > int(vocab) {
			t.Fatalf("%d tokens for %d characters, vocabulary %d (cap %d)", len(d.Tokens), utf8.RuneCount(b), d.Vocab, vocab)
		}
		for i, id := range d.Tokens {
			if int(id) >= d.Vocab {
				t.Fatalf("token %d: id %d outside the vocabulary of %d", i, id, d.Vocab)
			}
		}
		if _, unk := d.Tokenizer.Unk(); !unk && d.Tokenizer.Decode(d.Tokens) != string(b) {
			t.Fatal("the text does not decode back")
		}
	})
}

// FuzzTokenizer: a tokenizer built from any text encodes that text to ids
// it decodes back (characters past the cap become <unk>, and <unk>
// decodes to U+FFFD); encoding another text never panics and yields ids
// below Size.
func FuzzTokenizer(f *testing.F) {
	f.Add("hello, world", "held", uint16(100))
	f.Add("ααβγ", "γγ?", uint16(2))
	f.Add("\u0000\uffff\U0010ffff", "\U0010ffff", uint16(3))
	f.Fuzz(func(t *testing.T, text, other string, vocab uint16) {
		tok, err := NewCharTokenizer(text, int(vocab))
		if err != nil {
			if text != "" && utf8.ValidString(text) && vocab >= 2 {
				t.Fatalf("refused a valid text: %v", err)
			}
			return
		}
		ids, err := tok.Encode(text)
		if err != nil {
			t.Fatalf("cannot encode the text it was built from: %v", err)
		}
		for _, id := range ids {
			if int(id) >= tok.Size() {
				t.Fatalf("id %d outside the vocabulary of %d", id, tok.Size())
			}
		}
		if _, unk := tok.Unk(); !unk && tok.Decode(ids) != text {
			t.Fatalf("Decode(Encode(%q)) = %q", text, tok.Decode(ids))
		}
		if ids, err := tok.Encode(other); err == nil {
			for _, id := range ids {
				if int(id) >= tok.Size() {
					t.Fatalf("other text: id %d outside the vocabulary of %d", id, tok.Size())
				}
			}
		}
	})
}
