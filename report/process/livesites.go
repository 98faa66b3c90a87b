package process

import (
	"fmt"
	"io"
	"path/filepath"

	"memprobe/internal/table"
	"memprobe/schema"
)

// LiveSites writes the live view's section of an exec --sites watch
// (the sites with the most sampled bytes in use, read from the records
// as the program writes them): a line of the totals, then one a
// site, each within width columns (below 60 without the objects); err,
// a file the reader could not read, is said last.
func LiveSites(w io.Writer, width int, t schema.LiveSites, err error) {
	how := "sampled"
	if t.Rate == 1 {
		how = "every block"
	}
	switch {
	case t.Rate == 0:
		fmt.Fprintf(w, "sites in use: no records yet\n")
	case t.Processes == 0:
		fmt.Fprintf(w, "sites in use: none, the program's images have ended (%s)\n", how)
	default:
		plural := "s"
		if t.Sites == 1 {
			plural = ""
		}
		fmt.Fprintf(w, "sites in use: %s in %d site%s (%s, as of the last flush)\n", iec(t.Bytes), t.Sites, plural, how)
	}
	narrow := width < 60
	row := func(bytes, objects, site string) {
		l := fmt.Sprintf("  %10s %9s  %s", bytes, objects, site)
		if narrow {
			l = fmt.Sprintf("  %10s  %s", bytes, site)
		}
		if r := []rune(l); len(r) > width {
			l = string(r[:width-1]) + "…"
		}
		fmt.Fprintln(w, l)
	}
	if len(t.Top) > 0 {
		row("bytes", "objects", "function (file:line)")
	}
	for _, s := range t.Top {
		site := s.Function
		if s.File != "" {
			site += fmt.Sprintf(" (%s:%d)", filepath.Base(s.File), s.Line)
		}
		row(iec(s.Bytes), table.GroupDigits(fmt.Sprint(s.Objects)), site)
	}
	if t.Unnamed > 0 {
		fmt.Fprintf(w, "  and %s in %d stacks not named yet\n", iec(t.UnnamedBytes), t.Unnamed)
	}
	if t.BehindBytes > 0 {
		fmt.Fprintf(w, "  records not read yet: %s (the view is behind)\n", iec(t.BehindBytes))
	}
	if err != nil {
		fmt.Fprintf(w, "sites: %v\n", err)
	}
}
