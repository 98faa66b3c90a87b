// Package report reads what the probe measured and renders it for people.
//
// It is the last stage of the pipeline trainer → probe → report. Today it
// reads the result of one training job (`probe train --json`, a job.Result),
// refusing results of another schema version, and renders several results
// side by side as a before/after table. Cross-commit diffs with statistics,
// flame graphs, plots and HTML build on the same reader.
package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"memprobe/probe/job"
)

// ErrSchema is wrapped by errors about a result of another format or version.
var ErrSchema = errors.New("unsupported report schema")

// ReadResult reads one job result from path.
func ReadResult(path string) (*job.Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading report: %w", err)
	}
	return DecodeResult(b, path)
}

// DecodeResult parses a job result; name is used in errors.
func DecodeResult(b []byte, name string) (*job.Result, error) {
	var head struct {
		Schema *string `json:"schema"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("reading report %s: %s", name, jsonError(b, err))
	}
	switch {
	case head.Schema == nil:
		return nil, fmt.Errorf("reading report %s: %w: no \"schema\" field (not a memprobe result, or one from before schemas)", name, ErrSchema)
	case *head.Schema != job.SchemaVersion:
		return nil, fmt.Errorf("reading report %s: %w: schema %q, this build reads %q", name, ErrSchema, *head.Schema, job.SchemaVersion)
	}
	var r job.Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("reading report %s: %s", name, jsonError(b, err))
	}
	if r.Steps < 1 || r.Params < 1 {
		return nil, fmt.Errorf("reading report %s: implausible result: %d steps, %d parameters", name, r.Steps, r.Params)
	}
	return &r, nil
}

// jsonError says where in b a JSON error is, as "line N: what is wrong".
func jsonError(b []byte, err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	off := int64(-1)
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 {
		return err.Error()
	}
	line := 1 + bytes.Count(b[:min(int(off), len(b))], []byte("\n"))
	return fmt.Sprintf("line %d: %v", line, err)
}

// Name is how a result is labelled in tables: its plan-phase label, or
// "default".
func Name(r *job.Result) string {
	if r.Label != "" {
		return r.Label
	}
	return "default"
}

// WriteTable renders results side by side, one row each, in the order
// given: the first row is the reference the "x RSS" column divides by.
// Memory columns say which memory they are: RSS is resident, VSZ reserved
// address space, Go heap what the Go allocator handed out.
func WriteTable(w io.Writer, results []*job.Result) error {
	if len(results) == 0 {
		return errors.New("report: no results to render")
	}
	tw := newTable(w, "run", "threads", "tokens/s", "peak RSS MiB", "x RSS", "VSZ MiB", "floor MiB", "allocs/step", "loss first", "loss last")
	ref := float64(results[0].PeakRSSBytes)
	for _, r := range results {
		x := "-"
		if ref > 0 {
			x = fmt.Sprintf("%.2f", float64(r.PeakRSSBytes)/ref)
		}
		tw.row(Name(r), fmt.Sprint(r.Threads), fmt.Sprintf("%.0f", r.TokensPerSec),
			mib(r.PeakRSSBytes), x, mib(r.FinalVSZBytes), mib(uint64(r.FloorBytes)),
			fmt.Sprintf("%.1f", r.HeapAllocsPerStep), fmt.Sprintf("%.4f", r.LossFirst), fmt.Sprintf("%.4f", r.LossLast))
	}
	return tw.flush()
}

func mib(b uint64) string { return fmt.Sprintf("%.1f", float64(b)/(1<<20)) }
