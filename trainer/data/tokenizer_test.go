package data

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCharTokenizerRoundTrip(t *testing.T) {
	text := "hello, wörld — ½ ≡ 世界\n\tend"
	tok, err := NewCharTokenizer(text, 256)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(distinctRunes(text)); tok.Size() != want {
		t.Errorf("Size = %d, want %d distinct characters", tok.Size(), want)
	}
	if _, ok := tok.Unk(); ok {
		t.Error("tokenizer has an <unk> id though every character fit")
	}
	ids, err := tok.Encode(text)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != utf8.RuneCountInString(text) {
		t.Errorf("Encode gave %d ids for %d characters", len(ids), utf8.RuneCountInString(text))
	}
	if got := tok.Decode(ids); got != text {
		t.Errorf("Decode(Encode(text)) = %q, want %q", got, text)
	}
	// Ids follow code-point order.
	for i := 1; i < tok.Size(); i++ {
		if tok.runes[i-1] >= tok.runes[i] {
			t.Fatalf("ids %d and %d are %q and %q: not in code-point order", i-1, i, tok.runes[i-1], tok.runes[i])
		}
	}
	if _, err := tok.Encode("xyz!"); err == nil {
		t.Error("Encode of characters outside the vocabulary without <unk> succeeded")
	}
	if _, err := tok.Encode("h\xffe"); err == nil {
		t.Error("Encode of invalid UTF-8 succeeded")
	}
	if got := tok.Decode([]uint16{65000}); got != "\uFFFD" {
		t.Errorf("Decode(out of range) = %q, want U+FFFD", got)
	}
}

func TestCharTokenizerUnk(t *testing.T) {
	// Frequencies: a 5, b 4, c 3, d 2, e 1 -> cap 4 keeps a, b, c.
	text := "aaaaabbbbcccdde"
	tok, err := NewCharTokenizer(text, 4)
	if err != nil {
		t.Fatal(err)
	}
	unk, ok := tok.Unk()
	if !ok || unk != 3 || tok.Size() != 4 {
		t.Fatalf("Unk = %d, %v, Size = %d; want 3, true, 4", unk, ok, tok.Size())
	}
	if d, n := tok.Mapped(); d != 2 || n != 3 {
		t.Errorf("Mapped = %d, %d; want 2 characters, 3 occurrences", d, n)
	}
	ids, err := tok.Encode(text + "z")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tok.Decode(ids), "aaaaabbbbccc\uFFFD\uFFFD\uFFFD\uFFFD"; got != want {
		t.Errorf("Decode = %q, want %q", got, want)
	}
	// Ties go to the lower code point: cap 3 over "dcba" (one each) keeps a, b.
	tok, err = NewCharTokenizer("dcba", 3)
	if err != nil {
		t.Fatal(err)
	}
	if ids, _ := tok.Encode("abc"); tok.Decode(ids) != "ab\uFFFD" {
		t.Errorf("tie-break: Decode = %q, want %q", tok.Decode(ids), "ab\uFFFD")
	}
}

func TestCharTokenizerErrors(t *testing.T) {
	for _, tc := range []struct {
		text string
		cap  int
		want string
	}{
		{"", 100, "empty"},
		{"ab\xc3", 100, "UTF-8"},
		{"abc", 1, "cap"},
		{"abc", MaxVocab + 1, "cap"},
	} {
		if _, err := NewCharTokenizer(tc.text, tc.cap); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewCharTokenizer(%q, %d) error = %v, want one mentioning %q", tc.text, tc.cap, err, tc.want)
		}
	}
}

func distinctRunes(s string) map[rune]bool {
	m := map[rune]bool{}
	for _, r := range s {
		m[r] = true
	}
	return m
}
