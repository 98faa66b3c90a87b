package main

import (
	"bytes"
	"testing"

	"memprobe/internal/golden"
	"memprobe/internal/table"
)

// TestTableGolden: the bench-trainer table in each format, with and
// without a label; golden files are named after the options.
func TestTableGolden(t *testing.T) {
	files := []string{"testdata/t1.json", "testdata/t63.json"}
	for _, c := range []struct {
		name, label string
		format      table.Format
	}{
		{"table.text.golden", "", table.Text},
		{"table-label.markdown.golden", "main", table.Markdown},
		{"table.csv.golden", "", table.CSV},
	} {
		var b bytes.Buffer
		if err := run(&b, c.label, c.format, files); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, c.name, b.Bytes())
	}
	if err := run(new(bytes.Buffer), "", table.Text, nil); err == nil {
		t.Error("no files: no error")
	}
}
