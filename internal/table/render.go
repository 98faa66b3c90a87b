package table

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// Render writes t to w in format f: Cells, laid out.
func (t *Table) Render(w io.Writer, f Format) error {
	if len(t.Columns) == 0 {
		return fmt.Errorf("table %q: no columns", t.Title)
	}
	header, rows, err := t.Cells(f)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	switch f {
	case Text:
		if t.Title != "" {
			b.WriteString(t.Title + "\n")
		}
		for i, c := range t.Columns {
			if c.MaxWidth > 0 {
				for _, r := range rows {
					r[i] = wrap(r[i], c.MaxWidth)
				}
			}
		}
		var tb bytes.Buffer
		if err := t.layout(&tb, textRenderer(), header, rows, true); err != nil {
			return err
		}
		b.Write(trimLines(tb.Bytes()))
		for _, n := range t.Notes {
			b.WriteString(n + "\n")
		}
	case Markdown:
		if t.Title != "" {
			b.WriteString(escapeMarkdown(t.Title) + "\n\n")
		}
		for i := range header {
			header[i] = escapeMarkdown(header[i])
		}
		for _, r := range rows {
			for i := range r {
				r[i] = escapeMarkdown(r[i])
			}
		}
		if err := t.layout(&b, renderer.NewMarkdown(), header, rows, false); err != nil {
			return err
		}
		if len(t.Notes) > 0 {
			b.WriteString("\n")
		}
		for _, n := range t.Notes {
			b.WriteString("- " + escapeMarkdown(n) + "\n")
		}
	case CSV:
		cw := csv.NewWriter(&b)
		cw.Write(header)
		cw.WriteAll(rows)
		if err := cw.Error(); err != nil {
			return err
		}
	}
	_, err = w.Write(b.Bytes())
	return err
}

// Cells is the table as Render writes it in format f, before any layout
// or escaping: the header (with units, as Render heads each column) and
// one string per column for every row, an absent value as Absent. Text
// and markdown cells are the same; CSV's bytes are exact and its numbers
// have no digit groups. A caller that lays the table out itself (an HTML
// page) takes Title and Notes from t and each column's Alignment, and
// escapes the strings for its own format. The error is Render's for a
// value its column cannot hold, or a row with more cells than columns.
func (t *Table) Cells(f Format) (header []string, rows [][]string, err error) {
	if _, err := ParseFormat(string(f)); err != nil {
		return nil, nil, err
	}
	header = make([]string, len(t.Columns))
	for i, c := range t.Columns {
		header[i] = c.header(f)
	}
	rows = make([][]string, len(t.Rows))
	for r, row := range t.Rows {
		if len(row) > len(t.Columns) {
			return nil, nil, fmt.Errorf("table %q: row %d has %d cells for %d columns", t.Title, r+1, len(row), len(t.Columns))
		}
		rows[r] = make([]string, len(t.Columns))
		for i, c := range t.Columns {
			var v any
			if i < len(row) {
				v = row[i]
			}
			s, err := c.cell(v, f)
			if err != nil {
				return nil, nil, fmt.Errorf("table %q: row %d: %w", t.Title, r+1, err)
			}
			rows[r][i] = s
		}
	}
	return header, rows, nil
}

// textRenderer draws no borders, no lines and no column separators: the
// columns are set apart by the cells' padding (config).
func textRenderer() tw.Renderer {
	return renderer.NewBlueprint(tw.Rendition{
		Borders: tw.BorderNone,
		Symbols: tw.NewSymbols(tw.StyleNone),
		Settings: tw.Settings{
			Separators: tw.Separators{ShowHeader: tw.Off, ShowFooter: tw.Off, BetweenRows: tw.Off, BetweenColumns: tw.Off},
			Lines:      tw.Lines{ShowTop: tw.Off, ShowBottom: tw.Off, ShowHeaderLine: tw.Off, ShowFooterLine: tw.Off},
		},
	})
}

// config sets the alignments and turns off tablewriter's header
// upper-casing and cell wrapping; gap pads each cell on the right with two
// spaces (text) instead of one on each side (markdown's pipes).
func (t *Table) config(gap bool) tablewriter.Config {
	al := make([]tw.Align, len(t.Columns))
	for i, c := range t.Columns {
		al[i] = tw.AlignLeft
		if c.right() {
			al[i] = tw.AlignRight
		}
	}
	cc := tw.CellConfig{
		Formatting: tw.CellFormatting{AutoFormat: tw.Off, AutoWrap: tw.WrapNone},
		Alignment:  tw.CellAlignment{PerColumn: al},
	}
	if gap {
		cc.Padding = tw.CellPadding{Global: tw.Padding{Left: "", Right: "  ", Overwrite: true}}
	}
	return tablewriter.Config{Header: cc, Row: cc}
}

func (t *Table) layout(w io.Writer, r tw.Renderer, header []string, rows [][]string, gap bool) error {
	tt := tablewriter.NewTable(w, tablewriter.WithRenderer(r), tablewriter.WithConfig(t.config(gap)))
	tt.Header(header)
	if err := tt.Bulk(rows); err != nil {
		return err
	}
	return tt.Render()
}

// wrap breaks s at spaces into lines of at most width runes (a longer
// word is a line of its own), joined by newlines, which the layout turns
// into lines of the row.
func wrap(s string, width int) string {
	if utf8.RuneCountInString(s) <= width {
		return s
	}
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		switch {
		case line == "":
			line = w
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(w) <= width:
			line += " " + w
		default:
			lines = append(lines, line)
			line = w
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// trimLines drops trailing spaces from every line.
func trimLines(b []byte) []byte {
	lines := bytes.SplitAfter(b, []byte("\n"))
	var out bytes.Buffer
	for _, l := range lines {
		nl := bytes.HasSuffix(l, []byte("\n"))
		out.Write(bytes.TrimRight(l, " \n"))
		if nl {
			out.WriteByte('\n')
		}
	}
	return out.Bytes()
}

// escapeMarkdown escapes what would end a cell (|) or start emphasis,
// code or HTML in GitHub markdown.
var markdownEscaper = strings.NewReplacer(`\`, `\\`, `|`, `\|`, `*`, `\*`, "`", "\\`", `<`, `\<`)

func escapeMarkdown(s string) string { return markdownEscaper.Replace(s) }
