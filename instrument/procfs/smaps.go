package procfs

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
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
	b, err := ReadWhole(path, 0)
	if err != nil {
		return nil, fmt.Errorf("reading smaps: %w", err)
	}
	return ParseSmaps(b, path)
}

// ReadWhole reads a file of /proc in as few reads as it can: into hint
// bytes at first (256 KiB where hint is smaller), doubled while full. The
// kernel prints maps and smaps a buffer at a time, each read resuming at
// the address the last one ended, so a process that maps or grows an
// area between reads is seen half before and half after (and an area
// twice, ParseSmaps): os.ReadFile's reads of 512 bytes and up gave an
// smaps with an area twice in 49 of 300 reads of a program growing its
// heap, one read of 1 MiB in none.
func ReadWhole(path string, hint int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, 0, max(hint, 256<<10))
	for {
		if len(b) == cap(b) {
			b = slices.Grow(b, cap(b))
		}
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF || err == nil && n == 0 {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// ParseSmaps parses the text of an smaps file; path names it in errors.
// Counter lines are "Key: <n> kB"; other lines after a header (VmFlags,
// THPeligible) are skipped. The result is never nil.
//
// The kernel prints smaps a buffer at a time and resumes each read at the
// address where the last one ended, so an area that grew in between (a
// brk heap) is printed twice, from the same start: an area that overlaps
// earlier ones replaces them, the later reading being the newer. (sqlite3
// read a 117 MiB [heap] twice, and its brk part as 229 MiB of an RSS of
// 150 MiB.)
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
			for len(out) > 0 && out[len(out)-1].End > m.Start && out[len(out)-1].Start < m.End {
				out = out[:len(out)-1]
			}
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
