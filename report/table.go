package report

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// table is a plain-text table with right-aligned numeric columns and a
// left-aligned first column: stable output for golden files.
type table struct {
	w     io.Writer
	rows  [][]string
	width []int
}

func newTable(w io.Writer, header ...string) *table {
	t := &table{w: w, width: make([]int, len(header))}
	t.row(header...)
	return t
}

func (t *table) row(cells ...string) {
	for i, c := range cells {
		t.width[i] = max(t.width[i], utf8.RuneCountInString(c))
	}
	t.rows = append(t.rows, cells)
}

func (t *table) flush() error {
	var b strings.Builder
	for _, r := range t.rows {
		for i, c := range r {
			pad := strings.Repeat(" ", t.width[i]-utf8.RuneCountInString(c))
			if i == 0 {
				b.WriteString(c + pad)
			} else {
				b.WriteString("  " + pad + c)
			}
		}
		b.WriteString("\n")
	}
	_, err := fmt.Fprint(t.w, b.String())
	return err
}
