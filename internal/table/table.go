// Package table is the one renderer of every table memprobe prints: the
// model against the ledger, the RSS reconciliation, allocations by site,
// the step log, `probe decode`'s modes, the phase list, before/after job
// tables and the bench-trainer table.
//
// A caller builds a Table — an optional title, typed columns, rows of
// values, optional notes — and renders it in one of three formats:
//
//   - text: aligned plain text for terminals, no borders, two spaces
//     between columns, no trailing spaces;
//   - markdown: a GitHub pipe table (title and notes as paragraphs);
//   - csv: a header line and the rows, nothing else (no title, no notes),
//     numbers without digit groups and bytes as exact integers.
//
// The column's Kind decides how a value is written, so that units are the
// same in every table: a Bytes column shows IEC units in text and markdown
// ("126.1 MiB", "8 KiB", "512 B"; an integer means exact) and exact bytes
// in CSV, whose header then says "(B)". A fixed unit goes in the header,
// never in the values: "diff (%)", "throughput (tokens/s)". Numbers are
// right-aligned, text left-aligned. An absent value (nil, a nil pointer,
// NaN) is "-".
//
// Text and markdown are laid out by github.com/olekukonko/tablewriter;
// CSV by encoding/csv. The package imports nothing from memprobe.
package table

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// Format is an output format: text, markdown or csv.
type Format string

const (
	Text     Format = "text"
	Markdown Format = "markdown"
	CSV      Format = "csv"
)

// Formats lists the formats, for flag help.
func Formats() []Format { return []Format{Text, Markdown, CSV} }

// ParseFormat checks a format name.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats() {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("format %q: not one of text, markdown, csv", s)
}

// Kind is what a column holds, and so how its values are written.
type Kind int

const (
	// String is text, written as is. Any value with a String method, or
	// any other value, is written with fmt.
	String Kind = iota
	// Int is a count: digit groups ("4,973,568") in text and markdown.
	Int
	// Bytes is a byte count: IEC units in text and markdown, exact bytes in
	// CSV.
	Bytes
	// Percent is a percentage with Decimals decimals; the header says "(%)".
	Percent
	// Float is a number with Decimals decimals: losses, ratios.
	Float
	// Rate is a quantity per unit of something (tokens/s, allocs/step), with
	// Decimals decimals and digit groups; Unit names it in the header.
	Rate
	// Duration is a time span in nanoseconds (a time.Duration, or any
	// integer or float of nanoseconds): human units in text and markdown
	// ("1.64 s", "35.2 ms", "812 µs", FormatDuration), exact nanoseconds
	// in CSV, whose header then says "(ns)".
	Duration
)

// Align is a column's alignment.
type Align int

const (
	// Auto aligns String columns left and numbers right.
	Auto Align = iota
	Left
	Right
)

// Column describes one column.
type Column struct {
	Name string
	Kind Kind
	// Unit is shown in the header as "Name (Unit)" (just Unit when Name is
	// empty). A Percent column's unit is "%"; a Bytes column carries its
	// units in its values, and "(B)" in CSV.
	Unit     string
	Decimals int // Percent, Float and Rate
	Align    Align
	// Width is the content width a Stream gives the column (at least the
	// header's). Tables size columns to their content and ignore it.
	Width int
	// MaxWidth, when more than 0, wraps a longer text cell at spaces onto
	// more lines in text, so that a long text (a change, a claim) does
	// not push the columns after it off a terminal; a word longer than it
	// stays whole. Markdown, CSV and Cells keep the cell on one line.
	MaxWidth int
}

// Table is a title, columns, rows and notes. Build it with New and Add, or
// fill the fields.
type Table struct {
	// Title is a line above the table (text, markdown; not in CSV).
	Title   string
	Columns []Column
	// Rows hold one value per column: a string in any column (written as
	// is), a number in a numeric one, nil or a nil pointer for absent.
	Rows [][]any
	// Notes are lines below the table (text, markdown; not in CSV).
	Notes []string
}

// New returns a table with a title (may be empty) and columns.
func New(title string, cols ...Column) *Table {
	return &Table{Title: title, Columns: cols}
}

