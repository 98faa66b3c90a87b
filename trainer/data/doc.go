// Package data supplies the trainer's corpus as one flat array of uint16
// token ids.
//
// It is the first stage of the trainer's pipeline: Load turns a dataset spec
// into a Dataset; the trainer cuts (B, T+1) windows out of Dataset.Tokens and
// sizes its embedding table from Dataset.Vocab. A spec is one of:
//
//  1. "synthetic:SIZE" — a generated token stream standing in for a SIZE-byte
//     text (see BytesPerToken and Synthetic). No file is read, so a
//     measurement can pick any corpus size.
//  2. A file path — a UTF-8 text file tokenized one character per token by a
//     CharTokenizer.
//
// Token ids are uint16, so a vocabulary holds at most MaxVocab ids; a larger
// vocabulary is an error rather than a silent truncation.
package data
