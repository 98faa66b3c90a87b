package report

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"memprobe/internal/table"
)

// TestTextFitsTerminal: the text goldens of probe run's tables and of
// probe diff fit TextWidth columns.
func TestTextFitsTerminal(t *testing.T) {
	for _, f := range []string{"run-tables.text.golden", "diff-regressed.text.golden", "decodediff.text.golden"} {
		b, err := os.ReadFile("testdata/" + f)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(string(b), "\n") {
			if n := len([]rune(l)); n > TextWidth {
				t.Errorf("%s:%d: %d columns: %s", f, i+1, n, l)
			}
		}
	}
}

// TestFold: a table wider than the width folds into parts that each
// start with its first column, keep every other column once, in order,
// and put the notes after the last part; one that fits is left whole.
func TestFold(t *testing.T) {
	var cols []table.Column
	var row []any
	for i := 0; i < 12; i++ {
		cols = append(cols, table.Column{Name: strings.Repeat(string(rune('a'+i)), 12)})
		row = append(row, strings.Repeat("x", 10))
	}
	tb := table.New("wide", cols...)
	tb.Add(row...)
	tb.Note("a note")
	parts := fold(tb, 60)
	if len(parts) < 2 {
		t.Fatalf("%d parts", len(parts))
	}
	var seen []string
	for i, p := range parts {
		if p.Columns[0].Name != cols[0].Name {
			t.Errorf("part %d starts with %q", i, p.Columns[0].Name)
		}
		if w := textWidth(p); w > 60 {
			t.Errorf("part %d is %d wide", i, w)
		}
		if (len(p.Notes) > 0) != (i == len(parts)-1) {
			t.Errorf("part %d notes %q", i, p.Notes)
		}
		for _, c := range p.Columns[1:] {
			seen = append(seen, c.Name)
		}
	}
	if len(seen) != len(cols)-1 || seen[0] != cols[1].Name || seen[len(seen)-1] != cols[len(cols)-1].Name {
		t.Errorf("columns after the first: %q", seen)
	}
	if parts[0].Title != "wide" || parts[1].Title != "wide (continued)" {
		t.Errorf("titles %q, %q", parts[0].Title, parts[1].Title)
	}
	if whole := fold(tb, 1000); len(whole) != 1 || len(whole[0].Columns) != len(cols) || whole[0].Notes[0] != "a note" {
		t.Errorf("a table that fits was folded: %d parts", len(whole))
	}
	var md bytes.Buffer
	if err := writeBlocks(&md, fitBlocks([]Block{{Table: tb}}, table.Markdown, 60), table.Markdown); err != nil || strings.Count(md.String(), "\n|") < 2 || strings.Contains(md.String(), "continued") {
		t.Errorf("markdown is folded or fails (%v):\n%s", err, md.String())
	}
}

// TestWrapText: lines break at spaces before width, the next ones
// indented; a word longer than the width stays whole; "%" stays with its
// number.
func TestWrapText(t *testing.T) {
	got := wrapText("aaa bbb ccc ddd 1 % eeeeeeeeeeeeeeeeee", 9, "  ")
	want := "aaa bbb\n  ccc ddd\n  1 %\n  eeeeeeeeeeeeeeeeee"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if s := "short"; wrapText(s, 9, "  ") != s {
		t.Errorf("short text changed")
	}
}
