package report

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"memprobe/internal/golden"
	"memprobe/schema"
)

func TestReadResults(t *testing.T) {
	before, err := ReadResult("testdata/threads-before.json")
	if err != nil {
		t.Fatal(err)
	}
	after, err := ReadResult("testdata/threads-P6.json")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, []*schema.Result{before, after}, "text"); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "threads-table.golden", buf.Bytes())
}

func TestReadErrors(t *testing.T) {
	valid, err := os.ReadFile("testdata/threads-P6.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, data, want string
		schema           bool
	}{
		{"other-version.json", strings.Replace(string(valid), schema.ResultVersion, "memprobe.train/v2", 1), `schema "memprobe.train/v2", this build reads "memprobe.train/v3"`, true},
		{"no-schema.json", `{"params": 3, "steps": 1}`, `no "schema" field`, true},
		{"truncated.json", string(valid[:len(valid)/2]), "unexpected end of JSON input", false},
		{"syntax.json", "{\n\"schema\": \"memprobe.train/v3\",\n\"steps\": 1,,\n}", "line 3: invalid character ','", false},
		{"type.json", "{\n\"schema\": \"memprobe.train/v3\",\n\"steps\": \"many\"\n}", "line 3: field steps: a JSON string where an integer is wanted", false},
		{"empty-run.json", `{"schema": "memprobe.train/v3", "steps": 0, "params": 10}`, "implausible result: 0 steps", false},
	} {
		_, err := DecodeResult([]byte(c.data), c.name)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.name) {
			t.Errorf("%s: got %v, want an error naming the file and containing %q", c.name, err, c.want)
		}
		if c.schema != errors.Is(err, ErrSchema) {
			t.Errorf("%s: errors.Is(err, ErrSchema) = %v, want %v", c.name, !c.schema, c.schema)
		}
	}
	if _, err := ReadResult("testdata/missing.json"); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("missing file: %v", err)
	}
}
