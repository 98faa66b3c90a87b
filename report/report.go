// Package report reads what the probe measured and renders it for people.
//
// It is the last stage of the results pipeline schema → metric → stats →
// report (docs/architecture.md): package schema reads the files, refusing
// another version; package metric names the figures in them; package
// stats summarises and compares them; report renders. An input is read
// as Rows: a run report's runs (ReportRows) or decode records
// (DecodeRows), two kinds of one row type whose figures are read through
// the registry, so that one Compare (probe diff, history), one Blocks
// (probe report, the HTML page) and one WriteBench (probe export) take
// either. It also renders the end-of-run summary of one job
// (WriteSummary), several results side by side (WriteTable), and a run
// report's before/after tables plan by plan, with each note's claim
// checked against the measurement (WriteRunTables), also as sections of
// docs/phases.md (UpdateDoc), and the instruments' data as text: the model
// against the ledger (LedgerTable), the resident set explained
// (ReconciliationTable), the allocations by site. Flame graphs, plots and
// HTML build on the same reader. It is the one home of rendering: it
// imports only the foundations (schema, metric, stats, ledger) and
// internal/, never an instrument, the outside tool, the runner or the
// trainer (internal/layers checks it).
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
