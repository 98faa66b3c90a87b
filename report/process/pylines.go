package process

import (
	"fmt"
	"path/filepath"

	"memprobe/internal/table"
	"memprobe/schema"
)

// pymallocHintPct is the share of the bytes in use at the peak in
// pymalloc's arenas from which the report offers PYTHONMALLOC=malloc.
const pymallocHintPct = 20

// renderPyLines prints, for a Python program, the bytes in use at the
// peak and at exit by line of the program's own code (the innermost
// Python frame that is not the standard library's, an installed
// package's or a frozen module's), the view a Python user reads first;
// and, where pymalloc's arenas hold much of the peak, how to see each
// small object.
func renderPyLines(e *errWriter, heading func(string), render func(*table.Table), st *schema.Sites) {
	if st == nil || st.PyLines == nil {
		return
	}
	pl := st.PyLines
	how := "exact"
	if !st.Exact {
		how = "sampled estimates"
	}
	heading(fmt.Sprintf("Python lines of the program's own code (pid %d; %s; the sites below name the innermost frame, library code included)", st.PID, how))
	if len(pl.Lines) == 0 {
		e.line("no stack in use at the peak or at exit has a frame of the program's own code")
	} else {
		render(pyLinesTable(pl))
	}
	if pl.LibraryPeakBytes > 0 || pl.NativePeakBytes > 0 {
		e.line("at the peak, besides: %s in stacks of library or frozen code only (imports, a library's own work), %s in stacks with no Python frame (threads with no Python state, the interpreter's start and end)",
			iec(pl.LibraryPeakBytes), iec(pl.NativePeakBytes))
	}
	if hint := pymallocHint(pl); hint != "" {
		e.line("%s", hint)
	}
}

// pyLinesTable is the table of SitesPyLines' lines.
func pyLinesTable(pl *schema.SitesPyLines) *table.Table {
	sampled := false
	for _, x := range pl.Lines {
		sampled = sampled || x.PeakBytesSE > 0
	}
	cols := []table.Column{{Name: "at the peak", Kind: table.Bytes}}
	title := "in use by line of the program's code"
	if sampled {
		cols = append(cols, table.Column{Name: "± (1 s.e.)", Kind: table.Bytes})
		title += " (sampled: ± one standard error)"
	}
	cols = append(cols, table.Column{Name: "of peak", Kind: table.Percent, Decimals: 1},
		table.Column{Name: "at exit", Kind: table.Bytes}, table.Column{Name: "of exit", Kind: table.Percent, Decimals: 1},
		table.Column{Name: "line"}, table.Column{Name: "via (the innermost Python frame)"})
	tb := table.New(title, cols...)
	for _, x := range pl.Lines {
		line := fmt.Sprintf("%s:%d %s", filepath.Base(x.File), x.Line, x.Function)
		cells := []any{x.PeakBytes}
		if sampled {
			cells = append(cells, x.PeakBytesSE)
		}
		tb.Add(append(cells, x.PeakPct, x.ExitBytes, x.ExitPct, line, x.Via)...)
	}
	return tb
}

// pymallocHint says, where pymalloc's arenas hold at least
// pymallocHintPct of the peak, that small objects are charged to the
// line that made their arena, and how to see each one.
func pymallocHint(pl *schema.SitesPyLines) string {
	if pl.PeakBytes <= 0 || pl.PymallocPeakBytes*100 < pymallocHintPct*pl.PeakBytes {
		return ""
	}
	return fmt.Sprintf("pymalloc's arenas hold %s of the peak (%.0f %%): CPython's objects of 512 bytes and less come from 1 MiB arenas, each charged whole to the line that made it, not to the lines whose objects fill it. "+
		"PYTHONMALLOC=malloc in the program's environment gives each object a site of its own, at a cost: every small object then goes through malloc and the library's wrapper (%s)",
		iec(pl.PymallocPeakBytes), pct(pl.PymallocPeakBytes, pl.PeakBytes), pymallocCost)
}

// pymallocCost is what PYTHONMALLOC=malloc cost, measured
// (docs/python-sites.md).
const pymallocCost = "more time and memory than pymalloc: docs/python-sites.md measures it"
