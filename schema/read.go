package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"
)

// ErrSchema is wrapped by errors about a file of another format or
// version: the file may be fine, this build does not read it.
var ErrSchema = errors.New("unsupported schema")

// ReadResult reads one job result from path.
func ReadResult(path string) (*Result, error) {
	b, err := ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading result: %w", err)
	}
	return DecodeResult(b, path)
}

// DecodeResult parses a job result of ResultVersion; name is used in
// errors. It refuses another format or version (wrapping ErrSchema), JSON
// that does not fit the format ("line N: ..."), and a result no job can
// have produced (no steps, no parameters, no configuration or
// environment, a start time that is not RFC 3339).
func DecodeResult(b []byte, name string) (*Result, error) {
	if err := checkSchema(b, "result", name, ResultVersion); err != nil {
		return nil, err
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("reading result %s: %s", name, jsonError(b, err))
	}
	if err := r.check(); err != nil {
		return nil, fmt.Errorf("reading result %s: %v", name, err)
	}
	return &r, nil
}

// check says what makes r implausible, or nil.
func (r *Result) check() error {
	if r.Kind == KindProcess {
		return r.checkProcess()
	}
	switch {
	case r.Steps < 1 || r.Params < 1:
		return fmt.Errorf("implausible result: %d steps, %d parameters", r.Steps, r.Params)
	case r.Config.Threads < 1 || r.Config.Steps < 1:
		return fmt.Errorf("implausible result: config has %d threads, %d steps (no configuration?)", r.Config.Threads, r.Config.Steps)
	case r.Environment.GoVersion == "":
		return errors.New("implausible result: environment has no go_version (no environment?)")
	}
	if _, err := time.Parse(time.RFC3339, r.StartTime); err != nil {
		return fmt.Errorf("implausible result: start_time %q is not RFC 3339", r.StartTime)
	}
	return nil
}

// checkProcess says what makes a process result (probe exec, probe
// attach) implausible, or nil: it has no training steps or configuration,
// but a process view, an environment and a start time.
func (r *Result) checkProcess() error {
	switch {
	case r.Process == nil:
		return errors.New("implausible result: kind \"process\" without a \"process\" view")
	case r.Process.PID < 1:
		return fmt.Errorf("implausible result: process pid %d", r.Process.PID)
	case r.Environment.GoVersion == "":
		return errors.New("implausible result: environment has no go_version (no environment?)")
	}
	if _, err := time.Parse(time.RFC3339, r.StartTime); err != nil {
		return fmt.Errorf("implausible result: start_time %q is not RFC 3339", r.StartTime)
	}
	return nil
}

// ReadReport reads a run report from path.
func ReadReport(path string) (*Report, error) {
	b, err := ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading report: %w", err)
	}
	return DecodeReport(b, path)
}

// DecodeReport parses a run report of ReportVersion; name is used in
// errors. It refuses another format or version, a repetition whose result
// is of another version (both wrapping ErrSchema), and a run whose status
// is unknown or whose results are implausible.
func DecodeReport(b []byte, name string) (*Report, error) {
	if err := checkSchema(b, "report", name, ReportVersion); err != nil {
		return nil, err
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("reading report %s: %s", name, jsonError(b, err))
	}
	for _, t := range []struct{ field, v string }{{"start_time", rep.StartTime}, {"end_time", rep.EndTime}} {
		if _, err := time.Parse(time.RFC3339, t.v); err != nil {
			return nil, fmt.Errorf("reading report %s: implausible report: %s %q is not RFC 3339", name, t.field, t.v)
		}
	}
	for i := range rep.Runs {
		run := &rep.Runs[i]
		where := fmt.Sprintf("reading report %s: run %d (%s)", name, i, run.Name)
		if !run.Status.Valid() {
			return nil, fmt.Errorf("%s: unknown status %q (want ok, failed, timeout, killed or skipped)", where, run.Status)
		}
		if run.Status == StatusOK && len(run.Repetitions) == 0 {
			return nil, fmt.Errorf("%s: status ok with no repetitions", where)
		}
		for j := range run.Repetitions {
			r := &run.Repetitions[j]
			if r.Schema != ResultVersion {
				return nil, fmt.Errorf("%s, repetition %d: %w: schema %q, this build reads %q", where, j, ErrSchema, r.Schema, ResultVersion)
			}
			if err := r.check(); err != nil {
				return nil, fmt.Errorf("%s, repetition %d: %v", where, j, err)
			}
		}
	}
	return &rep, nil
}

