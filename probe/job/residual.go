package job

import (
	"fmt"
	"sort"

	"memprobe/probe/procfs"
)

// MappingShare is resident memory in one class of mappings, or in one
// large mapping, as /proc/self/smaps counts it.
type MappingShare struct {
	// Name says what it is: "[heap]", a file, or an anonymous range.
	Name string `json:"name"`
	// Class is c.brk_heap (glibc's main malloc arena), file.cow (pages of
	// private file mappings written to: .data/.bss, relocations),
	// stack.main, or anon.outside_go_arena (anonymous mappings outside
	// Go's heap arenas: Go's own metadata and its binary's .bss, and
	// memory C code mapped, such as BLAS buffers, glibc thread arenas and
	// thread stacks).
	Class          string `json:"class"`
	RssBytes       int64  `json:"rss_bytes"`
	AnonymousBytes int64  `json:"anonymous_bytes"`
	SizeBytes      int64  `json:"size_bytes"`
	Mappings       int    `json:"mappings"`
}

// residualMappings reads /proc/self/smaps and returns the resident memory
// that the Go runtime's classes do not describe: the brk heap, written
// pages of file mappings, the main stack, and the anonymous mappings that
// hold none of heapAddrs (the n largest one by one, the rest together).
// Mappings holding one of heapAddrs, addresses of Go heap objects, are Go's
// heap arenas: their resident bytes are returned as goArena. (Go 1.26
// randomises the heap's base address, so arenas cannot be told by address
// alone.) Clean file pages are left out: the reconciliation names them.
func residualMappings(fs procfs.FS, n int, heapAddrs []uintptr) (shares []MappingShare, goArena int64, err error) {
	ms, err := fs.ReadSmaps(procfs.Self)
	if err != nil {
		return nil, 0, err
	}
	shares, goArena = classify(ms, n, heapAddrs)
	return shares, goArena, nil
}

func classify(ms []procfs.Mapping, n int, heapAddrs []uintptr) ([]MappingShare, int64) {
	out := []MappingShare{}
	var goArena int64
	holdsHeap := func(m procfs.Mapping) bool {
		for _, a := range heapAddrs {
			if uint64(a) >= m.Start && uint64(a) < m.End {
				return true
			}
		}
		return false
	}
	byClass := map[string]*MappingShare{}
	var anon []procfs.Mapping
	add := func(class, name string, m procfs.Mapping, bytes uint64) {
		s, ok := byClass[class]
		if !ok {
			s = &MappingShare{Name: name, Class: class}
			byClass[class] = s
		}
		s.RssBytes += int64(bytes)
		s.AnonymousBytes += int64(m.AnonymousBytes)
		s.SizeBytes += int64(m.SizeBytes)
		s.Mappings++
	}
	for _, m := range ms {
		switch {
		case m.RssBytes == 0:
		case m.Path == "[heap]":
			add("c.brk_heap", "[heap] (glibc main malloc arena)", m, m.RssBytes)
		case m.Path == "[stack]":
			add("stack.main", "[stack] (main thread)", m, m.RssBytes)
		case m.Path != "" && m.Path[0] == '/':
			if m.AnonymousBytes > 0 {
				add("file.cow", "written pages of private file mappings", m, m.AnonymousBytes)
			}
		case m.Path == "" && holdsHeap(m):
			goArena += int64(m.RssBytes)
		case m.Path == "":
			anon = append(anon, m)
		}
	}
	for _, c := range []string{"c.brk_heap", "file.cow", "stack.main"} {
		if s, ok := byClass[c]; ok {
			out = append(out, *s)
		}
	}
	sort.SliceStable(anon, func(i, j int) bool { return anon[i].RssBytes > anon[j].RssBytes })
	var rest MappingShare
	for i, m := range anon {
		if i < n {
			out = append(out, MappingShare{
				Name:  fmt.Sprintf("anon %#x-%#x (%s mapped)", m.Start, m.End, mibf(int64(m.SizeBytes))),
				Class: "anon.outside_go_arena", RssBytes: int64(m.RssBytes), AnonymousBytes: int64(m.AnonymousBytes),
				SizeBytes: int64(m.SizeBytes), Mappings: 1,
			})
			continue
		}
		rest.RssBytes += int64(m.RssBytes)
		rest.AnonymousBytes += int64(m.AnonymousBytes)
		rest.SizeBytes += int64(m.SizeBytes)
		rest.Mappings++
	}
	if rest.Mappings > 0 {
		rest.Name = fmt.Sprintf("%d smaller anonymous mappings", rest.Mappings)
		rest.Class = "anon.outside_go_arena"
		out = append(out, rest)
	}
	return out, goArena
}
