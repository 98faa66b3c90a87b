package planfile

import (
	"regexp"
	"strings"

	"github.com/BurntSushi/toml"
)

// locator finds the line of a key in a plan file's text. The TOML
// decoder keeps key positions to itself, so the locator reads the lines
// as the format lays them out: table headers ([vars], [[phase]]) and
// "key = value" lines. A key inside an inline table ({ metric = ... })
// is found as the key that holds the table.
type locator struct {
	keys    []keyLine
	headers []keyLine // key is the table's name
}

type keyLine struct {
	table string
	index int // the array table's element (0 for a plain table)
	key   string
	line  int
}

var keyRE = regexp.MustCompile(`^\s*("[^"]*"|'[^']*'|[A-Za-z0-9_-]+)\s*=`)

func newLocator(b []byte) *locator {
	l := &locator{}
	table, count := "", map[string]int{}
	for i, line := range strings.Split(string(b), "\n") {
		s := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(s, "[["):
			name := strings.TrimSpace(strings.Trim(strings.SplitN(s, "#", 2)[0], "[] \t"))
			table = name
			l.headers = append(l.headers, keyLine{table: name, index: count[name], line: i + 1})
			count[name]++
		case strings.HasPrefix(s, "["):
			name := strings.TrimSpace(strings.Trim(strings.SplitN(s, "#", 2)[0], "[] \t"))
			table = name
			l.headers = append(l.headers, keyLine{table: name, line: i + 1})
		default:
			m := keyRE.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			idx := 0
			if n := count[table]; n > 0 {
				idx = n - 1
			}
			l.keys = append(l.keys, keyLine{table: table, index: idx, key: strings.Trim(m[1], `"'`), line: i + 1})
		}
	}
	return l
}

// top is the line of a top-level key (0: not found).
func (l *locator) top(key string) int { return l.in("", 0, key) }

// in is the line of key in element index of table (0: not found).
func (l *locator) in(table string, index int, key string) int {
	for _, k := range l.keys {
		if k.table == table && k.index == index && k.key == key {
			return k.line
		}
	}
	return 0
}

// header is the line of element index of table's header (0: none).
func (l *locator) header(table string, index int) int {
	for _, h := range l.headers {
		if h.table == table && h.index == index {
			return h.line
		}
	}
	return 0
}

// key is the line of a key the decoder reports (MetaData.Undecoded),
// whose path has no array index: the first line, in file order, of its
// last element under its table, else of an element above it (the key of
// an inline table that holds it), else of its table's header.
func (l *locator) key(k toml.Key) int {
	if len(k) == 1 {
		if n := l.top(k[0]); n > 0 {
			return n
		}
		return l.header(k[0], 0)
	}
	table := k[0]
	for j := len(k) - 1; j >= 1; j-- {
		for _, e := range l.keys {
			if e.table == table && e.key == k[j] {
				return e.line
			}
		}
	}
	for _, h := range l.headers {
		if h.table == strings.Join(k, ".") || h.table == table {
			return h.line
		}
	}
	return 0
}
