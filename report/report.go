// Package report reads what the probe measured and renders it for people.
//
// It is the last stage of the pipeline trainer → probe → report. It reads
// job results (`probe train --json`, a [schema.Result]) and run reports
// (`probe run`, a [schema.Report]) through package schema, which refuses
// files of another schema version, and renders them: the end-of-run
// summary of one job (WriteSummary), several results side by side
// (WriteTable), and a run report's before/after tables plan by plan, with
// each note's claim checked against the measurement (WriteRunTables), also
// as sections of docs/phases.md (UpdateDoc). Cross-commit diffs with
// statistics, flame graphs, plots and HTML build on the same reader. It
// does not link the trainer: a test checks its dependencies.
package report

import (
	"memprobe/schema"
)

// ErrSchema is schema.ErrSchema: wrapped by errors about a result of
// another format or version.
var ErrSchema = schema.ErrSchema

// ReadResult reads one job result from path (schema.ReadResult).
func ReadResult(path string) (*schema.Result, error) { return schema.ReadResult(path) }

// DecodeResult parses a job result; name is used in errors
// (schema.DecodeResult).
func DecodeResult(b []byte, name string) (*schema.Result, error) {
	return schema.DecodeResult(b, name)
}

// Name is how a result is labelled in tables: its plan-phase label, or
// "default".
func Name(r *schema.Result) string {
	if r.Label != "" {
		return r.Label
	}
	return "default"
}
