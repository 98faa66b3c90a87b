package data

import (
	"fmt"
	"slices"
	"strconv"
)

// Origin says where a dataset's tokens came from and what its ids stand
// for: enough for a checkpoint to record its training data and to tell,
// when it is resumed or decoded with another dataset, whether that
// dataset's ids mean the same things. A model's embedding rows are learnt
// per id; resumed on a file whose characters map to other ids, training
// goes on in a language the model never saw, and every generated text
// comes out garbled, with nothing failing.
type Origin struct {
	// Source is the spec ("synthetic:24MB") or the file's path as given.
	Source string `json:"source"`
	// Kind is "synthetic" or "chars" (a file's character tokenizer).
	Kind string `json:"kind"`
	// Vocab is the number of ids the data uses.
	Vocab int `json:"vocab"`
	// Seed is the synthetic generator's seed: with Vocab it fixes the
	// synthetic language (its successor table and phrase bank).
	Seed uint64 `json:"seed,omitempty"`
	// Chars is the character of each id in order (a chars origin), the
	// <unk> id's included as U+FFFD; Unk is that id, absent when every
	// character of the file had its own.
	Chars string `json:"chars,omitempty"`
	Unk   *int   `json:"unk,omitempty"`
}

// Origin describes the dataset's source and ids.
func (d *Dataset) Origin() Origin {
	if d.Tokenizer == nil {
		return Origin{Source: d.Source, Kind: "synthetic", Vocab: d.Vocab, Seed: d.Seed}
	}
	o := Origin{Source: d.Source, Kind: "chars", Vocab: d.Tokenizer.Size(), Chars: string(d.Tokenizer.Chars())}
	if id, ok := d.Tokenizer.Unk(); ok {
		unk := int(id)
		o.Unk = &unk
	}
	return o
}

// Validate checks an origin read from a file: a known kind, and for
// chars as many characters as ids.
func (o Origin) Validate() error {
	switch o.Kind {
	case "synthetic":
		if o.Chars != "" || o.Unk != nil {
			return fmt.Errorf("synthetic data with a character table")
		}
	case "chars":
		if n := len([]rune(o.Chars)); n != o.Vocab {
			return fmt.Errorf("%d characters for %d ids", n, o.Vocab)
		}
		if o.Unk != nil && (*o.Unk < 0 || *o.Unk >= o.Vocab) {
			return fmt.Errorf("<unk> id %d outside [0, %d)", *o.Unk, o.Vocab)
		}
	default:
		return fmt.Errorf("unknown data kind %q (want synthetic or chars)", o.Kind)
	}
	if o.Vocab < 1 || o.Vocab > MaxVocab {
		return fmt.Errorf("vocabulary of %d outside [1, %d]", o.Vocab, MaxVocab)
	}
	return nil
}

// SameIDs returns nil when ids mean the same in o and other (the same
// synthetic language, or the same characters at the same ids), else an
// error saying how they differ, naming both sources. Two sources that
// agree on their ids may still differ (another size of the same
// synthetic language, another text in the same characters): compare
// Source for that.
func (o Origin) SameIDs(other Origin) error {
	if o.Kind != other.Kind {
		return fmt.Errorf("%s is %s, %s is %s: their ids mean different things", o.Source, o.describe(), other.Source, other.describe())
	}
	switch o.Kind {
	case "synthetic":
		if o.Seed != other.Seed || o.Vocab != other.Vocab {
			return fmt.Errorf("%s is %s, %s is %s: another synthetic language (its successors and phrases come from the seed and vocabulary)",
				o.Source, o.describe(), other.Source, other.describe())
		}
	case "chars":
		a, b := []rune(o.Chars), []rune(other.Chars)
		if slices.Equal(a, b) && unkID(o) == unkID(other) {
			return nil
		}
		differ, first := 0, -1
		for id := range max(len(a), len(b)) {
			if id >= len(a) || id >= len(b) || a[id] != b[id] {
				differ++
				if first < 0 {
					first = id
				}
			}
		}
		if differ == 0 { // same characters, <unk> elsewhere
			return fmt.Errorf("%s maps unknown characters to <unk> id %s, %s to %s", o.Source, unkName(o), other.Source, unkName(other))
		}
		return fmt.Errorf("%s and %s map characters to ids differently: %d of %d ids differ; id %d is %s in %s, %s in %s",
			o.Source, other.Source, differ, max(len(a), len(b)), first, charAt(a, first, o), o.Source, charAt(b, first, other), other.Source)
	}
	return nil
}

func (o Origin) describe() string {
	if o.Kind == "synthetic" {
		return fmt.Sprintf("synthetic (vocabulary %d, seed %d)", o.Vocab, o.Seed)
	}
	return fmt.Sprintf("a text of %d characters", o.Vocab)
}

func unkID(o Origin) int {
	if o.Unk == nil {
		return -1
	}
	return *o.Unk
}

func unkName(o Origin) string {
	if o.Unk == nil {
		return "none"
	}
	return strconv.Itoa(*o.Unk)
}

// charAt names the character of id in chars, quoted, "<unk>" for the
// unknown id and "none" past the end.
func charAt(chars []rune, id int, o Origin) string {
	switch {
	case id >= len(chars):
		return "none"
	case id == unkID(o):
		return "<unk>"
	}
	return strconv.QuoteRune(chars[id])
}
