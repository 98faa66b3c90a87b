package schema

// The reconciliation of a process's RSS and VSZ in named parts
// (instrument/reconcile computes it; RSSReconciliation and Snapshot hold it).

// ReconciliationPart is a named share of RSS and of VSZ.
type ReconciliationPart struct {
	Name string `json:"name"`
	// Bytes is the resident part (RSS).
	Bytes int64 `json:"bytes"`
	// ReservedBytes is its address space (VSZ): mapped, touched or not.
	ReservedBytes int64 `json:"reserved_bytes"`
	// Count is what the part counts: mappings, stacks, arenas.
	Count int    `json:"count"`
	Note  string `json:"note"`
}

// MallocHeap is one of glibc's 64 MiB malloc heaps at a walk: an arena
// other than the main one lives in one or more.
type MallocHeap struct {
	StartAddr uint64 `json:"start_addr"`
	// ReadWriteBytes is the heap's read-write head (what its arena grew
	// it to); ResidentBytes what of the heap is resident.
	ReadWriteBytes int64 `json:"read_write_bytes"`
	ResidentBytes  int64 `json:"resident_bytes"`
	// ArenaAddr is its arena (heap_info.ar_ptr) where the heaps' headers
	// were read (GlibcArenasExact); absent otherwise.
	ArenaAddr uint64 `json:"arena_addr,omitempty"`
}

// MappingPiece is an address range of one mapping, or what is left of it.
type MappingPiece struct {
	Start         uint64 `json:"start"`
	End           uint64 `json:"end"`
	Perms         string `json:"perms"`
	Path          string `json:"path"`
	ResidentBytes int64  `json:"resident_bytes"`
	ReservedBytes int64  `json:"reserved_bytes"`
	Note          string `json:"note,omitempty"`
}

// ThreadStack is one pthread stack found in the address space.
type ThreadStack struct {
	Lo uint64 `json:"lo"`
	Hi uint64 `json:"hi"`
	// TID is the thread whose stack pointer is in it; 0 if none was seen
	// (running, or a stack glibc keeps after its thread exited).
	TID           int   `json:"tid"`
	ReservedBytes int64 `json:"reserved_bytes"`
	GuardBytes    int64 `json:"guard_bytes"`
	ResidentBytes int64 `json:"resident_bytes"`
	// Source is how it was found: pthread_getattr_np, syscall sp, guard
	// shape, name.
	Source string `json:"source"`
}

// FileShare is one file's mappings.
type FileShare struct {
	Path string `json:"path"`
	// ResidentBytes are clean (or shared) pages of the file.
	ResidentBytes int64 `json:"resident_bytes"`
	// COWBytes are pages written in its private mappings: anonymous.
	COWBytes      int64 `json:"cow_bytes"`
	ReservedBytes int64 `json:"reserved_bytes"`
	// BSS*Bytes are the anonymous mapping directly above its data.
	BSSResidentBytes int64 `json:"bss_resident_bytes"`
	BSSReservedBytes int64 `json:"bss_reserved_bytes"`
	Mappings         int   `json:"mappings"`
}

