package report

import (
	"errors"
	"io"

	"memprobe/internal/table"
	"memprobe/schema"
)

// Table puts results side by side, one row each, in the order given: the
// first row is the reference the "RSS vs first" column divides by. Memory
// columns say which memory they are: RSS is resident, VSZ reserved address
// space.
func Table(results []*schema.Result) *table.Table {
	t := table.New("",
		table.Column{Name: "run"},
		table.Column{Name: "threads", Kind: table.Int},
		table.Column{Name: "tokens/s", Kind: table.Rate},
		table.Column{Name: "peak RSS", Kind: table.Bytes},
		table.Column{Name: "RSS vs first", Kind: table.Float, Decimals: 2},
		table.Column{Name: "final VSZ", Kind: table.Bytes},
		table.Column{Name: "floor", Kind: table.Bytes},
		table.Column{Name: "allocs/step", Kind: table.Rate, Decimals: 1},
		table.Column{Name: "loss first", Kind: table.Float, Decimals: 4},
		table.Column{Name: "loss last", Kind: table.Float, Decimals: 4},
	)
	var ref float64
	if len(results) > 0 {
		ref = float64(results[0].PeakRSSBytes)
	}
	for _, r := range results {
		var x any
		if ref > 0 {
			x = float64(r.PeakRSSBytes) / ref
		}
		t.Add(Name(r), r.Threads, r.TokensPerSec, r.PeakRSSBytes, x, r.FinalVSZBytes, r.FloorBytes,
			r.HeapAllocsPerStep, r.LossFirst, r.LossLast)
	}
	return t
}

// WriteTable renders Table(results) in format f (text, markdown or csv).
func WriteTable(w io.Writer, results []*schema.Result, f table.Format) error {
	if len(results) == 0 {
		return errors.New("report: no results to render")
	}
	return Table(results).Render(w, f)
}
