package table

import (
	"bytes"
	"encoding/csv"
	"math"
	"strings"
	"testing"
	"time"

	"memprobe/internal/golden"
)

// sample has a column of every kind, absent values (nil, a nil pointer,
// NaN), negative and large numbers, text the markdown must escape, a title
// and notes.
func sample() *Table {
	diff := 5.0
	var none *float64
	t := New("model vs ledger: tiny preset, 3 executors",
		Column{Name: "component"},
		Column{Name: "objects", Kind: Int},
		Column{Name: "peak RSS", Kind: Bytes},
		Column{Name: "diff", Kind: Percent, Decimals: 2},
		Column{Name: "loss", Kind: Float, Decimals: 4},
		Column{Name: "throughput", Kind: Rate, Unit: "tokens/s"},
		Column{Name: "note"},
	)
	t.Add("params", 154624, int64(618496), 0.0, 6.68091, 64210.4, "4 B × P")
	t.Add("grads", uint64(3), uint64(649420), &diff, float32(6.5), 1234567.0, "measured +5.0% | *not* the model")
	t.Add("tape", 0, 0, none, math.NaN(), nil, "")
	t.Add("negative", -1234567, int64(-8192), -0.001, -2.5, -1500.0, "<nil>")
	t.Add("total", 9926784, int64(150_000_000_000), "n/a")
	t.Note("unexplained: %s resident", FormatBytes(48<<20))
	t.Note("warning: a note")
	return t
}

// TestRenderGolden renders the sample in every format; the golden files
// are named after the format.
func TestRenderGolden(t *testing.T) {
	for _, f := range Formats() {
		var b bytes.Buffer
		if err := sample().Render(&b, f); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, "sample."+string(f)+".golden", b.Bytes())
		if f == Text {
			for i, l := range strings.Split(b.String(), "\n") {
				if strings.HasSuffix(l, " ") {
					t.Errorf("text line %d has trailing spaces: %q", i+1, l)
				}
			}
		}
	}
}

// TestCSVExact: CSV is a header and the rows, bytes exact, no digit groups.
func TestCSVExact(t *testing.T) {
	var b bytes.Buffer
	if err := sample().Render(&b, CSV); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1+len(sample().Rows) {
		t.Fatalf("%d records, want header + %d rows", len(recs), len(sample().Rows))
	}
	if got := recs[0][2]; got != "peak RSS (B)" {
		t.Errorf("bytes header %q, want %q", got, "peak RSS (B)")
	}
	if got := recs[5][2]; got != "150000000000" {
		t.Errorf("bytes in CSV %q, want exact 150000000000", got)
	}
	if got := recs[2][5]; got != "1234567" {
		t.Errorf("rate in CSV %q, want 1234567", got)
	}
}

// TestCells: Cells is what Render lays out, before escaping: the header
// with its units, every value formatted for the format (digit groups and
// IEC units for people, exact in CSV), absent values as Absent, a cell
// with markdown's specials intact; Alignment decides Auto as Render does
// (text left, numbers right, Align overrides).
func TestCells(t *testing.T) {
	tb := sample()
	header, rows, err := tb.Cells(Text)
	if err != nil {
		t.Fatal(err)
	}
	wantHeader := []string{"component", "objects", "peak RSS", "diff (%)", "loss", "throughput (tokens/s)", "note"}
	if strings.Join(header, "#") != strings.Join(wantHeader, "#") {
		t.Errorf("header %q, want %q", header, wantHeader)
	}
	if len(rows) != len(tb.Rows) {
		t.Fatalf("%d rows, want %d", len(rows), len(tb.Rows))
	}
	for _, c := range []struct {
		row, col int
		want     string
	}{
		{0, 1, "154,624"}, {1, 2, "634.2 KiB"}, {1, 5, "1,234,567"},
		{1, 6, "measured +5.0% | *not* the model"}, // not escaped
		{2, 3, Absent}, {2, 4, Absent}, {2, 6, ""}, {3, 6, "<nil>"},
		{4, 3, "n/a"}, {4, 6, Absent}, // a string in a numeric column; a missing trailing cell
	} {
		if got := rows[c.row][c.col]; got != c.want {
			t.Errorf("text row %d column %d: %q, want %q", c.row+1, c.col+1, got, c.want)
		}
	}
	// Text and markdown cells are the same; markdown escapes them on output.
	mdHeader, mdRows, err := tb.Cells(Markdown)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(mdHeader, "#") != strings.Join(header, "#") {
		t.Errorf("markdown header %q, text header %q", mdHeader, header)
	}
	var md bytes.Buffer
	if err := tb.Render(&md, Markdown); err != nil {
		t.Fatal(err)
	}
	for r, row := range mdRows {
		for i, s := range row {
			if s != rows[r][i] {
				t.Errorf("row %d column %d: markdown %q, text %q", r+1, i+1, s, rows[r][i])
			}
			if !strings.Contains(md.String(), " "+escapeMarkdown(s)+" ") {
				t.Errorf("row %d column %d: %q is not in the markdown", r+1, i+1, escapeMarkdown(s))
			}
		}
	}
	csvHeader, csvRows, err := tb.Cells(CSV)
	if err != nil {
		t.Fatal(err)
	}
	if csvHeader[2] != "peak RSS (B)" || csvRows[4][2] != "150000000000" || csvRows[1][5] != "1234567" {
		t.Errorf("CSV cells: header %q, total bytes %q, rate %q", csvHeader[2], csvRows[4][2], csvRows[1][5])
	}
	want := []Align{Left, Right, Right, Right, Right, Right, Left}
	for i, c := range tb.Columns {
		if got := c.Alignment(); got != want[i] {
			t.Errorf("column %q: alignment %v, want %v", c.Name, got, want[i])
		}
	}
	if got := (Column{Name: "threads", Align: Right}).Alignment(); got != Right {
		t.Errorf("a String column set Right: %v", got)
	}
	if got := (Column{Name: "id", Kind: Int, Align: Left}).Alignment(); got != Left {
		t.Errorf("an Int column set Left: %v", got)
	}
	bad := New("x", Column{Name: "n", Kind: Int})
	bad.Add(struct{}{})
	if _, _, err := bad.Cells(Text); err == nil || !strings.Contains(err.Error(), `"n"`) {
		t.Errorf("a struct in an Int column: %v", err)
	}
	if _, _, err := tb.Cells("html"); err == nil {
		t.Error("format html: no error")
	}
}

