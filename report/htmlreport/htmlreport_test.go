package htmlreport

import (
	"bytes"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"memprobe/internal/golden"
	"memprobe/internal/table"
	"memprobe/report"
	"memprobe/schema"
)

// fixture is report/testdata/run-report.json (two plans, a threads sweep,
// failed and skipped runs) with what a page must handle added: sampler
// timelines for the threads plan's first and last phase, hostile strings
// in a description and a ledger component, and, when dir is not "",
// profiles: a real heap profile under dir/prof for threads-before, and
// paths out of dir (../../etc/passwd, /etc/passwd) for the next heaviest.
func fixture(t testing.TB, dir string) *schema.Report {
	t.Helper()
	rep, err := schema.ReadReport(filepath.Join("..", "testdata", "run-report.json"))
	if err != nil {
		t.Fatal(err)
	}
	timeline := func(peak uint64) []schema.SamplerPoint {
		var pts []schema.SamplerPoint
		for i := range 20 {
			rss := peak * uint64(min(i+2, 16)) / 16
			pts = append(pts, schema.SamplerPoint{TMs: float64(50 * i), Samples: 5, RSSBytes: rss, VSZBytes: 4 * rss})
		}
		return pts
	}
	for i := range rep.Runs {
		r := &rep.Runs[i]
		if r.Plan != "threads" || r.Sweep["threads"] != "7" {
			continue
		}
		switch r.Phase {
		case "before", "P6":
			for k := range r.Repetitions {
				r.Repetitions[k].Sampler = &schema.SamplerResult{Timeline: timeline(uint64(r.Repetitions[k].PeakRSSBytes))}
			}
		case "P1":
			r.Description = `<script>alert("description")</script>`
			if len(r.Repetitions[0].Ledger) > 0 {
				r.Repetitions[0].Ledger[0].Component = `<img src=x onerror=alert(1)>`
			}
		}
	}
	if dir == "" {
		return rep
	}
	if err := os.MkdirAll(filepath.Join(dir, "prof"), 0o755); err != nil {
		t.Fatal(err)
	}
	var heap bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&heap, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "prof", "threads-before-r1.heap.pprof"), heap.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	set := func(name, sweep string, files ...schema.ProfileFile) {
		for i := range rep.Runs {
			if r := &rep.Runs[i]; r.Name == name && r.Sweep["threads"] == sweep {
				r.Repetitions[repIndex(r)].Profiles = &schema.Profiles{Files: files}
			}
		}
	}
	set("threads-before", "7", schema.ProfileFile{Kind: "heap", Path: "prof/threads-before-r1.heap.pprof"},
		schema.ProfileFile{Kind: "cpu", Path: "prof/missing.cpu.pprof"})
	set("threads-P1", "7", schema.ProfileFile{Kind: "heap-peak", Path: "../../etc/passwd", HeapLiveBytes: 1 << 20})
	set("threads-before", "2", schema.ProfileFile{Kind: "heap", Path: "/etc/passwd"})
	return rep
}

func render(t testing.TB, rep *schema.Report, o Options) string {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, rep, o); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// unfoldedText is the text of the report's blocks as WriteRunTables
// writes them before it folds them to 120 columns (report's TestFold and
// TestTextFitsTerminal check that part).
func unfoldedText(t *testing.T, rep *schema.Report) *bytes.Buffer {
	t.Helper()
	rb, err := report.Blocks(report.ReportRows(rep))
	if err != nil {
		t.Fatal(err)
	}
	var txt bytes.Buffer
	for i, b := range rb {
		if i > 0 {
			txt.WriteString("\n")
		}
		if b.Table == nil {
			txt.WriteString(b.Paragraph + "\n")
		} else if err := b.Table.Render(&txt, table.Text); err != nil {
			t.Fatal(err)
		}
	}
	return &txt
}

