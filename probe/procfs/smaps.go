package procfs

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"unicode"
)

// Mapping is one entry of /proc/<pid>/smaps: a virtual memory area and the
// page counts the kernel's walk found in it. Sizes are bytes.
type Mapping struct {
	// Start and End are the area's addresses, End exclusive.
	Start uint64 `json:"start"`
	End   uint64 `json:"end"`
	// Perms is the permission string, e.g. "rw-p".
	Perms string `json:"perms"`
	// Path is the mapped file, a pseudo-path such as "[heap]" or
	// "[stack]", or "" for an anonymous mapping.
	Path string `json:"path"`
	// SizeBytes is the area's size (Size).
	SizeBytes uint64 `json:"size_bytes"`
	// RssBytes is its resident part (Rss).
	RssBytes uint64 `json:"rss_bytes"`
	// PssBytes is its proportional share (Pss).
	PssBytes uint64 `json:"pss_bytes"`
	// PrivateDirtyBytes is resident, modified, unshared (Private_Dirty).
	PrivateDirtyBytes uint64 `json:"private_dirty_bytes"`
	// AnonymousBytes is resident anonymous memory (Anonymous), including
	// copied-on-write pages of a private file mapping.
	AnonymousBytes uint64 `json:"anonymous_bytes"`
	// SwapBytes is the swapped-out part (Swap).
	SwapBytes uint64 `json:"swap_bytes"`
}

// ReadSmaps reads and parses <root>/<pid>/smaps. The kernel walks every
// page table to produce it: on a large process it costs milliseconds.
func (fs FS) ReadSmaps(pid int) ([]Mapping, error) {
	path := fs.Path(pid, "smaps")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading smaps: %w", err)
	}
	return ParseSmaps(b, path)
}

// ParseSmaps parses the text of an smaps file; path names it in errors.
// Counter lines are "Key: <n> kB"; other lines after a header (VmFlags,
// THPeligible) are skipped. The result is never nil.
func ParseSmaps(b []byte, path string) ([]Mapping, error) {
	out := []Mapping{}
	var cur *Mapping
	for n := 1; len(b) > 0; n++ {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if len(line) == 0 {
			continue
		}
		if m, ok := parseSmapsHeader(line); ok {
			out = append(out, m)
			cur = &out[len(out)-1]
			continue
		}
		i := bytes.IndexByte(line, ':')
		if i <= 0 {
			return nil, &ParseError{path, n, fmt.Errorf("%w: neither a mapping header nor \"key:\": %q", ErrMalformed, line)}
		}
		if cur == nil {
			return nil, &ParseError{path, n, fmt.Errorf("%w: counter before the first mapping header", ErrMalformed)}
		}
		key, val := line[:i], bytes.TrimSpace(line[i+1:])
		var dst *uint64
		switch string(key) {
		case "Size":
			dst = &cur.SizeBytes
		case "Rss":
			dst = &cur.RssBytes
		case "Pss":
			dst = &cur.PssBytes
		case "Private_Dirty":
			dst = &cur.PrivateDirtyBytes
		case "Anonymous":
			dst = &cur.AnonymousBytes
		case "Swap":
			dst = &cur.SwapBytes
		default:
			continue
		}
		v, err := parseKB(key, val)
		if err != nil {
			return nil, &ParseError{path, n, err}
		}
		*dst = v
	}
	return out, nil
}

// parseSmapsHeader reads "start-end perms offset dev inode [path]".
func parseSmapsHeader(line []byte) (Mapping, bool) {
	f := bytes.Fields(line)
	if len(f) < 5 {
		return Mapping{}, false
	}
	lo, hi, ok := bytes.Cut(f[0], []byte("-"))
	if !ok {
		return Mapping{}, false
	}
	start, err1 := strconv.ParseUint(string(lo), 16, 64)
	end, err2 := strconv.ParseUint(string(hi), 16, 64)
	if err1 != nil || err2 != nil || end < start || len(f[1]) != 4 {
		return Mapping{}, false
	}
	m := Mapping{Start: start, End: end, Perms: string(f[1])}
	if len(f) > 5 {
		// The path is the rest of the line after the inode; it may hold
		// spaces. Fields are cut where bytes.Fields cuts them (any
		// Unicode space, not only ' ' and '\t': a '\v' in a damaged
		// file made the cut run off the line).
		rest := line
		for range 5 {
			rest = bytes.TrimLeftFunc(rest, unicode.IsSpace)
			if i := bytes.IndexFunc(rest, unicode.IsSpace); i >= 0 {
				rest = rest[i:]
			} else {
				rest = nil
			}
		}
		m.Path = string(bytes.TrimSpace(rest))
	}
	return m, true
}

// ReadSmapsFile parses an smaps file at any path (a saved copy, a fixture).
func ReadSmapsFile(path string) ([]Mapping, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading smaps: %w", err)
	}
	return ParseSmaps(b, path)
}
