package main

import (
	"fmt"
	"io"
	"math"

	"memprobe/internal/table"
	"memprobe/outside/sites"
	"memprobe/schema"
)

// writeSitesDiff adds, where BASE and HEAD are each one probe exec --sites
// result, the allocation sites whose bytes changed in the alloc, peak or
// exit profile (sites.Compare): the site a build changed, by name, beside
// the metrics. Text and markdown only: the JSON diff stays one document.
func writeSitesDiff(w io.Writer, base, head *schema.Sites, format string) error {
	if base == nil || head == nil || format == "json" {
		return nil
	}
	changes, err := sites.Compare(base, head)
	if err != nil {
		return fmt.Errorf("diff: allocation sites: %w", err)
	}
	how := "exact (both at --sites-rate 1): any change is listed"
	if !base.Exact || !head.Exact {
		how = fmt.Sprintf("sampled (rates %d and %d B): changes past 20 %% and twice the larger rate are listed", base.RateBytes, head.RateBytes)
	}
	t := table.New(fmt.Sprintf("allocation sites that changed (%s)", how),
		table.Column{Name: "profile"}, table.Column{Name: "site"}, table.Column{Name: "base", Kind: table.Bytes},
		table.Column{Name: "head", Kind: table.Bytes}, table.Column{Name: "change"})
	for _, c := range changes {
		pct := "new"
		if !math.IsInf(c.Pct, 1) {
			pct = fmt.Sprintf("%+.1f %%", c.Pct)
		}
		t.Add(c.Kind, c.Site, c.BaseBytes, c.HeadBytes, pct)
	}
	if len(changes) == 0 {
		t.Note("none")
	}
	if _, err := fmt.Fprintln(w); err != nil {
		return err
	}
	return t.Render(w, table.Format(format))
}

// sitesOf is the sites of a side that is one probe exec --sites result
// (as read once by readDiffInput); nil for a directory, another kind of
// file, or a result without sites.
func sitesOf(in diffInput) *schema.Sites {
	if in.dir || len(in.files) != 1 {
		return nil
	}
	if r := in.files[0].Result; r != nil && r.Process != nil {
		return r.Process.Sites
	}
	return nil
}
