package report

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"memprobe/internal/golden"
)

// TestUpdateDoc replaces the threads and arena sections of a document
// and keeps the rest, the embedding section included; a second update
// changes nothing.
func TestUpdateDoc(t *testing.T) {
	rep := readFixtureReport(t)
	doc, err := os.ReadFile("testdata/phases-doc.md")
	if err != nil {
		t.Fatal(err)
	}
	got, err := UpdateDoc(doc, rep)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "phases-doc.md.golden", got)
	again, err := UpdateDoc(got, rep)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, got) {
		t.Error("a second update changed the document")
	}
}

func TestUpdateDocErrors(t *testing.T) {
	rep := readFixtureReport(t)
	doc, err := os.ReadFile("testdata/phases-doc.md")
	if err != nil {
		t.Fatal(err)
	}
	valid := string(doc)
	open := strings.Replace(valid, BeginMarker("arena")+"\n"+EndMarker+"\n", "", 1) + BeginMarker("arena") + "\n"
	for _, c := range []struct{ name, doc, want string }{
		{"no arena marker", strings.Replace(valid, BeginMarker("arena"), "", 1),
			`plan arena: no marker "<!-- probe report: plan arena -->"`},
		{"arena not closed", strings.Replace(valid, BeginMarker("arena")+"\n"+EndMarker, BeginMarker("arena"), 1),
			`plan arena: marker "<!-- probe report: plan arena -->" on line 15 is not closed before line 21 opens another section`},
		{"arena open at the end", open,
			`plan arena: marker "<!-- probe report: plan arena -->" on line 25 has no "<!-- end probe report -->" after it`},
		{"threads twice", strings.Replace(valid, "Text after", BeginMarker("threads")+"\n"+EndMarker+"\nText after", 1),
			`plan threads: marker "<!-- probe report: plan threads -->" appears twice (lines 7 and 13)`},
	} {
		_, err := UpdateDoc([]byte(c.doc), rep)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}
