package main

import (
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
	return schema.DecodeFile(b, path)
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