// checkSchema reads b's "schema" field and refuses anything but want; kind
// ("result", "report", "decode result") and name go into the error.
func checkSchema(b []byte, kind, name, want string) error {
	var head struct {
		Schema *string `json:"schema"`
	}
	if IsJSONArray(b) {
		return fmt.Errorf("reading %s %s: %w: a JSON array, not a memprobe %s (probe decode --decode all writes an array of decode results)", kind, name, ErrSchema, kind)
	}
	if k := JSONKind(b); k != "" && k != "an object" {
		return fmt.Errorf("reading %s %s: %s, not a memprobe %s", kind, name, k, kind)
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return fmt.Errorf("reading %s %s: %s", kind, name, jsonError(b, err))
	}
	switch {
	case head.Schema == nil:
		return fmt.Errorf("reading %s %s: %w: no \"schema\" field (not a memprobe %s, or one from before schemas)", kind, name, ErrSchema, kind)
	case *head.Schema != want:
		hint := ""
		if id, _, _ := strings.Cut(*head.Schema, "/"); id != schemaID(want) {
			hint = fmt.Sprintf(" (not a %s: %s)", kind, Describe(*head.Schema))
		}
		return fmt.Errorf("reading %s %s: %w: schema %q, this build reads %q%s", kind, name, ErrSchema, *head.Schema, want, hint)
	}
	return nil
}

// schemaID is the format's name without its version.
func schemaID(v string) string { id, _, _ := strings.Cut(v, "/"); return id }

// Describe names the format of a file whose "schema" field is v ("a run
// report of probe run"), for errors that say what a file is.
func Describe(v string) string {
	switch schemaID(v) {
	case "":
		return "not a memprobe file (no \"schema\")"
	case schemaID(ResultVersion):
		return "a job result of probe train or probe exec"
	case schemaID(ReportVersion):
		return "a run report of probe run"
	case schemaID(DecodeVersion):
		return "a decode result of probe decode"
	}
	return fmt.Sprintf("a file of an unknown format (schema %q)", v)
}

// jsonError says where in b a JSON error is, as "line N: what is wrong".
func jsonError(b []byte, err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("line %d: %v", lineOf(b, se.Offset), se)
	case errors.As(err, &te):
		return describeTypeError(b, te)
	}
	return err.Error()
}

func lineOf(b []byte, off int64) int {
	return 1 + bytes.Count(b[:min(max(int(off), 0), len(b))], []byte("\n"))
}

// describeTypeError words a JSON value of the wrong type for the user
// whose file it is, in JSON's words, not encoding/json's (which names Go
// types: "cannot unmarshal number into Go struct field Report.runs of type
// []schema.Run"): the line, the field's path and what was found where
// what was wanted, "line 3: field runs: a JSON number where an array is
// wanted".
func describeTypeError(b []byte, te *json.UnmarshalTypeError) string {
	s := fmt.Sprintf("line %d: ", lineOf(b, te.Offset))
	if te.Field != "" {
		s += "field " + te.Field + ": "
	}
	return s + jsonValue(te.Value) + " where " + jsonWant(te.Type) + " is wanted"
}

// jsonValue names the value a type error found: "a JSON number", or "the
// number 1.5" where an integer was wanted.
func jsonValue(v string) string {
	switch v {
	case "number", "string", "array", "object":
		return "a JSON " + v
	case "bool":
		return "JSON true or false"
	}
	if n, ok := strings.CutPrefix(v, "number "); ok {
		return "the number " + n
	}
	return "a JSON " + v
}

// jsonWant names in JSON's words what a Go type reads.
func jsonWant(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "another kind of value"
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "another kind of value"
}

// JSONKind names what b holds when it is JSON: "an object", "an array",
// "a JSON number", "a JSON string", "JSON true or false", "JSON null";
// "" when b is not JSON.
func JSONKind(b []byte) string {
	if !json.Valid(b) {
		return ""
	}
	b = bytes.TrimLeft(b, " \t\r\n")
	switch b[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a JSON string"
	case 't', 'f':
		return "JSON true or false"
	case 'n':
		return "JSON null"
	}
	return "a JSON number"
}

// Marshal is v as indented JSON with a final newline: how every memprobe
// file is written.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteResult writes r to path atomically (a temporary file, then a
// rename: a reader never sees half a result). It sets r.Schema when
// empty and refuses another version.
func WriteResult(path string, r *Result) error {
	if r.Schema == "" {
		r.Schema = ResultVersion
	}
	if r.Schema != ResultVersion {
		return fmt.Errorf("writing result %s: %w: schema %q, this build writes %q", path, ErrSchema, r.Schema, ResultVersion)
	}
	return writeJSON(path, r)
}

// WriteReport writes rep to path atomically. It sets rep.Schema when
// empty and refuses another version.
func WriteReport(path string, rep *Report) error {
	if rep.Schema == "" {
		rep.Schema = ReportVersion
	}
	if rep.Schema != ReportVersion {
		return fmt.Errorf("writing report %s: %w: schema %q, this build writes %q", path, ErrSchema, rep.Schema, ReportVersion)
	}
	return writeJSON(path, rep)
}

func writeJSON(path string, v any) error {
	b, err := Marshal(v)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return writeFile(path, b)
}
