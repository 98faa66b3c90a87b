package report

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"memprobe/internal/table"
)

// TextWidth is the terminal width text output fits by default: tables
// wider than this are folded (fitBlocks), paragraphs and notes wrapped.
const TextWidth = 120

// fitBlocks makes text blocks fit width columns: a table wider than that
// is folded into parts that each repeat its first column (the row's name)
// and keep the columns' order, the notes after the last part; paragraphs
// titles, and notes longer than width wrap at spaces, their next lines
// indented.
// Other formats are returned as they are (a page or a pull request lays
// out its own width; CSV is for programs).
func fitBlocks(blocks []Block, f table.Format, width int) []Block {
	if f != table.Text {
		return blocks
	}
	out := make([]Block, 0, len(blocks))
	for _, b := range blocks {
		if b.Table == nil {
			out = append(out, Block{Paragraph: wrapText(b.Paragraph, width, "  ")})
			continue
		}
		parts := fold(b.Table, width)
		last := parts[len(parts)-1]
		notes := make([]string, len(last.Notes))
		for i, n := range last.Notes {
			notes[i] = wrapText(n, width, "    ")
		}
		last.Notes = notes
		for _, p := range parts {
			p.Title = wrapText(p.Title, width, "  ")
			out = append(out, Block{Table: p})
		}
	}
	return out
}

// fold splits t's columns into tables no wider than width, each with t's
// first column first; t itself (as a copy) when it fits, or when even two
// columns do not. Only the first part has the title; the others say that
// they continue it.
func fold(t *table.Table, width int) []*table.Table {
	all := make([]int, len(t.Columns))
	for i := range all {
		all[i] = i
	}
	if len(t.Columns) < 3 || textWidth(sub(t, all)) <= width {
		c := sub(t, all)
		c.Title, c.Notes = t.Title, t.Notes
		return []*table.Table{c}
	}
	var groups [][]int
	cur := []int{0}
	for i := 1; i < len(t.Columns); i++ {
		try := append(append([]int(nil), cur...), i)
		if len(cur) > 1 && textWidth(sub(t, try)) > width {
			groups = append(groups, cur)
			try = []int{0, i}
		}
		cur = try
	}
	groups = append(groups, cur)
	parts := make([]*table.Table, len(groups))
	for i, g := range groups {
		parts[i] = sub(t, g)
		switch {
		case i == 0:
			parts[i].Title = t.Title
		case t.Title != "":
			parts[i].Title = t.Title + " (continued)"
		}
	}
	parts[len(parts)-1].Notes = t.Notes
	return parts
}

// sub is t's columns cols, with their cells, untitled and without notes.
func sub(t *table.Table, cols []int) *table.Table {
	c := &table.Table{Columns: make([]table.Column, len(cols))}
	for i, k := range cols {
		c.Columns[i] = t.Columns[k]
	}
	for _, r := range t.Rows {
		row := make([]any, len(cols))
		for i, k := range cols {
			if k < len(r) {
				row[i] = r[k]
			}
		}
		c.Rows = append(c.Rows, row)
	}
	return c
}

// textWidth is the widest line of t rendered as text; 0 when it cannot be
// rendered (Render reports that later).
func textWidth(t *table.Table) int {
	var b bytes.Buffer
	if err := t.Render(&b, table.Text); err != nil {
		return 0
	}
	return widest(b.String())
}

// widest is the number of runes of s's longest line.
func widest(s string) int {
	w := 0
	for _, l := range strings.Split(s, "\n") {
		w = max(w, utf8.RuneCountInString(l))
	}
	return w
}

// wrapText breaks s at spaces into lines of at most width runes (a
// longer word stays whole, and "%" stays with its number), the lines
// after the first starting with indent. Lines s already has are kept.
func wrapText(s string, width int, indent string) string {
	if utf8.RuneCountInString(s) <= width {
		return s
	}
	var out []string
	for _, para := range strings.Split(s, "\n") {
		var words []string
		for _, w := range strings.Fields(para) {
			if k := len(words) - 1; k >= 0 && strings.HasPrefix(w, "%") {
				words[k] += " " + w
				continue
			}
			words = append(words, w)
		}
		line := ""
		for _, w := range words {
			switch {
			case line == "":
				line = w
				if len(out) > 0 {
					line = indent + w
				}
			case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(w) <= width:
				line += " " + w
			default:
				out = append(out, line)
				line = indent + w
			}
		}
		if line != "" {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
