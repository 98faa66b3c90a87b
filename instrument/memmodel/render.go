package memmodel

import (
	"io"

	"memprobe/internal/table"
)

// Table is rows as a table: component, expected, measured and peak bytes,
// the difference in percent, then "!" and the reason on a finding or the
// model's formula otherwise; a total row closes it.
func Table(rows []Row) *table.Table {
	t := table.New("",
		table.Column{Name: "component"},
		table.Column{Name: "expected", Kind: table.Bytes},
		table.Column{Name: "measured", Kind: table.Bytes},
		table.Column{Name: "peak", Kind: table.Bytes},
		table.Column{Name: "diff", Kind: table.Percent, Decimals: 2},
		table.Column{Name: "!"},
		table.Column{Name: "note"},
	)
	for _, r := range rows {
		flag, note := "", r.Formula
		if r.Finding {
			flag, note = "!", r.Note
		}
		t.Add(r.Component, r.ExpectedBytes, r.MeasuredBytes, r.PeakBytes, r.DiffPct, flag, note)
	}
	e, m, p := Totals(rows)
	var td *float64
	if e != 0 {
		td = diffPct(m, e)
	}
	t.Add("total", e, m, p, td, "", "")
	return t
}

// Render writes rows as a plain-text table (Table).
func Render(w io.Writer, rows []Row) error { return Table(rows).Render(w, table.Text) }
