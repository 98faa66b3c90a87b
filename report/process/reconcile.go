package process

import (
	"fmt"
	"strings"

	"memprobe/internal/table"
	"memprobe/schema"
)

// ReconciliationTable is r as one table: each part's resident bytes
// (RSS) and share of VmRSS beside its reserved address space (VSZ) and
// share of VmSize, what it counts and where it comes from; then the
// unexplained remainder and the total. The unexplained mappings and any
// warnings are notes below. (instrument/reconcile.Table draws the same
// for report/'s summary until that one moves under report/ too.)
func ReconciliationTable(r schema.Reconciliation) *table.Table {
	t := table.New("",
		table.Column{Name: "part"},
		table.Column{Name: "resident", Kind: table.Bytes},
		table.Column{Name: "of RSS", Kind: table.Percent, Decimals: 1},
		table.Column{Name: "reserved", Kind: table.Bytes},
		table.Column{Name: "of VSZ", Kind: table.Percent, Decimals: 1},
		table.Column{Name: "count", Kind: table.Int},
		table.Column{Name: "note"},
	)
	row := func(name string, b, v int64, n int, note string) {
		var count any
		if n > 0 {
			count = n
		}
		t.Add(name, b, share(b, r.RSSBytes), v, share(v, r.VSZBytes), count, note)
	}
	for _, p := range r.Parts {
		row(p.Name, p.Bytes, p.ReservedBytes, p.Count, p.Note)
	}
	row("unexplained", r.UnexplainedBytes, r.UnexplainedReservedBytes, 0, r.UnexplainedNote)
	total := "VmRSS, VmSize"
	if r.PSSBytes != 0 {
		total += fmt.Sprintf("; PSS %s; smaps Σ Rss %s, Σ Size %s",
			table.FormatBytes(float64(r.PSSBytes)), table.FormatBytes(float64(r.SmapsRSSBytes)), table.FormatBytes(float64(r.SmapsSizeBytes)))
	}
	row("= total", r.RSSBytes, r.VSZBytes, 0, total)
	for _, p := range r.UnexplainedMappings {
		what := strings.TrimSpace(fmt.Sprintf("%#x-%#x %s %s", p.Start, p.End, p.Perms, p.Path))
		if p.Start == 0 && p.End == 0 {
			what = "the rest"
		}
		if p.Note != "" {
			what += " (" + p.Note + ")"
		}
		t.Note("unexplained: %s resident of %s mapped: %s",
			table.FormatBytes(float64(p.ResidentBytes)), table.FormatBytes(float64(p.ReservedBytes)), what)
	}
	for _, s := range r.Warnings {
		t.Note("warning: %s", s)
	}
	return t
}

// share is 100 b / total; nil (absent) when total is 0.
func share(b, total int64) *float64 {
	if total == 0 {
		return nil
	}
	p := 100 * float64(b) / float64(total)
	return &p
}
