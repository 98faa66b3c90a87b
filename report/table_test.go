package report

import (
	"bytes"
	"testing"

	"memprobe/internal/golden"
	"memprobe/internal/table"
)

// TestTableFormats renders the before/after table in markdown and CSV
// (TestReadResults has the text); golden files are named after the format.
func TestTableFormats(t *testing.T) {
	before, err := ReadResult("testdata/threads-before.json")
	if err != nil {
		t.Fatal(err)
	}
	after, err := ReadResult("testdata/threads-P6.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []table.Format{table.Markdown, table.CSV} {
		var buf bytes.Buffer
		if err := WriteTable(&buf, pair(before, after), f); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, "threads-table."+string(f)+".golden", buf.Bytes())
	}
	if err := WriteTable(new(bytes.Buffer), pair(before, after)[:0], table.Text); err == nil {
		t.Error("no results: no error")
	}
}

func pair[T any](a, b T) []T { return []T{a, b} }
