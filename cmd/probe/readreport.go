package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	"memprobe/run/runner"
	"memprobe/schema"
)

// readReport reads a run report (probe run), or a job result (probe train
// --json, probe exec --json) as a report of one run of one repetition
// (runner.FromResults), so that probe report, diff, export and history
// read both. The file's "schema" field decides which reader reads it
// (schema.DecodeFile), and so whose error a bad file gets; both word a
// value that does not fit the format in JSON's words (package schema).
func readReport(path string) (*schema.Report, error) {
	f, err := openFile(path)
	if err != nil {
		return nil, err
	}
	return asReport(f)
}

// openFile reads one file of any of the probe's kinds (schema.DecodeFile):
// a run report, a job result or decode records, for the commands that
// take each (export, history). JSON that is not an object or an array is
// refused naming what it is.
func openFile(path string) (schema.File, error) {
	b, err := schema.ReadFile(path)
	if err != nil {
		return schema.File{}, fmt.Errorf("reading report: %w", err)
	}
	if k := schema.JSONKind(b); k != "" && k != "an object" && k != "an array" {
		return schema.File{}, fmt.Errorf("reading report %s: %s, not a run report or job result", path, k)
	}
	if err := notOurs(path, b); err != nil {
		return schema.File{}, err
	}
	return schema.DecodeFile(b, path)
}

// notOurs refuses, by their content, the files a user may hand the probe
// by mistake that its readers would word as a bad report: a pprof profile
// (probe exec --sites writes them beside the report; schema.ReadFile has
// undone the gzip) and a JSON array of something else (the decode reader
// would say "record 0: unsupported schema"). nil: none of them.
func notOurs(path string, b []byte) error {
	if isPprof(b) {
		return fmt.Errorf("reading report %s: a pprof profile, not a run report or job result: read it with probe flame %s, probe pprof %s or go tool pprof %s", path, path, path, path)
	}
	if !schema.IsJSONArray(b) {
		return nil
	}
	var elems []json.RawMessage
	if json.Unmarshal(b, &elems) != nil || len(elems) == 0 || schemaOf(elems[0]) != "" {
		return nil // the decode reader says what is wrong, or reads it
	}
	first := schema.JSONKind(elems[0])
	if first == "an object" {
		first = `an object with no "schema" field`
	}
	return fmt.Errorf("reading report %s: a JSON array of %d elements, the first %s: not a memprobe file (a run report or job result is an object; a decode result of probe decode an array of %q records)", path, len(elems), first, schema.DecodeVersion)
}

// isPprof reports whether b is a pprof profile (profile.proto), by its
// content: a protobuf message whose top-level fields are all well formed,
// with numbers of profile.proto's (1 to 16), and whose string table
// (field 6) begins with "", as the format requires.
func isPprof(b []byte) bool {
	emptyFirst, nstrings := false, 0
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			return false
		}
		b = b[n:]
		field, wire := key>>3, key&7
		if field < 1 || field > 16 {
			return false
		}
		switch wire {
		case 0: // varint
			if _, n = binary.Uvarint(b); n <= 0 {
				return false
			}
			b = b[n:]
		case 2: // length-delimited
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return false
			}
			if field == 6 {
				if nstrings == 0 {
					emptyFirst = l == 0
				}
				nstrings++
			}
			b = b[n+int(l):]
		default:
			return false
		}
	}
	return emptyFirst
}

// asReport is the report f holds: a run report as it is, a job result as
// a report of one run of one repetition. Decode records are refused: they
// have no run to report (probe report and diff read them apart).
func asReport(f schema.File) (*schema.Report, error) {
	switch {
	case f.Report != nil:
		return f.Report, nil
	case f.Result != nil:
		return runner.FromResults([]string{f.Path}, []*schema.Result{f.Result})
	}
	return nil, fmt.Errorf("reading report %s: %w: decode records of probe decode, not a run report or job result", f.Path, schema.ErrSchema)
}

// isDecodeResult reports whether b is `probe decode --json`'s output
// (schema.IsDecode: a JSON array, or an object whose "schema" names the
// decode format, whatever its version).
func isDecodeResult(b []byte) bool { return schema.IsDecode(b) }

// schemaOf is the "schema" field of a JSON object, "" when there is none
// (or b is not an object).
func schemaOf(b []byte) string {
	var head struct {
		Schema string `json:"schema"`
	}
	json.Unmarshal(b, &head)
	return head.Schema
}