// TestTablesAreReports: the page's paragraphs and tables are report's,
// block for block, in the order `probe report` prints them in text: the
// same titles, the same header, the same cells in every row, the same
// notes. A cell with what markdown or HTML would take as markup (a pipe,
// a backslash, emphasis, code, a script element) comes through intact and
// is escaped on the page.
func TestTablesAreReports(t *testing.T) {
	rep := fixture(t, "")
	const hostile = "a | b \\ *c* `d` <script>alert(2)</script>"
	var set bool
	for i := range rep.Runs {
		if r := &rep.Runs[i]; r.Phase != "before" && r.Description == "" {
			r.Description, set = hostile, true
			break
		}
	}
	if !set {
		t.Fatal("no run to describe")
	}
	txt := unfoldedText(t, rep)
	pg, err := Build(rep, Options{})
	if err != nil {
		t.Fatal(err)
	}
	blocks := pg.Head
	for _, p := range pg.Plans {
		blocks = append(blocks, p.Blocks...)
	}
	texts := strings.Split(strings.TrimSuffix(txt.String(), "\n"), "\n\n")
	if len(blocks) != len(texts) {
		t.Fatalf("the page has %d blocks, the text %d", len(blocks), len(texts))
	}
	var tables, found int
	for k, b := range blocks {
		if b.Table == nil {
			if b.Paragraph != texts[k] {
				t.Errorf("block %d: paragraph %q, text %q", k+1, b.Paragraph, texts[k])
			}
			continue
		}
		tables++
		tb := b.Table
		lines := strings.Split(texts[k], "\n")
		// A long text wraps in text onto more lines (the phase
		// table's change and claim): each row is its first line, the
		// wrapped cells their first part there.
		lines, rows, err := unwrapRows(lines, tb)
		if err != nil {
			t.Errorf("table %q: %v", tb.Title, err)
			continue
		}
		if n := 2 + len(tb.Rows) + len(tb.Notes); len(lines) != n || tb.Title == "" {
			t.Errorf("table %q: %d lines of text, want a title, a header, %d rows and %d notes", tb.Title, len(lines), len(tb.Rows), len(tb.Notes))
			continue
		}
		if len(tb.Rows) == 0 || len(tb.Header) == 0 {
			t.Errorf("table %q: no rows or no header", tb.Title)
		}
		if lines[0] != tb.Title {
			t.Errorf("title %q, text %q", tb.Title, lines[0])
		}
		for i, row := range append([][]Cell{tb.Header}, rows...) {
			if len(row) != len(tb.Header) {
				t.Errorf("table %q: row %d has %d cells, the header %d", tb.Title, i, len(row), len(tb.Header))
			}
			if l := lines[1+i]; !textRow(row).MatchString(l) {
				t.Errorf("table %q: line %d %q does not hold the cells %v", tb.Title, i+2, l, row)
			}
		}
		for _, row := range tb.Rows {
			for _, c := range row {
				if c.Text == hostile {
					found++
				}
			}
		}
		for i, n := range tb.Notes {
			if l := lines[2+len(tb.Rows)+i]; l != n {
				t.Errorf("table %q: note %q, text %q", tb.Title, n, l)
			}
		}
	}
	if tables == 0 {
		t.Error("no tables")
	}
	if found == 0 {
		t.Errorf("no cell holds %q", hostile)
	}
	var esc bytes.Buffer
	if err := template.Must(template.New("").Parse("{{.}}")).Execute(&esc, hostile); err != nil {
		t.Fatal(err)
	}
	page := render(t, rep, Options{})
	if !strings.Contains(page, ">"+esc.String()+"</td>") {
		t.Errorf("the page lacks the cell %s", esc.String())
	}
	if strings.Contains(page, "<script>alert(2)") {
		t.Error("the hostile cell is markup on the page")
	}
}

// unwrapRows joins the lines of text table tb (its title, header, rows
// and notes) that continue a row's wrapped cells into the row's first
// line, and returns the lines left and tb's rows with each wrapped cell
// cut to the part on its first line. A continued cell must be
// left-aligned, and so must the cell after it (its header's place is where
// the wrapped cell ends); the parts must make up the page's cell, word for
// word.
func unwrapRows(lines []string, tb *Table) ([]string, [][]Cell, error) {
	if len(lines) < 2 {
		return lines, tb.Rows, nil
	}
	head := []rune(lines[1])
	starts := make([]int, len(tb.Header))
	pos := 0
	for i, h := range tb.Header {
		k := strings.Index(string(head[pos:]), h.Text)
		if k < 0 {
			return nil, nil, fmt.Errorf("header %q lacks %q", lines[1], h.Text)
		}
		starts[i] = pos + utf8.RuneCountInString(string(head[pos:])[:k])
		pos = starts[i] + utf8.RuneCountInString(h.Text)
	}
	out := slices.Clone(lines[:2])
	var rows [][]Cell
	extra := map[int][]string{}
	flush := func() error {
		if len(rows) == 0 {
			return nil
		}
		row := rows[len(rows)-1]
		for i, parts := range extra {
			rest := strings.Join(parts, " ")
			first, ok := strings.CutSuffix(row[i].Text, " "+rest)
			if !ok {
				return fmt.Errorf("row %d: cell %q does not end in its wrapped lines %q", len(rows), row[i].Text, rest)
			}
			row[i].Text = first
		}
		clear(extra)
		return nil
	}
	notes := false
	for _, l := range lines[2:] {
		if notes || len(rows) == 0 || !strings.HasPrefix(l, " ") {
			if err := flush(); err != nil {
				return nil, nil, err
			}
			out = append(out, l)
			if len(rows) < len(tb.Rows) {
				rows = append(rows, slices.Clone(tb.Rows[len(rows)]))
			} else {
				notes = true
			}
			continue
		}
		r := []rune(l)
		seen := 0
		for i := range starts {
			if i+1 >= len(starts) || tb.Header[i].Right || tb.Header[i+1].Right {
				continue
			}
			lo, hi := min(starts[i], len(r)), min(starts[i+1], len(r))
			if piece := strings.TrimSpace(string(r[lo:hi])); piece != "" {
				extra[i] = append(extra[i], piece)
				seen += len(strings.Fields(piece))
			}
		}
		if seen != len(strings.Fields(l)) {
			return nil, nil, fmt.Errorf("line %q continues a row outside its left-aligned text cells", l)
		}
	}
	if err := flush(); err != nil {
		return nil, nil, err
	}
	return out, rows, nil
}

