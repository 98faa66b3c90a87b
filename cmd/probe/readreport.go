package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"memprobe/probe/runner"
	"memprobe/schema"
)

// readReport reads a run report (probe run), or a job result (probe train
// --json, probe exec --json) as a report of one run of one repetition
// (runner.FromResults), so that probe report, diff, export and history
// read both. The file's "schema" field decides which reader reads it, and
// so whose error a bad file gets; both word a value that does not fit the
// format in JSON's words (package schema).
func readReport(path string) (*schema.Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading report: %w", err)
	}
	if k := schema.JSONKind(b); k != "" && k != "an object" && k != "an array" {
		return nil, fmt.Errorf("reading report %s: %s, not a run report or job result", path, k)
	}
	resultID, _, _ := strings.Cut(schema.ResultVersion, "/")
	if !strings.HasPrefix(schemaOf(b), resultID+"/") {
		return schema.DecodeReport(b, path)
	}
	r, err := schema.DecodeResult(b, path)
	if err != nil {
		return nil, err
	}
	return runner.FromResults([]string{path}, []*schema.Result{r})
}

// isDecodeResult reports whether b is `probe decode --json`'s output: a
// JSON array (of decode records; no other memprobe file is one), or an
// object whose "schema" names the decode format, whatever its version (the
// decode reader then says which version it reads).
func isDecodeResult(b []byte) bool {
	if schema.IsJSONArray(b) {
		return true
	}
	decodeID, _, _ := strings.Cut(schema.DecodeVersion, "/")
	return strings.HasPrefix(schemaOf(b), decodeID+"/")
}

// schemaOf is the "schema" field of a JSON object, "" when there is none
// (or b is not an object).
func schemaOf(b []byte) string {
	var head struct {
		Schema string `json:"schema"`
	}
	json.Unmarshal(b, &head)
	return head.Schema
}
