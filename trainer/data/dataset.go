package data

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Errors a file dataset can wrap; test with errors.Is.
var (
	ErrEmptyFile = errors.New("file is empty")
	ErrNotText   = errors.New("not a text file")
)

// maxSyntheticTokens bounds a synthetic corpus (4 GiB of token array) so a
// mistyped size fails with an error rather than an out-of-memory crash.
const maxSyntheticTokens = 1 << 31

// Dataset is a corpus ready for training: one token array and the size of
// the vocabulary its ids are drawn from.
type Dataset struct {
	Tokens []uint16 // (N) token ids, each < Vocab
	// Vocab is the number of ids: the tokenizer's size for a file, the
	// vocabCap argument for a synthetic corpus. The model's vocabulary must be
	// at least this large.
	Vocab     int
	Source    string         // the spec, e.g. "synthetic:24MB", or the file path
	Tokenizer *CharTokenizer // nil for a synthetic corpus
	// Seed is the synthetic generator's seed, which with Vocab fixes its
	// language (Synthetic); 0 for a file.
	Seed uint64
	// Warnings are one-line notes to print beside results (for example,
	// characters mapped to <unk>); nil when there are none.
	Warnings []string
}

// Bytes is the memory the token array holds: 2 bytes per token.
func (d *Dataset) Bytes() int64 { return 2 * int64(len(d.Tokens)) }

// Load reads a dataset spec: "synthetic:SIZE" (SIZE as for ParseSize) for
// SIZE/BytesPerToken tokens of Synthetic(n, vocabCap, seed), or the path of
// a UTF-8 text file, tokenized by NewCharTokenizer(text, vocabCap). The
// file must be a regular one (ReadRegularFile): a pipe, a device or a
// directory is refused before anything is read. vocabCap
// must be in [2, MaxVocab]; seed matters only for a synthetic corpus.
//
// A file with more distinct characters than vocabCap is not an error: its
// rarest characters map to <unk>, and a warning in Dataset.Warnings says how
// many. Errors are one line naming the spec or file and what is wrong.
func Load(spec string, vocabCap int, seed uint64) (*Dataset, error) {
	if vocabCap < 2 || vocabCap > MaxVocab {
		return nil, fmt.Errorf("loading dataset %q: vocabulary cap %d outside [2, %d] (token ids are uint16)", spec, vocabCap, MaxVocab)
	}
	if size, ok := strings.CutPrefix(spec, "synthetic:"); ok {
		return loadSynthetic(spec, size, vocabCap, seed)
	}
	if spec == "" {
		return nil, fmt.Errorf("loading dataset: empty spec (want synthetic:SIZE or a file path)")
	}
	if kind, _, ok := strings.Cut(spec, ":"); ok && isKindName(kind) {
		if _, err := os.Stat(spec); err != nil {
			return nil, fmt.Errorf("loading dataset %q: unknown kind %q (want synthetic:SIZE or a file path)", spec, kind)
		}
	}
	return loadFile(spec, vocabCap)
}

// isKindName reports whether s looks like a spec kind ("synthetic", "hf")
// rather than part of a path: two or more ASCII letters.
func isKindName(s string) bool {
	if len(s) < 2 {
		return false // "C:" is a drive, not a kind
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// CheckSpec checks a dataset spec's syntax without loading it: a
// synthetic:SIZE spec must parse and fit vocab (the checks Load makes
// first), and a spec is either that or a path (not an unknown kind:).
// It lets a command refuse a malformed spec before any work starts; a
// file's existence and contents are Load's to check (a runtime error).
func CheckSpec(spec string, vocab int) error {
	if size, ok := strings.CutPrefix(spec, "synthetic:"); ok {
		_, err := syntheticTokens(spec, size, vocab)
		return err
	}
	if spec == "" {
		return fmt.Errorf("dataset: empty spec (want synthetic:SIZE or a file path)")
	}
	if isKindPrefixed(spec) {
		if _, err := os.Stat(spec); err != nil {
			kind, _, _ := strings.Cut(spec, ":")
			return fmt.Errorf("dataset %q: unknown kind %q (want synthetic:SIZE or a file path)", spec, kind)
		}
	}
	return nil
}

// SpecFile is the file a dataset spec reads, "" for a synthetic corpus
// (or an empty spec): what a command must not write over.
func SpecFile(spec string) string {
	if spec == "" || strings.HasPrefix(spec, "synthetic:") {
		return ""
	}
	return spec
}

func isKindPrefixed(spec string) bool {
	kind, _, ok := strings.Cut(spec, ":")
	return ok && isKindName(kind)
}

// syntheticTokens is the token count of a synthetic:SIZE spec, checked.
func syntheticTokens(spec, size string, vocab int) (int64, error) {
	nBytes, err := ParseSize(size)
	if err != nil {
		return 0, fmt.Errorf("loading dataset %q: %w", spec, err)
	}
	n := nBytes / BytesPerToken
	if n < int64(vocab) {
		return 0, fmt.Errorf("loading dataset %q: %d tokens (%d bytes / %d) is fewer than the vocabulary of %d; every id must appear", spec, n, nBytes, BytesPerToken, vocab)
	}
	if n > maxSyntheticTokens {
		return 0, fmt.Errorf("loading dataset %q: %d tokens is more than the limit of %d", spec, n, maxSyntheticTokens)
	}
	return n, nil
}

func loadSynthetic(spec, size string, vocab int, seed uint64) (*Dataset, error) {
	n, err := syntheticTokens(spec, size, vocab)
	if err != nil {
		return nil, err
	}
	return &Dataset{
		Tokens: Synthetic(int(n), vocab, seed),
		Vocab:  vocab,
		Source: spec,
		Seed:   seed,
	}, nil
}

func loadFile(path string, vocabCap int) (*Dataset, error) {
	// Only a regular file, read by its size: a pipe could block for ever
	// and /dev/zero never ends.
	raw, err := ReadRegularFile(path, maxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("loading dataset file %q: %w", path, err)
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("loading dataset file %q: %w", path, ErrEmptyFile)
	}
	if off := bytes.IndexByte(raw, 0); off >= 0 {
		return nil, fmt.Errorf("loading dataset file %q: %w: NUL byte at offset %d", path, ErrNotText, off)
	}
	text := string(raw)
	if off := invalidUTF8(text); off >= 0 {
		return nil, fmt.Errorf("loading dataset file %q: %w: invalid UTF-8 byte %#02x at offset %d", path, ErrNotText, text[off], off)
	}
	tok, err := NewCharTokenizer(text, vocabCap)
	if err != nil {
		return nil, fmt.Errorf("loading dataset file %q: %w", path, err)
	}
	ids, err := tok.Encode(text)
	if err != nil {
		return nil, fmt.Errorf("loading dataset file %q: %w", path, err)
	}
	d := &Dataset{Tokens: ids, Vocab: tok.Size(), Source: path, Tokenizer: tok}
	if distinct, occ := tok.Mapped(); distinct > 0 {
		unk, _ := tok.Unk()
		d.Warnings = append(d.Warnings, fmt.Sprintf(
			"dataset file %q: %d distinct characters exceed the vocabulary cap of %d; the %d rarest (%d of %d characters, %.2f%%) map to <unk> id %d",
			path, distinct+vocabCap-1, vocabCap, distinct, occ, len(ids), 100*float64(occ)/float64(len(ids)), unk))
	}
	return d, nil
}
