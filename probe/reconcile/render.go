package reconcile

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Render writes r as one plain-text table, each part's resident bytes
// (RSS) beside its reserved address space (VSZ), then the unexplained
// mappings and any warnings.
func Render(w io.Writer, r Reconciliation) error {
	// Right-align numbers by padding them to a common width; tabwriter
	// aligns the columns.
	rows := append([]Part{}, r.Parts...)
	rows = append(rows, Part{Name: "unexplained", Bytes: r.UnexplainedBytes, ReservedBytes: r.UnexplainedReservedBytes, Note: r.UnexplainedNote})
	wb, wm, wv, wvm := len("RESIDENT_B"), len("MiB"), len("RESERVED_B"), len("MiB")
	for _, p := range append(rows, Part{Bytes: r.RSSBytes, ReservedBytes: r.VSZBytes}) {
		wb = max(wb, len(strconv.FormatInt(p.Bytes, 10)))
		wm = max(wm, len(mib(p.Bytes)))
		wv = max(wv, len(strconv.FormatInt(p.ReservedBytes, 10)))
		wvm = max(wvm, len(mib(p.ReservedBytes)))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(name string, b, v int64, n, note string) {
		fmt.Fprintf(tw, "%s\t%*d\t%*s\t%6s\t%*d\t%*s\t%6s\t%4s\t%s\n", name, wb, b, wm, mib(b), pct(b, r.RSSBytes),
			wv, v, wvm, mib(v), pct(v, r.VSZBytes), n, note)
	}
	fmt.Fprintf(tw, "PART\t%*s\t%*s\t%6s\t%*s\t%*s\t%6s\t%4s\tNOTE\n", wb, "RESIDENT_B", wm, "MiB", "%RSS", wv, "RESERVED_B", wvm, "MiB", "%VSZ", "N")
	for _, p := range rows {
		n := ""
		if p.Count > 0 {
			n = strconv.Itoa(p.Count)
		}
		row(p.Name, p.Bytes, p.ReservedBytes, n, p.Note)
	}
	total := "VmRSS, VmSize"
	if r.PSSBytes != 0 {
		total += fmt.Sprintf("; PSS %d B (%s MiB); smaps Σ Rss %d B, Σ Size %d B", r.PSSBytes, mib(r.PSSBytes), r.SmapsRSSBytes, r.SmapsSizeBytes)
	}
	row("= total", r.RSSBytes, r.VSZBytes, "", total)
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range r.UnexplainedMappings {
		what := strings.TrimSpace(fmt.Sprintf("%#x-%#x %s %s", p.Start, p.End, p.Perms, p.Path))
		if p.Start == 0 && p.End == 0 {
			what = "the rest"
		}
		if p.Note != "" {
			what += " (" + p.Note + ")"
		}
		if _, err := fmt.Fprintf(w, "unexplained: %s MiB resident of %s MiB mapped: %s\n", mib(p.ResidentBytes), mib(p.ReservedBytes), what); err != nil {
			return err
		}
	}
	for _, s := range r.Warnings {
		if _, err := fmt.Fprintf(w, "warning: %s\n", s); err != nil {
			return err
		}
	}
	return nil
}

func mib(b int64) string { return strconv.FormatFloat(float64(b)/(1<<20), 'f', 2, 64) }

func pct(b, total int64) string {
	if total == 0 {
		return "-"
	}
	return strconv.FormatFloat(100*float64(b)/float64(total), 'f', 1, 64)
}