// textRow matches a line of a text table that holds the cells in order,
// separated by spaces (an empty cell is only spaces).
func textRow(row []Cell) *regexp.Regexp {
	var parts []string
	for _, c := range row {
		if c.Text != "" {
			parts = append(parts, regexp.QuoteMeta(c.Text))
		}
	}
	return regexp.MustCompile(`^ *` + strings.Join(parts, ` +`) + ` *$`)
}

// TestEscaping: strings from a report are text on the page, never markup.
func TestEscaping(t *testing.T) {
	page := render(t, fixture(t, ""), Options{})
	for _, bad := range []string{`<script>alert("description")`, `<img src=x onerror`} {
		if strings.Contains(page, bad) {
			t.Errorf("the page contains %q unescaped", bad)
		}
	}
	if !strings.Contains(page, `&lt;script&gt;alert(&#34;description&#34;)&lt;/script&gt;`) {
		t.Error("the hostile description is not on the page as text")
	}
	if strings.Contains(page, "<script") {
		t.Error("the page has a script element of its own")
	}
	for _, ext := range []string{"http://", "https://", "@import", "url("} {
		if strings.Contains(page, ext) && !strings.Contains(page, `xmlns="http://www.w3.org/2000/svg"`) {
			t.Errorf("the page refers to %q", ext)
		}
	}
	// No external reference: every src or href is a fragment or relative.
	for _, m := range regexp.MustCompile(`(?:src|href)="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		if strings.Contains(m[1], "//") {
			t.Errorf("external reference %q", m[1])
		}
	}
}

// TestProfilesStayInside: the heaviest phases' flame graphs are drawn from
// profiles under the report's directory only; ../../etc/passwd and
// /etc/passwd are notes, never read, never linked.
func TestProfilesStayInside(t *testing.T) {
	dir := t.TempDir()
	rep := fixture(t, dir)
	out := filepath.Join(dir, "html")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	pg, err := Build(rep, Options{ReportDir: dir, OutDir: out})
	if err != nil {
		t.Fatal(err)
	}
	if len(pg.Flames) != 1 || pg.Flames[0].Run != "threads-before" || pg.Flames[0].Kind != "heap" {
		t.Fatalf("flames %+v, want threads-before's heap profile", pg.Flames)
	}
	if got := pg.Flames[0].Href; got != "../prof/threads-before-r1.heap.pprof" {
		t.Errorf("flame link %q", got)
	}
	if !strings.Contains(pg.Flames[0].Doc, "inuse_space flame graph") {
		t.Error("the flame graph is not drawn from inuse_space")
	}
	notes := strings.Join(pg.FlameNotes, "\n")
	for _, want := range []string{"threads-P1: no flame graph: profile ../../etc/passwd: outside the report's directory",
		"threads-before: no flame graph: profile /etc/passwd: outside the report's directory"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	page := render(t, rep, Options{ReportDir: dir, OutDir: out})
	if strings.Contains(page, "root:") {
		t.Error("the page holds /etc/passwd's contents")
	}
	for _, bad := range []string{`href="../../etc/passwd"`, `href="/etc/passwd"`, `href="../../../etc/passwd"`} {
		if strings.Contains(page, bad) {
			t.Errorf("the page links %s", bad)
		}
	}
	if n := strings.Count(page, "outside the report&#39;s directory: not linked"); n != 2 {
		t.Errorf("%d profiles marked not linked, want 2", n)
	}
	if n := strings.Count(page, "<iframe"); n != 1 {
		t.Errorf("%d flame iframes, want 1", n)
	}
}

// skeleton is the page with what varies by machine left out: the charts'
// SVG (float coordinates) and the flame graphs' documents.
func skeleton(page string) string {
	page = regexp.MustCompile(`(?s)<svg .*?</svg>`).ReplaceAllString(page, "<svg>…</svg>")
	page = regexp.MustCompile(`srcdoc="[^"]*"`).ReplaceAllString(page, `srcdoc="…"`)
	return regexp.MustCompile(`height="\d+"`).ReplaceAllString(page, `height="…"`)
}

// TestGolden: the page's structure (tables, charts, notes, environment),
// without the charts' drawing.
func TestGolden(t *testing.T) {
	page := render(t, fixture(t, ""), Options{Title: "probe report run-report.json"})
	golden.Check(t, "run-report.html.golden", []byte(skeleton(page)))
	for _, kind := range []string{"timeline", "ledger", "reconcile", "sweep"} {
		if !strings.Contains(page, `data-kind="`+kind+`"`) {
			t.Errorf("no %s chart", kind)
		}
	}
}
