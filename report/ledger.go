package report

import (
	"io"
	"math"

	"memprobe/internal/table"
	"memprobe/schema"
)

// LedgerTable is the model against the ledger (the rows
// instrument/memmodel compares) as a table: component, expected, measured
// and peak bytes, the difference in percent, then "!" and the reason on a
// finding or the model's formula otherwise; a total row closes it.
func LedgerTable(rows []schema.LedgerRow) *table.Table {
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
	e, m, p := schema.LedgerTotals(rows)
	var td *float64
	if e != 0 {
		d := 100 * float64(m-e) / float64(e)
		d = math.Round(d*1000) / 1000 // as memmodel rounds each row's DiffPct
		td = &d
	}
	t.Add("total", e, m, p, td, "", "")
	return t
}

// WriteLedger writes rows as a plain-text table (LedgerTable).
func WriteLedger(w io.Writer, rows []schema.LedgerRow) error {
	return LedgerTable(rows).Render(w, table.Text)
}
