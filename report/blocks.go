package report

import (
	"bytes"
	"fmt"
	"io"

	"memprobe/internal/table"
	"memprobe/metric"
	"memprobe/schema"
)

// Block is one part of a report's tables, in order: a paragraph (one line
// of text) or a table; exactly one of the two is set. WriteRunTables and
// WritePlanTables render blocks; Blocks and PlanBlocks hand them to a
// caller that lays the tables out itself (report/htmlreport), so that it
// shows the figures, verdicts and footnotes of `probe report` without
// reading them back from text.
type Block struct {
	Paragraph string
	Table     *table.Table
}

// HeadBlocks are the paragraphs that open WriteRunTables: where the
// figures come from, then the report's warnings.
func HeadBlocks(rep *schema.Report) []Block {
	out := &tableWriter{f: table.Text}
	writeHead(out, rep)
	return out.blocks
}

// Blocks is what `probe report` prints for an input, as blocks. For a
// run report, what WriteRunTables writes: HeadBlocks, then each plan's
// PlanBlocks in the order the plans ran. For decode records, the
// provenance paragraph (DecodeProvenance), then the tables WriteDecode
// renders, in its order; an error for no records, as WriteDecode's. The
// tables are built for people (text, markdown, a page): their cells
// carry the footnote references ("no [1]") and write a min–max in IEC
// units, as in text and markdown; only CSV from WriteRunTables differs.
// report/htmlreport lays them out on a page, so that the page and the
// text show the same figures.
func Blocks(rs *Rows) ([]Block, error) {
	if rs.Kind == metric.Decode {
		return decodeBlocks(rs.Decode)
	}
	return runBlocks(rs.Report, table.Text), nil
}

// PlanBlocks is what WritePlanTables writes for the plan, as blocks (see
// Blocks); an error if no run belongs to the plan.
func PlanBlocks(rep *schema.Report, plan string) ([]Block, error) {
	return planBlocks(rep, plan, table.Text)
}

// runBlocks builds the blocks of a run report for format f (CSV's tables
// have no footnote references and exact byte ranges).
func runBlocks(rep *schema.Report, f table.Format) []Block {
	out := &tableWriter{f: f}
	writeHead(out, rep)
	for _, p := range plans(rep) {
		writePlan(out, p)
	}
	return out.blocks
}

func planBlocks(rep *schema.Report, name string, f table.Format) ([]Block, error) {
	for _, p := range plans(rep) {
		if p.name == name {
			out := &tableWriter{f: f}
			writePlan(out, p)
			return out.blocks, nil
		}
	}
	return nil, fmt.Errorf("report: no runs of plan %q", name)
}

func writeHead(out *tableWriter, rep *schema.Report) {
	out.line(provenance(rep))
	for _, s := range rep.Warnings {
		out.line("warning: " + s)
	}
}

// tableWriter collects the blocks of a rendering in format f: the tables
// are built for f (see runBlocks), and flush writes them in it.
type tableWriter struct {
	f      table.Format
	blocks []Block
}

func (t *tableWriter) table(tb *table.Table) { t.blocks = append(t.blocks, Block{Table: tb}) }

// line is a paragraph: text and markdown only.
func (t *tableWriter) line(s string) { t.blocks = append(t.blocks, Block{Paragraph: s}) }

func (t *tableWriter) flush(w io.Writer) error { return writeBlocks(w, t.blocks, t.f) }

// writeBlocks renders blocks in format f with an empty line between them;
// CSV has the tables only. Every table is rendered before anything is
// written, so that an error leaves w untouched.
func writeBlocks(w io.Writer, blocks []Block, f table.Format) error {
	var parts [][]byte
	for _, b := range blocks {
		switch {
		case b.Table != nil:
			var buf bytes.Buffer
			if err := b.Table.Render(&buf, f); err != nil {
				return err
			}
			parts = append(parts, buf.Bytes())
		case f != table.CSV:
			parts = append(parts, []byte(b.Paragraph+"\n"))
		}
	}
	for i, p := range parts {
		if i > 0 {
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return nil
}
