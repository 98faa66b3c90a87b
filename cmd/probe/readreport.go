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
// so whose error a bad file gets.
func readReport(path string) (*schema.Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading report: %w", err)
	}
	var head struct {
		Schema string `json:"schema"`
	}
	resultID, _, _ := strings.Cut(schema.ResultVersion, "/")
	if json.Unmarshal(b, &head) != nil || !strings.HasPrefix(head.Schema, resultID+"/") {
		return schema.DecodeReport(b, path)
	}
	r, err := schema.DecodeResult(b, path)
	if err != nil {
		return nil, err
	}
	return runner.FromResults([]string{path}, []*schema.Result{r})
}
