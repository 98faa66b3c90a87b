package memmodel

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Render writes rows as a plain-text table: component, expected, measured
// and peak bytes, the difference in percent, then "!" and the reason on a
// finding or the model's formula otherwise; a total line closes it.
func Render(w io.Writer, rows []Row) error {
	e, m, p := Totals(rows)
	var td *float64
	if e != 0 {
		td = diffPct(m, e)
	}
	type line struct {
		c          [5]string
		flag, note string
	}
	lines := []line{{c: [5]string{"COMPONENT", "EXPECTED_B", "MEASURED_B", "PEAK_B", "DIFF_%"}, note: "NOTE"}}
	for _, r := range rows {
		l := line{c: [5]string{r.Component, itoa(r.ExpectedBytes), itoa(r.MeasuredBytes), itoa(r.PeakBytes), pct(r.DiffPct)}, note: r.Formula}
		if r.Finding {
			l.flag, l.note = "!", r.Note
		}
		lines = append(lines, l)
	}
	lines = append(lines, line{c: [5]string{"total", itoa(e), itoa(m), itoa(p), pct(td)}})
	var wd [5]int
	for _, l := range lines {
		for i, s := range l.c {
			wd[i] = max(wd[i], len(s))
		}
	}
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "%-*s  %*s  %*s  %*s  %*s %1s  %s", wd[0], l.c[0], wd[1], l.c[1], wd[2], l.c[2], wd[3], l.c[3], wd[4], l.c[4], l.flag, l.note)
		s := strings.TrimRight(b.String(), " ")
		b.Reset()
		if _, err := io.WriteString(w, s+"\n"); err != nil {
			return err
		}
	}
	return nil
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func pct(d *float64) string {
	if d == nil {
		return "-"
	}
	return strconv.FormatFloat(*d, 'f', 2, 64)
}
