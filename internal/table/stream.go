package table

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Stream writes a text table a row at a time, as the rows come (a
// progress log): the header on NewStream, each row on Row. Columns cannot
// be sized to rows not seen yet, so each is as wide as its header or its
// Width, whichever is more; a longer value widens its row only.
//
// Unlike Render, a Stream does not go through tablewriter: it writes rows
// between training steps, where the probe counts allocations by site, and
// tablewriter makes a few hundred small objects per row (some of them
// runtime-internal, which the count would charge to the Go runtime). A row
// here costs its cells' strings and one line.
type Stream struct {
	w     io.Writer
	cols  []Column
	width []int
	line  strings.Builder
	err   error
}

// NewStream writes the title (if any) and the header of a streamed text
// table to w. It fails only without columns: an error writing to w is
// returned by Row and Close (a progress log may go on without it).
func NewStream(w io.Writer, title string, cols ...Column) (*Stream, error) {
	if len(cols) == 0 {
		return nil, fmt.Errorf("stream %q: no columns", title)
	}
	s := &Stream{w: w, cols: cols, width: make([]int, len(cols))}
	header := make([]string, len(cols))
	for i, c := range cols {
		header[i] = c.header(Text)
		s.width[i] = max(utf8.RuneCountInString(header[i]), c.Width)
	}
	if title != "" {
		s.write(title + "\n")
	}
	s.writeRow(header)
	return s, nil
}

// Row writes one row. Missing trailing cells are absent ("-").
func (s *Stream) Row(cells ...any) error {
	if len(cells) > len(s.cols) {
		return fmt.Errorf("stream: %d cells for %d columns", len(cells), len(s.cols))
	}
	row := make([]string, len(s.cols))
	for i, c := range s.cols {
		var v any
		if i < len(cells) {
			v = cells[i]
		}
		str, err := c.cell(v, Text)
		if err != nil {
			return err
		}
		row[i] = str
	}
	s.writeRow(row)
	return s.err
}

// Close ends the stream and returns the first error writing it.
func (s *Stream) Close() error { return s.err }

// writeRow pads each cell to its column's width (two spaces between
// columns, numbers right-aligned) and writes the line without trailing
// spaces.
func (s *Stream) writeRow(cells []string) {
	s.line.Reset()
	for i, c := range cells {
		if i > 0 {
			s.line.WriteString("  ")
		}
		pad := max(s.width[i]-utf8.RuneCountInString(c), 0)
		if s.cols[i].right() {
			s.line.WriteString(strings.Repeat(" ", pad))
			s.line.WriteString(c)
		} else {
			s.line.WriteString(c)
			s.line.WriteString(strings.Repeat(" ", pad))
		}
	}
	s.write(strings.TrimRight(s.line.String(), " ") + "\n")
}

func (s *Stream) write(str string) {
	if _, err := io.WriteString(s.w, str); err != nil && s.err == nil {
		s.err = err
	}
}