// Add appends a row. Missing trailing cells are absent ("-").
func (t *Table) Add(cells ...any) { t.Rows = append(t.Rows, cells) }

// Note appends a line below the table.
func (t *Table) Note(format string, args ...any) {
	t.Notes = append(t.Notes, fmt.Sprintf(format, args...))
}

// header is the column's header in f.
func (c Column) header(f Format) string {
	unit := c.Unit
	switch {
	case c.Kind == Percent && unit == "":
		unit = "%"
	case c.Kind == Bytes:
		unit = ""
		if f == CSV {
			unit = "B"
		}
	case c.Kind == Duration:
		unit = ""
		if f == CSV {
			unit = "ns"
		}
	}
	switch {
	case unit == "":
		return c.Name
	case c.Name == "":
		return unit
	}
	return c.Name + " (" + unit + ")"
}

// Alignment is the column's alignment with Auto decided: Left for a String
// column, Right for numbers, unless Align says otherwise. Render aligns
// the column so; a caller that lays out Cells itself (an HTML page) does
// the same.
func (c Column) Alignment() Align {
	if c.Align != Auto {
		return c.Align
	}
	if c.Kind == String {
		return Left
	}
	return Right
}

func (c Column) right() bool { return c.Alignment() == Right }

// Absent is how a missing value is written.
const Absent = "-"

// cell writes v as column c holds it in format f.
func (c Column) cell(v any, f Format) (string, error) {
	if v == nil {
		return Absent, nil
	}
	if s, ok := v.(string); ok {
		return s, nil
	}
	if c.Kind == String {
		return fmt.Sprint(v), nil
	}
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return Absent, nil
		}
		rv = rv.Elem()
	}
	var (
		i     int64
		u     uint64
		x     float64
		isInt bool
		isU   bool
	)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i, isInt = rv.Int(), true
		x = float64(i)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		u, isU = rv.Uint(), true
		x = float64(u)
		if u <= math.MaxInt64 {
			i, isInt, isU = int64(u), true, false
		}
	case reflect.Float32, reflect.Float64:
		x = rv.Float()
		if math.IsNaN(x) {
			return Absent, nil
		}
	case reflect.String:
		return rv.String(), nil
	default:
		return "", fmt.Errorf("column %q: a %T is not a number", c.Name, v)
	}
	human := f != CSV
	switch c.Kind {
	case Duration:
		if human {
			return FormatDuration(x), nil
		}
		return strconv.FormatFloat(math.Round(x), 'f', 0, 64), nil
	case Int, Bytes:
		if !isInt && !isU {
			if x != math.Trunc(x) || math.IsInf(x, 0) {
				return "", fmt.Errorf("column %q: %v is not an integer", c.Name, x)
			}
			i, isInt = int64(x), true
		}
		if isU {
			s := strconv.FormatUint(u, 10)
			if human && c.Kind == Bytes {
				return FormatBytes(float64(u)), nil
			}
			if human {
				s = GroupDigits(s)
			}
			return s, nil
		}
		if c.Kind == Bytes && human {
			return FormatBytes(float64(i)), nil
		}
		s := strconv.FormatInt(i, 10)
		if human {
			s = GroupDigits(s)
		}
		return s, nil
	default: // Percent, Float, Rate
		s := strconv.FormatFloat(x, 'f', c.Decimals, 64)
		if strings.Trim(s, "-0.") == "" {
			s = strings.TrimPrefix(s, "-") // no "-0.00"
		}
		if human && c.Kind == Rate {
			s = GroupDigits(s)
		}
		return s, nil
	}
}

// GroupDigits puts commas between groups of three digits of the integer
// part of a formatted number ("-1234.5" -> "-1,234.5").
func GroupDigits(s string) string {
	sign := ""
	if strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") {
		sign, s = s[:1], s[1:]
	}
	intPart, frac := s, ""
	if k := strings.IndexByte(s, '.'); k >= 0 {
		intPart, frac = s[:k], s[k:]
	}
	if len(intPart) <= 3 || strings.ContainsAny(intPart, "InfNa") {
		return sign + s
	}
	var b strings.Builder
	for k, r := range intPart {
		if k > 0 && (len(intPart)-k)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return sign + b.String() + frac
}