func TestFormatBytes(t *testing.T) {
	for _, c := range []struct {
		n    float64
		want string
	}{
		{0, "0 B"}, {512, "512 B"}, {1023, "1023 B"}, {1024, "1 KiB"}, {8192, "8 KiB"},
		{8196, "8.00 KiB"}, {1536, "1.50 KiB"}, {10 << 20, "10 MiB"}, {132_228_710, "126.1 MiB"},
		{1<<20 - 1, "1.00 MiB"}, {10*1024 - 1, "10.0 KiB"}, {-8192, "-8 KiB"},
		{3 << 30, "3 GiB"}, {1.5 * (1 << 40), "1.50 TiB"}, {math.NaN(), "-"},
	} {
		if got := FormatBytes(c.n); got != c.want {
			t.Errorf("FormatBytes(%v) = %q, want %q", c.n, got, c.want)
		}
	}
}

// TestFormatBytesShortFixed: the two formats of running text, beside
// FormatBytes.
func TestFormatBytesShortFixed(t *testing.T) {
	for _, c := range []struct {
		n            int64
		short, fixed string
	}{
		{0, "0 B", "0 B"}, {512, "512 B", "512 B"}, {40 << 10, "40 KiB", "40.0 KiB"},
		{1500, "1.5 KiB", "1.5 KiB"}, {1<<20 + 60<<10, "1.1 MiB", "1.1 MiB"}, {2<<20 - 40<<10, "2.0 MiB", "2.0 MiB"},
		{256 << 20, "256 MiB", "256.0 MiB"}, {1288490188, "1.2 GiB", "1.2 GiB"}, {1<<20 - 1, "1.0 MiB", "1.0 MiB"},
		{-3 << 10, "-3 KiB", "-3.0 KiB"}, {5 << 40, "5 TiB", "5.0 TiB"},
	} {
		if got := FormatBytesShort(c.n); got != c.short {
			t.Errorf("FormatBytesShort(%d) = %q, want %q", c.n, got, c.short)
		}
		if got := FormatBytesFixed(c.n); got != c.fixed {
			t.Errorf("FormatBytesFixed(%d) = %q, want %q", c.n, got, c.fixed)
		}
	}
}

func TestErrors(t *testing.T) {
	if _, err := ParseFormat("html"); err == nil || !strings.Contains(err.Error(), "html") {
		t.Errorf("ParseFormat(html): %v", err)
	}
	if err := New("x", Column{Name: "n", Kind: Int}).Render(new(bytes.Buffer), "html"); err == nil {
		t.Error("format html: no error")
	}
	bad := New("x", Column{Name: "n", Kind: Int})
	bad.Add(struct{}{})
	if err := bad.Render(new(bytes.Buffer), Text); err == nil || !strings.Contains(err.Error(), `"n"`) {
		t.Errorf("a struct in an Int column: %v", err)
	}
	frac := New("x", Column{Name: "n", Kind: Bytes})
	frac.Add(1.5)
	if err := frac.Render(new(bytes.Buffer), Text); err == nil {
		t.Error("1.5 bytes: no error")
	}
	long := New("x", Column{Name: "n"})
	long.Add("a", "b")
	if err := long.Render(new(bytes.Buffer), Text); err == nil {
		t.Error("a row longer than the columns: no error")
	}
}

