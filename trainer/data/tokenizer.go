package data

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// CharTokenizer maps each distinct character (Unicode code point) of a text to
// one token id. It is character level, not BPE, on purpose: the table is
// small (about a hundred ids for English prose), building it is exact and
// needs no training or merge file, and Decode(Encode(s)) == s for every text
// the tokenizer was built from, so a test can check the corpus round-trips.
//
// Ids are assigned to the distinct characters sorted by code point, so the
// same text always gives the same ids. When a text has more distinct
// characters than the vocabulary cap, the cap-1 most frequent are kept (ties
// go to the lower code point) and every other character maps to one <unk> id,
// the last id (cap-1).
type CharTokenizer struct {
	runes []rune               // (Size) id -> character; utf8.RuneError for <unk>
	ascii [utf8.RuneSelf]int32 // ASCII character -> id, or -1
	other map[rune]uint16      // non-ASCII character -> id
	unk   int                  // the <unk> id, or -1 when every character fit

	mappedRunes, mappedCount int // characters of the build text sent to <unk>
}

// NewCharTokenizer builds the tokenizer of text with at most vocabCap ids.
// text must be non-empty valid UTF-8 and vocabCap must be in [2, MaxVocab].
func NewCharTokenizer(text string, vocabCap int) (*CharTokenizer, error) {
	if vocabCap < 2 || vocabCap > MaxVocab {
		return nil, fmt.Errorf("building tokenizer: vocabulary cap %d outside [2, %d] (token ids are uint16)", vocabCap, MaxVocab)
	}
	if text == "" {
		return nil, fmt.Errorf("building tokenizer: empty text")
	}
	if off := invalidUTF8(text); off >= 0 {
		return nil, fmt.Errorf("building tokenizer: invalid UTF-8 byte %#02x at offset %d", text[off], off)
	}

	// Count characters; ASCII through an array, the rest through a map.
	var asciiCount [utf8.RuneSelf]int
	otherCount := map[rune]int{}
	for i := 0; i < len(text); {
		if c := text[i]; c < utf8.RuneSelf {
			asciiCount[c]++
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		otherCount[r]++
		i += size
	}
	type runeCount struct {
		r rune
		n int
	}
	var chars []runeCount // ascending code point
	for c, n := range asciiCount {
		if n > 0 {
			chars = append(chars, runeCount{rune(c), n})
		}
	}
	for r, n := range otherCount {
		chars = append(chars, runeCount{r, n})
	}
	slices.SortFunc(chars, func(a, b runeCount) int { return cmp.Compare(a.r, b.r) })

	t := &CharTokenizer{other: map[rune]uint16{}, unk: -1}
	if len(chars) > vocabCap {
		// Keep the vocabCap-1 most frequent, then restore code-point order.
		slices.SortStableFunc(chars, func(a, b runeCount) int { return cmp.Compare(b.n, a.n) })
		for _, c := range chars[vocabCap-1:] {
			t.mappedRunes++
			t.mappedCount += c.n
		}
		chars = chars[:vocabCap-1]
		slices.SortFunc(chars, func(a, b runeCount) int { return cmp.Compare(a.r, b.r) })
		t.unk = vocabCap - 1
	}
	for i := range t.ascii {
		t.ascii[i] = -1
	}
	for id, c := range chars {
		t.runes = append(t.runes, c.r)
		if c.r < utf8.RuneSelf {
			t.ascii[c.r] = int32(id)
		} else {
			t.other[c.r] = uint16(id)
		}
	}
	if t.unk >= 0 {
		t.runes = append(t.runes, utf8.RuneError)
	}
	return t, nil
}

// Size is the number of ids, <unk> included: a model's vocabulary must be at
// least this large.
func (t *CharTokenizer) Size() int { return len(t.runes) }

// Chars returns the character of each id, in id order; the <unk> id's is
// U+FFFD (see Unk).
func (t *CharTokenizer) Chars() []rune { return slices.Clone(t.runes) }

// Unk returns the <unk> id; ok is false when the tokenizer has none because
// every character of its text fit under the cap.
func (t *CharTokenizer) Unk() (id uint16, ok bool) {
	if t.unk < 0 {
		return 0, false
	}
	return uint16(t.unk), true
}

// Mapped reports how many distinct characters of the text the tokenizer was
// built from map to <unk>, and how many times they occur in it. Both are zero
// when the tokenizer has no <unk> id.
func (t *CharTokenizer) Mapped() (distinct, occurrences int) {
	return t.mappedRunes, t.mappedCount
}

// Encode returns the ids of the characters of s. A character outside the
// vocabulary becomes the <unk> id; if the tokenizer has none, or s is not
// valid UTF-8, Encode returns an error naming the offending byte offset.
func (t *CharTokenizer) Encode(s string) ([]uint16, error) {
	return t.EncodeInto(make([]uint16, 0, utf8.RuneCountInString(s)), s)
}

// EncodeInto appends the ids of the characters of s to dst and returns the
// extended slice, as Encode does. On error it returns dst unchanged.
func (t *CharTokenizer) EncodeInto(dst []uint16, s string) ([]uint16, error) {
	n0 := len(dst)
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			id := t.ascii[c]
			if id < 0 {
				if t.unk < 0 {
					return dst[:n0], fmt.Errorf("encoding text: character %q at offset %d is not in the vocabulary", c, i)
				}
				id = int32(t.unk)
			}
			dst = append(dst, uint16(id))
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return dst[:n0], fmt.Errorf("encoding text: invalid UTF-8 byte %#02x at offset %d", s[i], i)
		}
		id, ok := t.other[r]
		if !ok {
			if t.unk < 0 {
				return dst[:n0], fmt.Errorf("encoding text: character %q (%U) at offset %d is not in the vocabulary", r, r, i)
			}
			id = uint16(t.unk)
		}
		dst = append(dst, id)
		i += size
	}
	return dst, nil
}

// Decode returns the text of ids. The <unk> id and ids outside the
// vocabulary decode to U+FFFD, the Unicode replacement character.
func (t *CharTokenizer) Decode(ids []uint16) string {
	var b strings.Builder
	b.Grow(len(ids))
	for _, id := range ids {
		if int(id) < len(t.runes) {
			b.WriteRune(t.runes[id])
		} else {
			b.WriteRune(utf8.RuneError)
		}
	}
	return b.String()
}

// invalidUTF8 returns the offset of the first byte of s that is not part of a
// valid UTF-8 encoding, or -1.
func invalidUTF8(s string) int {
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return -1
}
