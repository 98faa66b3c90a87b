package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// File is one memprobe file as read: exactly one of Result, Report and
// Decode is set, as the file's content says.
type File struct {
	// Path is the file read (the name given to DecodeFile).
	Path string
	// Result is a job result (probe train --json, probe exec --json).
	Result *Result
	// Report is a run report (probe run).
	Report *Report
	// Decode are the records of probe decode --json: one, or the array
	// of --decode all. Never empty when set.
	Decode []DecodeRecord
}

// ErrNoFiles is returned by Open for a directory with no .json file.
var ErrNoFiles = errors.New("a directory with no .json file in it")

// Open reads path: a memprobe file, or a directory whose *.json files are
// read in name order, each by DecodeFile. It returns one File per file
// read. An unreadable file, or one its reader refuses, is the error (the
// first, naming it); a directory with no .json file is ErrNoFiles.
func Open(path string) ([]File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, unwrapPath(err))
	}
	paths := []string{path}
	if st.IsDir() {
		if paths, err = filepath.Glob(filepath.Join(path, "*.json")); err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		if len(paths) == 0 {
			return nil, fmt.Errorf("reading %s: %w", path, ErrNoFiles)
		}
		slices.Sort(paths)
	}
	files := make([]File, len(paths))
	for i, p := range paths {
		b, err := ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", p, unwrapPath(err))
		}
		if files[i], err = DecodeFile(b, p); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// DecodeFile reads b by the reader of what it holds; name is used in
// errors. A JSON array, or an object whose "schema" names the decode
// format (of any version), is decode records (DecodeDecode); an object
// that names the result format is a job result (DecodeResult); anything
// else is read as a run report (DecodeReport), whose reader says what is
// wrong with a file that is none of them. Each reader refuses a version
// this build does not read.
func DecodeFile(b []byte, name string) (File, error) {
	f := File{Path: name}
	var err error
	switch {
	case IsDecode(b):
		f.Decode, err = DecodeDecode(b, name)
	case isFormat(schemaField(b), ResultVersion):
		f.Result, err = DecodeResult(b, name)
	default:
		f.Report, err = DecodeReport(b, name)
	}
	if err != nil {
		return File{}, err
	}
	return f, nil
}

// IsDecode reports whether b is decode records by DecodeFile's rule: a
// JSON array (no other memprobe file is one), or an object whose "schema"
// names the decode format, whatever its version (DecodeDecode then says
// which version it reads).
func IsDecode(b []byte) bool {
	return IsJSONArray(b) || isFormat(schemaField(b), DecodeVersion)
}

// schemaField is the "schema" field of a JSON object, "" when there is
// none (or b is not an object, or the field not a string).
func schemaField(b []byte) string {
	var head struct {
		Schema string `json:"schema"`
	}
	if json.Unmarshal(b, &head) != nil {
		return ""
	}
	return head.Schema
}

// isFormat reports whether the "schema" field v names version's format,
// of any version.
func isFormat(v, version string) bool {
	return strings.HasPrefix(v, schemaID(version)+"/")
}

// unwrapPath drops the path an *fs.PathError repeats, for errors that
// name it already.
func unwrapPath(err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Err
	}
	return err
}
