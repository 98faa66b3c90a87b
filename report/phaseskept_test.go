package report

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"memprobe/internal/golden"
	"memprobe/schema"
)

// phasesDoc is the document whose measured sections are generated;
// keptPhasesReport is the probe run report they were generated from, kept
// trimmed of what no table reads (timelines, step counters, mappings).
const (
	phasesDoc        = "../docs/phases.md"
	keptPhasesReport = "../testdata/phases/report.json.gz"
)

var (
	keepPhases   = flag.String("keep-phases", "", "trim this `probe run` report into "+keptPhasesReport+" (refused if the trimmed report renders docs/phases.md's sections differently)")
	updatePhases = flag.Bool("update-phases", false, "rewrite "+phasesDoc+"'s measured sections from "+keptPhasesReport)
)

// TestPhasesDocMatchesReport: every measured section of docs/phases.md is
// what the kept report renders, byte for byte, so a table edited by hand
// or left from an older run fails here. Regenerate: make probe; bin/probe
// report probe-<commit>.json --phases-md docs/phases.md; go test ./report
// -run TestPhasesDocMatchesReport -keep-phases ../probe-<commit>.json.
func TestPhasesDocMatchesReport(t *testing.T) {
	doc, err := os.ReadFile(phasesDoc)
	if err != nil {
		t.Fatal(err)
	}
	if *keepPhases != "" {
		keepTrimmed(t, *keepPhases, doc)
	}
	rep := readKeptReport(t, keptPhasesReport)
	got, err := UpdateDoc(doc, rep)
	if err != nil {
		t.Fatalf("%s from %s: %v", phasesDoc, keptPhasesReport, err)
	}
	if *updatePhases {
		if err := os.WriteFile(phasesDoc, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(got, doc) {
		t.Errorf("%s's measured sections are not what %s renders: %s (regenerate as this test's comment says)", phasesDoc, keptPhasesReport, golden.FirstDiff(doc, got))
	}
	// The document names the commit and the machine the report recorded.
	if c := rep.Environment.VCSRevision; len(c) >= 12 && !bytes.Contains(doc, []byte(c[:12])) {
		t.Errorf("%s does not name the kept report's commit %s", phasesDoc, c[:12])
	}
}

// TestPhasesDocCatchesAHandEdit: the check above fails on one figure
// changed by hand inside a measured section.
func TestPhasesDocCatchesAHandEdit(t *testing.T) {
	doc, err := os.ReadFile(phasesDoc)
	if err != nil {
		t.Fatal(err)
	}
	rep := readKeptReport(t, keptPhasesReport)
	begin := bytes.Index(doc, []byte(BeginMarker("threads")))
	i := begin + bytes.Index(doc[begin:], []byte(" MiB |"))
	if begin < 0 || i <= begin {
		t.Fatal("no figure in MiB in the threads section")
	}
	edited := slicesConcat(doc[:i-1], []byte("7"), doc[i:]) // the figure's last digit
	if bytes.Equal(edited, doc) {
		edited = slicesConcat(doc[:i-1], []byte("8"), doc[i:])
	}
	got, err := UpdateDoc(edited, rep)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(got, edited) {
		t.Error("a figure edited by hand in the threads section renders the same")
	}
}

func slicesConcat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func readKeptReport(t *testing.T, path string) *schema.Report {
	t.Helper()
	rep, err := schema.ReadReport(path) // gzip-compressed: schema.ReadFile
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// keepTrimmed writes the report at src, trimmed, to keptPhasesReport,
// after checking that the trimmed report renders doc as the whole does.
func keepTrimmed(t *testing.T, src string, doc []byte) {
	full, err := schema.ReadReport(src)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	trimmed, err := trimReport(raw)
	if err != nil {
		t.Fatalf("trimming %s: %v", src, err)
	}
	small, err := schema.DecodeReport(trimmed, src+" (trimmed)")
	if err != nil {
		t.Fatal(err)
	}
	want, err := UpdateDoc(doc, full)
	if err != nil {
		t.Fatal(err)
	}
	got, err := UpdateDoc(doc, small)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the trimmed report renders %s differently: %s", phasesDoc, golden.FirstDiff(got, want))
	}
	var buf bytes.Buffer
	z := gzip.NewWriter(&buf)
	z.Write(trimmed)
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(keptPhasesReport), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keptPhasesReport, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("kept %s: %d B of JSON (%d B before trimming), %d B compressed", keptPhasesReport, len(trimmed), len(raw), buf.Len())
}

// trimReport empties the parts of a report that no table reads and that
// make it large: the sampled timelines (the child's own and the parent's),
// the per-step counters, and the stacks and files the reconciliations list one by one.
// Everything else, the schema version included, is kept as it was.
func trimReport(raw []byte) ([]byte, error) {
	var rep map[string]any
	if err := json.Unmarshal(raw, &rep); err != nil {
		return nil, err
	}
	runs, _ := rep["runs"].([]any)
	for _, r := range runs {
		run, _ := r.(map[string]any)
		for _, o := range asList(run["outside"]) {
			emptyList(o, "timeline")
		}
		for _, x := range asList(run["repetitions"]) {
			if s, ok := x["sampler"].(map[string]any); ok {
				emptyList(s, "timeline")
			}
			if rt, ok := x["runtime"].(map[string]any); ok {
				emptyList(rt, "steps")
			}
			if rr, ok := x["rss_reconciliation"].(map[string]any); ok {
				for _, k := range []string{"at_peak", "end"} {
					if snap, ok := rr[k].(map[string]any); ok {
						for _, l := range []string{"thread_stacks", "pthread_stacks", "files"} {
							emptyList(snap, l)
						}
					}
				}
			}
		}
	}
	return json.MarshalIndent(rep, "", "  ")
}

func asList(v any) []map[string]any {
	var out []map[string]any
	l, _ := v.([]any)
	for _, e := range l {
		if m, ok := e.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// emptyList sets m[k] to [] where it is a list (never nil: the schema's
// slices are JSON arrays).
func emptyList(m map[string]any, k string) {
	if _, ok := m[k].([]any); ok {
		m[k] = []any{}
	}
}