// FormatDuration writes a span of ns nanoseconds in the largest unit
// that keeps the value at 1 or more: "812 ns", "35.2 ms", "1.64 s", with
// two decimals below 10, one below 100 and none from 100 on; a minute or
// more as "2 min 05 s", an hour or more as "1 h 02 min". Step times and
// other durations in tables read like sizes.
func FormatDuration(ns float64) string {
	if math.IsNaN(ns) {
		return Absent
	}
	sign := ""
	if ns < 0 {
		sign, ns = "-", -ns
	}
	const sec = 1e9
	switch {
	case math.Round(ns/sec) >= 3600:
		m := int64(math.Round(ns / (60 * sec)))
		return fmt.Sprintf("%s%d h %02d min", sign, m/60, m%60)
	case math.Round(ns/sec) >= 60:
		s := int64(math.Round(ns / sec))
		return fmt.Sprintf("%s%d min %02d s", sign, s/60, s%60)
	}
	units := []string{"ns", "µs", "ms", "s"}
	k := 0
	for ns >= 1000 && k < len(units)-1 {
		ns /= 1000
		k++
	}
	dec := 0
	switch {
	case k == 0:
	case ns < 10:
		dec = 2
	case ns < 100:
		dec = 1
	}
	s := strconv.FormatFloat(ns, 'f', dec, 64)
	switch s { // rounded up past a bound of decimals
	case "10.00":
		s = "10.0"
	case "100.0":
		s = "100"
	}
	if k < len(units)-1 && s == "1000" { // rounded up to the next unit
		s, k = "1.00", k+1
	}
	return sign + s + " " + units[k]
}

var iec = []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}

// FormatBytes writes a byte count in IEC units: "512 B", "8 KiB" (exact),
// "8.00 KiB" (not exact: two decimals below 10, one from 10 on),
// "126.1 MiB". Text in tables and progress lines uses it so that sizes
// read alike everywhere.
func FormatBytes(n float64) string {
	if math.IsNaN(n) {
		return Absent
	}
	return formatIEC(n, true, 2)
}

// FormatBytesShort writes a byte count in IEC units with at most one
// decimal: "504 MiB", "12 KiB" (exact), "1.9 MiB", "2.0 MiB" (not exact),
// "512 B". The diagnoses and notes of probe exec and the reconciliation
// use it in running text.
func FormatBytesShort(b int64) string { return formatIEC(float64(b), true, 1) }

// FormatBytesFixed writes a byte count in IEC units with one decimal,
// exact or not: "256.0 MiB", "1.2 GiB", "512 B". The memory-limit
// messages of probe train and probe run use it, and tests and scripts
// match them as written.
func FormatBytesFixed(b int64) string { return formatIEC(float64(b), false, 1) }

// formatIEC writes n in the largest IEC unit that keeps the value at 1 or
// more: without decimals below 1024 B or, when whole, for an exact value;
// otherwise with small decimals below 10 and one from 10 on.
func formatIEC(n float64, whole bool, small int) string {
	sign := ""
	if n < 0 {
		sign, n = "-", -n
	}
	if n < 1024 {
		return sign + strconv.FormatFloat(math.Round(n), 'f', 0, 64) + " B"
	}
	k := 0
	v := n
	for v >= 1024 && k < len(iec)-1 {
		v /= 1024
		k++
	}
	if whole && v == math.Trunc(v) {
		return sign + strconv.FormatFloat(v, 'f', 0, 64) + " " + iec[k]
	}
	dec := 1
	if v < 10 {
		dec = small
	}
	s := strconv.FormatFloat(v, 'f', dec, 64)
	if s == "10.00" {
		s = "10.0"
	}
	if s == "1024.0" && k < len(iec)-1 { // rounded up to the next unit
		s, k = strconv.FormatFloat(1, 'f', small, 64), k+1
	}
	return sign + s + " " + iec[k]
}