// Reconciliation is RSS and VSZ split into parts (reconcile.Compute):
// Σ Parts' Bytes + UnexplainedBytes == RSSBytes and Σ ReservedBytes +
// UnexplainedReservedBytes == VSZBytes. Slices are never nil.
type Reconciliation struct {
	RSSBytes int64 `json:"rss_bytes"`
	VSZBytes int64 `json:"vsz_bytes"`
	// PSSBytes is Σ Pss over smaps; 0 without smaps.
	PSSBytes int64 `json:"pss_bytes"`
	// SmapsRSSBytes and SmapsSizeBytes are Σ Rss and Σ Size over smaps:
	// the page walk's RSS and VSZ, beside the status counters.
	SmapsRSSBytes  int64                `json:"smaps_rss_bytes"`
	SmapsSizeBytes int64                `json:"smaps_size_bytes"`
	Parts          []ReconciliationPart `json:"parts"`
	// UnexplainedBytes is RSS − Σ Parts; negative when the parts claim
	// more than is resident.
	UnexplainedBytes int64 `json:"unexplained_bytes"`
	// UnexplainedReservedBytes is VSZ − Σ reserved bytes.
	UnexplainedReservedBytes int64  `json:"unexplained_reserved_bytes"`
	UnexplainedNote          string `json:"unexplained_note"`
	// UnexplainedMappings are the resident anonymous ranges no source
	// claimed, largest first (at most 8, then one line for the rest).
	UnexplainedMappings []MappingPiece `json:"unexplained_mappings"`
	// UnexplainedAll is every one of those ranges, not written: for a
	// join made in the process that walked (exec --sites).
	UnexplainedAll []MappingPiece `json:"-"`
	// ThreadStacks lists every pthread stack found (not the main one).
	ThreadStacks []ThreadStack `json:"thread_stacks"`
	// PthreadStacks is len(ThreadStacks); ThreadStack*Bytes sum them:
	// reserved is address space, resident is memory.
	PthreadStacks            int   `json:"pthread_stacks"`
	ThreadStackReservedBytes int64 `json:"thread_stack_reserved_bytes"`
	ThreadStackGuardBytes    int64 `json:"thread_stack_guard_bytes"`
	ThreadStackResidentBytes int64 `json:"thread_stack_resident_bytes"`
	// GlibcArenas counts glibc malloc arenas other than the main one
	// ([heap]); it is also c.malloc.arenas' count. An arena lives in one
	// or more 64 MiB heaps (GlibcHeaps): where the process's memory can
	// be read (reconcile's Input.ReadMemory) the heaps' headers say which
	// arena each belongs to (GlibcArenasExact); otherwise a heap whose
	// read-write part has grown to within a small slack of 64 MiB is
	// taken as one its arena has outgrown, followed by another heap of
	// the same arena, and the arenas are the other heaps (at least 1 when
	// there are heaps).
	GlibcArenas int `json:"glibc_arenas"`
	// GlibcHeaps counts glibc's 64 MiB malloc heaps found (by shape or
	// name): what GlibcArenas counted before arenas were told apart.
	// Absent from the JSON when 0, as GlibcArenasExact when false, so
	// that results without glibc heaps read as before.
	GlibcHeaps int `json:"glibc_heaps,omitempty"`
	// GlibcArenasExact says GlibcArenas comes from the heaps' headers
	// (heap_info.ar_ptr), not from the estimate.
	GlibcArenasExact bool `json:"glibc_arenas_exact,omitempty"`
	// MallocHeaps are those heaps (c.malloc.arenas), one by one: what
	// probe exec --sites splits into in use and free but resident by
	// heap. Absent from the JSON where there are none.
	MallocHeaps []MallocHeap `json:"malloc_heaps,omitempty"`
	// GoArenaRSSBytes is resident in Go's heap arena mappings (smaps);
	// GoMappedNotResidentBytes is what Go's classes count mapped (total −
	// released) beyond what is resident in Go's arenas and the mappings
	// the kernel names as Go's.
	GoArenaRSSBytes          int64 `json:"go_arena_rss_bytes"`
	GoMappedNotResidentBytes int64 `json:"go_mapped_not_resident_bytes"`
	// ProbableGoMetadataBytes is resident in unclaimed anonymous mappings
	// that fit Go's metadata classes by size alone (smallest first, within
	// what those classes count beyond Go's arenas and named mappings):
	// probably Go's, but nothing says so, so they are part of
	// UnexplainedBytes (marked in UnexplainedMappings).
	// ProbableGoMetadataBudgetLeftBytes is what the classes count beyond
	// them: Go metadata that may be resident in no mapping found.
	ProbableGoMetadataBytes           int64 `json:"probable_go_metadata_bytes"`
	ProbableGoMetadataBudgetLeftBytes int64 `json:"probable_go_metadata_budget_left_bytes"`
	// Files are the mapped files, most resident first.
	Files    []FileShare `json:"files"`
	Warnings []string    `json:"warnings"`
}
