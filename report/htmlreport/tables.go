package htmlreport

import (
	"memprobe/internal/table"
	"memprobe/report"
	"memprobe/schema"
)

// The page's tables are package report's own (HeadBlocks, PlanBlocks: the
// blocks WriteRunTables and WritePlanTables render), so that the page and
// `probe report` always show the same figures, the same footnotes and the
// same verdicts: report computes, this package lays out. The cells are
// internal/table's strings for people (table.Text, unescaped); the
// template escapes them.

// Block is a paragraph or a table of a report's tables, in order.
type Block struct {
	Paragraph string
	Table     *Table
}

// Table is one of report's tables as the page lays it out: its title,
// header, rows and notes, every string as `probe report` writes it in
// text.
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

// headBlocks are the report's heading: provenance and warnings.
func headBlocks(rep *schema.Report) ([]Block, error) {
	return pageBlocks(report.HeadBlocks(rep))
}

// planBlocks are one plan's tables.
func planBlocks(rep *schema.Report, plan string) ([]Block, error) {
	bs, err := report.PlanBlocks(rep, plan)
	if err != nil {
		return nil, err
	}
	return pageBlocks(bs)
}

func pageBlocks(bs []report.Block) ([]Block, error) {
	out := make([]Block, 0, len(bs))
	for _, b := range bs {
		if b.Table == nil {
			out = append(out, Block{Paragraph: b.Paragraph})
			continue
		}
		t, err := pageTable(b.Table)
		if err != nil {
			return nil, err
		}
		out = append(out, Block{Table: t})
	}
	return out, nil
}

// pageTable lays t out in cells, aligned as internal/table aligns them.
func pageTable(t *table.Table) (*Table, error) {
	header, rows, err := t.Cells(table.Text)
	if err != nil {
		return nil, err
	}
	right := make([]bool, len(t.Columns))
	for i, c := range t.Columns {
		right[i] = c.Alignment() == table.Right
	}
	pt := &Table{Title: t.Title, Notes: t.Notes, Header: make([]Cell, len(header)), Rows: make([][]Cell, len(rows))}
	for i, h := range header {
		pt.Header[i] = Cell{Text: h, Right: right[i]}
	}
	for r, row := range rows {
		pt.Rows[r] = make([]Cell, len(row))
		for i, s := range row {
			pt.Rows[r][i] = cell(s, right[i])
		}
	}
	return pt, nil
}
