package htmlreport

import (
	"bytes"
	"fmt"
	"strings"

	"memprobe/internal/table"
	"memprobe/report"
	"memprobe/schema"
)

// The page's tables are package report's own (WriteRunTables,
// WritePlanTables), rendered as markdown and read back into cells here, so
// that the page and `probe report` always show the same figures, the same
// footnotes and the same verdicts: report computes, this package lays out.

// Block is a paragraph or a table of a report's tables, in order.
type Block struct {
	Paragraph string
	Table     *Table
}

// Table is one table read back: its title, header, rows and notes, every
// string as report wrote it (unescaped from markdown).
type Table struct {
	Title  string
	Header []Cell
	Rows   [][]Cell
	Notes  []string
}

// Cell is a table cell; Right for columns report aligns right (figures),
// Wrap for a long text (a change, a claim) the page lets wrap.
type Cell struct {
	Text        string
	Right, Wrap bool
}

// wrapAt is the length of a text cell beyond which it wraps.
const wrapAt = 28

func cell(text string, right bool) Cell {
	return Cell{Text: text, Right: right, Wrap: !right && len(text) > wrapAt}
}

// runBlocks renders the report's heading (provenance and warnings: the
// paragraphs before the first table of WriteRunTables).
func headBlocks(rep *schema.Report) ([]Block, error) {
	var b bytes.Buffer
	if err := report.WriteRunTables(&b, rep, table.Markdown); err != nil {
		return nil, err
	}
	blocks, err := parseMarkdown(b.String())
	if err != nil {
		return nil, err
	}
	for i, bl := range blocks {
		if bl.Table != nil {
			return blocks[:i], nil
		}
	}
	return blocks, nil
}

// planBlocks renders one plan's tables.
func planBlocks(rep *schema.Report, plan string) ([]Block, error) {
	var b bytes.Buffer
	if err := report.WritePlanTables(&b, rep, plan, table.Markdown); err != nil {
		return nil, err
	}
	return parseMarkdown(b.String())
}

// parseMarkdown reads what internal/table writes in markdown, joined as
// report joins them: blocks separated by empty lines; a table is an
// optional title line, an empty line, the header row, the alignment row,
// the rows and, after an empty line, its notes ("- " lines). Anything else
// is a paragraph.
func parseMarkdown(s string) ([]Block, error) {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	var out []Block
	var last *Table // the table notes attach to
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case l == "":
			continue
		case strings.HasPrefix(l, "|"):
			t, n, err := parseTable("", lines[i:])
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", i+1, err)
			}
			out = append(out, Block{Table: t})
			last, i = t, i+n-1
		case strings.HasPrefix(l, "- ") && last != nil:
			last.Notes = append(last.Notes, unescape(l[2:]))
		case i+2 < len(lines) && lines[i+1] == "" && strings.HasPrefix(lines[i+2], "|"):
			t, n, err := parseTable(unescape(l), lines[i+2:])
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", i+3, err)
			}
			out = append(out, Block{Table: t})
			last, i = t, i+2+n-1
		default:
			out = append(out, Block{Paragraph: unescape(l)})
			last = nil
		}
	}
	return out, nil
}

// parseTable reads a markdown table at the start of lines; it returns the
// table and the number of lines it took.
func parseTable(title string, lines []string) (*Table, int, error) {
	if len(lines) < 2 || !strings.HasPrefix(lines[1], "|") {
		return nil, 0, fmt.Errorf("table %q: no alignment row", title)
	}
	head, align := splitRow(lines[0]), splitRow(lines[1])
	if len(head) != len(align) {
		return nil, 0, fmt.Errorf("table %q: %d header cells, %d alignments", title, len(head), len(align))
	}
	right := make([]bool, len(align))
	for i, a := range align {
		right[i] = strings.HasSuffix(a, ":") && !strings.HasPrefix(a, ":")
	}
	t := &Table{Title: title}
	for i, h := range head {
		t.Header = append(t.Header, Cell{Text: h, Right: right[i]})
	}
	n := 2
	for ; n < len(lines) && strings.HasPrefix(lines[n], "|"); n++ {
		cells := splitRow(lines[n])
		if len(cells) != len(head) {
			return nil, 0, fmt.Errorf("table %q: row %d has %d cells, want %d", title, n-1, len(cells), len(head))
		}
		row := make([]Cell, len(cells))
		for i, c := range cells {
			row[i] = cell(c, right[i])
		}
		t.Rows = append(t.Rows, row)
	}
	return t, n, nil
}

// splitRow splits "| a | b\| c |" into its unescaped, trimmed cells.
func splitRow(l string) []string {
	var cells []string
	var cur strings.Builder
	l = strings.TrimSpace(l)
	l = strings.TrimPrefix(l, "|")
	for i := 0; i < len(l); i++ {
		switch c := l[i]; {
		case c == '\\' && i+1 < len(l):
			cur.WriteByte(l[i+1])
			i++
		case c == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		cells = append(cells, s)
	}
	return cells
}

// unescape undoes internal/table's markdown escapes (a backslash before
// \ | * ` <).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