// TestStreamGolden: a streamed table (the step log) has fixed widths; the
// header comes first, each row as it is written, no trailing spaces.
func TestStreamGolden(t *testing.T) {
	var b bytes.Buffer
	s, err := NewStream(&b, "steps",
		Column{Name: "step", Kind: Int, Width: 5},
		Column{Name: "loss", Kind: Float, Decimals: 4, Width: 7},
		Column{Name: "tokens/s", Kind: Rate, Width: 9},
		Column{Name: "rss", Kind: Bytes, Width: 10},
		Column{Name: "note"},
	)
	if err != nil {
		t.Fatal(err)
	}
	header := b.String()
	if !strings.Contains(header, "tokens/s") {
		t.Fatalf("no header before the first row: %q", header)
	}
	for i, rss := range []int64{60 << 20, 62_914_560 + 12345, 1 << 30} {
		if err := s.Row(i+1, 6.6809-float64(i)/10, 64210.4*float64(i+1), rss); err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(b.String(), "\n"); n != 3+i {
			t.Fatalf("after row %d: %d lines, want %d: the row is not written at once\n%s", i+1, n, 3+i, b.String())
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(b.String(), "\n") {
		if strings.HasSuffix(l, " ") {
			t.Errorf("line %d has trailing spaces: %q", i+1, l)
		}
	}
	golden.Check(t, "stream.text.golden", b.Bytes())
}

// TestMaxWidth checks a column with MaxWidth wraps its long text at
// spaces in text, so the columns after it stay within reach, and keeps it
// on one line in markdown and Cells.
func TestMaxWidth(t *testing.T) {
	claim := "save 455 MB (35 %): 65 threads x 8 MB = 520 MB"
	tb := New("", Column{Name: "phase"}, Column{Name: "claim", MaxWidth: 16}, Column{Name: "agrees"})
	tb.Add("P1", claim, "no [1]")
	tb.Add("P2", "short", "yes")
	tb.Add("P3", "a-word-longer-than-sixteen runes", "yes")
	var b bytes.Buffer
	if err := tb.Render(&b, Text); err != nil {
		t.Fatal(err)
	}
	want := "phase  claim                       agrees\n" +
		"P1     save 455 MB (35             no [1]\n" +
		"       %): 65 threads x\n" +
		"       8 MB = 520 MB\n" +
		"P2     short                       yes\n" +
		"P3     a-word-longer-than-sixteen  yes\n" +
		"       runes\n"
	if b.String() != want {
		t.Errorf("text:\n%s\nwant the claim wrapped at 16 runes, a longer word whole:\n%s", b.String(), want)
	}
	b.Reset()
	if err := tb.Render(&b, Markdown); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), claim) {
		t.Errorf("markdown:\n%s\nwant the claim on one line", b.String())
	}
	_, rows, err := tb.Cells(Text)
	if err != nil {
		t.Fatal(err)
	}
	if rows[0][1] != claim {
		t.Errorf("Cells: claim %q, want %q", rows[0][1], claim)
	}
}

// TestDuration checks durations in human units in text and markdown, at
// the bounds where the unit or the decimals change, and exact nanoseconds
// in CSV.
func TestDuration(t *testing.T) {
	for ns, want := range map[float64]string{
		0:              "0 ns",
		812:            "812 ns",
		999.6:          "1.00 µs",
		35_200_000:     "35.2 ms",
		9_999_000:      "10.0 ms",
		99_960_000:     "100 ms",
		999_700_000:    "1.00 s",
		1_640_000_000:  "1.64 s",
		59_600_000_000: "1 min 00 s",
		125e9:          "2 min 05 s",
		3725e9:         "1 h 02 min",
		-35_000_000:    "-35.0 ms",
		math.NaN():     "-",
	} {
		if got := FormatDuration(ns); got != want {
			t.Errorf("FormatDuration(%g) = %q, want %q", ns, got, want)
		}
	}
	tb := New("", Column{Name: "step time", Kind: Duration})
	tb.Add(time.Duration(1_640_000_000))
	tb.Add(int64(35_000_000))
	tb.Add(nil)
	for f, want := range map[Format]string{
		Text: "step time\n   1.64 s\n  35.0 ms\n        -\n",
		CSV:  "step time (ns)\n1640000000\n35000000\n-\n",
	} {
		var b bytes.Buffer
		if err := tb.Render(&b, f); err != nil {
			t.Fatal(err)
		}
		if b.String() != want {
			t.Errorf("%s:\n%s\nwant\n%s", f, b.String(), want)
		}
	}
}
