package schema

// Allocation sites of a program watched from outside (probe exec --sites;
// outside/sites fills these, Process.Sites holds them).

// Kinds of SitesProfile.
const (
	SitesAlloc = "alloc" // every sampled allocation: objects and bytes
	SitesPeak  = "peak"  // in use when the sampled in-use bytes peaked
	SitesExit  = "exit"  // in use at exit: leaks
)

// Sites is what the allocation-site recorder saw. Byte and object
// figures are estimates scaled from the samples (exact when RateBytes is
// 1). Slices are never nil.
type Sites struct {
	// RateBytes is the mean sampling interval in bytes; 1 records every
	// allocation (Exact).
	RateBytes int64 `json:"rate_bytes"`
	Exact     bool  `json:"exact"`
	// PID is the process the headline figures are of: the program
	// started (its last image, after any execve).
	PID int `json:"pid"`
	// PeakInUseBytes is the most bytes allocated and not yet freed at
	// one moment (C allocator blocks and the program's own anonymous
	// mmaps; not its PROT_NONE ones, address space reserved, where only
	// what it maps read-write over them counts), PeakAtMs when, in milliseconds since the image started.
	// PeakSource says how it was had: "replay" (rate 1: every block, the
	// bytes asked for), "counted" (above rate 1: the library's count of
	// every block by its usable size, at most 128 KiB a thread behind,
	// scaled by the sampled blocks' bytes asked for over their usable
	// bytes, plus the sampled estimate of the program's own mappings), or
	// "sampled" (the
	// largest sampled estimate, biased high, where the allocator gives no
	// usable size). ExitInUseBytes is had the same way.
	PeakInUseBytes   int64   `json:"peak_in_use_bytes"`
	PeakInUseObjects int64   `json:"peak_in_use_objects"`
	PeakAtMs         float64 `json:"peak_at_ms"`
	PeakSource       string  `json:"peak_source"`
	// ImageStartMs is when the headline's image began, in milliseconds
	// since the watch began (the timeline's and the walks' clock; a
	// launcher's execs put it late): the peak came PeakAtMs after it.
	ImageStartMs float64 `json:"image_start_ms"`
	// PeakMappedBytes is the part of PeakInUseBytes in the program's own
	// mappings: where it is most of it, an allocator or runtime of the
	// program's (the JVM's heap, V8's, a jemalloc linked in) makes its
	// objects inside them, which the library does not see one by one.
	PeakMappedBytes int64 `json:"peak_mapped_bytes"`
	// ExitInUseBytes is what was still allocated at exit: leaks, or
	// memory the program left to the kernel to reclaim.
	ExitInUseBytes   int64 `json:"exit_in_use_bytes"`
	ExitInUseObjects int64 `json:"exit_in_use_objects"`
	// AllocObjects and AllocBytes are every allocation of the run, exact
	// at any rate: the library's count of its wrapped calls and anonymous
	// mappings, and the ranges of reservations committed by mprotect (as
	// V8 commits its heap), which PeakInUseBytes holds too.
	// SampledObjects is how many were recorded with their stack.
	AllocObjects   int64 `json:"alloc_objects"`
	AllocBytes     int64 `json:"alloc_bytes"`
	SampledObjects int64 `json:"sampled_objects"`
	// TemporaryObjects are allocations freed by their thread before it
	// allocated again (heaptrack's temporary allocations), estimated.
	TemporaryObjects int64 `json:"temporary_objects"`
	// Profiles are the pprof files written.
	Profiles []SitesProfile `json:"profiles"`
	// TopPeak, TopExit and TopTemporary are the largest sites of each
	// kind: in use at the peak (bytes), at exit (bytes), and by
	// temporary allocations (count).
	TopPeak      []Site `json:"top_peak"`
	TopExit      []Site `json:"top_exit"`
	TopTemporary []Site `json:"top_temporary"`
	// Processes are every process image recorded (a fork's child, an
	// execve's new image), the headline's included.
	Processes []SitesProcess `json:"processes"`
	// Fragmentation joins the in-use bytes with glibc's arenas as the
	// smaps walks saw them; null without a walk or arenas.
	Fragmentation *SitesFragmentation `json:"fragmentation"`
	// Unexplained joins the program's own mappings, as the records hold
	// them, with the anonymous memory a walk left unexplained; null
	// without a walk that left some.
	Unexplained *SitesUnexplained `json:"unexplained"`
	// PyLines is, for a program that ran Python (its stacks have Python
	// frames), the headline image's bytes by line of the program's own
	// code; absent otherwise.
	PyLines *SitesPyLines `json:"py_lines,omitempty"`
}

// SitesPyLines sums the headline image's stacks by the innermost Python
// frame that is the program's own code: not the standard library's
// (a file under lib/python3.N/), not an installed package's
// (site-packages, dist-packages), not a frozen module's (<frozen ...>).
// A PyTorch script's tensors made in torch's Python code are the
// script's line that called it. Estimates as the sites' figures.
type SitesPyLines struct {
	// Lines are the largest lines by bytes in use at the peak, then at
	// exit (at most the sites tables' length).
	Lines []SitesPyLine `json:"lines"`
	// PeakBytes and ExitBytes are every stack's bytes in use at the peak
	// and at exit, the lines' shares' whole; LibraryPeakBytes and
	// LibraryExitBytes those of stacks whose Python frames are all
	// library or frozen code (imports, a library's own threads);
	// NativePeakBytes and NativeExitBytes those of stacks with no Python
	// frame (threads with no Python state, the interpreter's start and
	// end).
	PeakBytes        int64 `json:"peak_bytes"`
	ExitBytes        int64 `json:"exit_bytes"`
	LibraryPeakBytes int64 `json:"library_peak_bytes"`
	LibraryExitBytes int64 `json:"library_exit_bytes"`
	NativePeakBytes  int64 `json:"native_peak_bytes"`
	NativeExitBytes  int64 `json:"native_exit_bytes"`
	// PymallocPeakBytes are the bytes in use at the peak in CPython's
	// small-object allocator's arenas (pymalloc: 1 MiB mappings made by
	// _PyObject_ArenaMmap), each charged whole to the line whose object
	// made it: objects of 512 bytes and less are not seen one by one.
	// PYTHONMALLOC=malloc sends them to malloc, each its own site.
	PymallocPeakBytes int64 `json:"pymalloc_peak_bytes"`
}

// SitesPyLine is one line of the program's own Python code.
type SitesPyLine struct {
	Function string `json:"function"` // the code object's qualified name
	File     string `json:"file"`
	Line     int    `json:"line"`
	// PeakBytes and ExitBytes are in use at the peak and at exit by the
	// stacks whose innermost frame of the program's code is this line;
	// PeakPct and ExitPct their shares of SitesPyLines' PeakBytes and
	// ExitBytes. PeakBytesSE is one standard error of PeakBytes (0 at
	// rate 1).
	PeakBytes   int64   `json:"peak_bytes"`
	PeakBytesSE int64   `json:"peak_bytes_se,omitempty"`
	PeakPct     float64 `json:"peak_pct"`
	ExitBytes   int64   `json:"exit_bytes"`
	ExitPct     float64 `json:"exit_pct"`
	// Via is, where the line's heaviest stack at the peak (else at exit)
	// has Python frames inside it (a library's: torch's Linear.forward),
	// the innermost of them, "function (file:line)".
	Via string `json:"via,omitempty"`
}

// SitesUnexplained is the unexplained resident memory of a walk (the
// reconciliation's anonymous mappings no source claimed) and what of it
// lies in mappings the program made itself (mmap, wrapped by the
// library): every one at rate 1; above, the sampled ones scaled as the
// other sites' figures are (a mapping of L bytes is sampled with
// probability 1 − e^(−L/rate), 86 % at 1 MiB and the default rate, and
// stands for the inverse of it). glibc's own mappings (arenas, thread
// stacks, large blocks) are made inside glibc and never recorded.
type SitesUnexplained struct {
	// At is "peak" or "end": the walk; AtMs when, since the watch began.
	At   string  `json:"at"`
	AtMs float64 `json:"at_ms"`
	// UnexplainedBytes is the walk's resident bytes in anonymous mappings
	// no source claimed; MappedBytes those of them in the program's own
	// mappings (at most UnexplainedBytes). Estimated says some mapping covered
	// only part of one the walk saw (the kernel merges neighbours): its
	// resident bytes were shared out by address.
	UnexplainedBytes int64 `json:"unexplained_bytes"`
	MappedBytes      int64 `json:"mapped_bytes"`
	Estimated        bool  `json:"estimated"`
	// HeapBytes are those of them in the C allocator's blocks in use at
	// the walk (malloc's, as the sites' tables count them), beside
	// MappedBytes: MappedBytes + HeapBytes is at most UnexplainedBytes.
	HeapBytes int64 `json:"heap_bytes,omitempty"`
	// Sites are the sites that made those mappings, most resident first.
	Sites []SitesMapping `json:"sites"`
}

// SitesMapping is one site's mappings in the unexplained memory of a walk.
type SitesMapping struct {
	Function string   `json:"function"`
	File     string   `json:"file,omitempty"`
	Line     int      `json:"line,omitempty"`
	Stack    []string `json:"stack"`
	// Mappings counts the recorded mappings (or what munmap left of
	// them) that lie in unexplained memory; ReservedBytes is their bytes
	// there, ResidentBytes the resident bytes of the walk's mappings they
	// cover.
	Mappings      int   `json:"mappings"`
	ReservedBytes int64 `json:"reserved_bytes"`
	ResidentBytes int64 `json:"resident_bytes"`
	// Blocks counts the site's heap blocks in use at the walk that lie in
	// unexplained memory, HeapBytes the resident bytes they cover there
	// (part of ResidentBytes; ReservedBytes holds their bytes too).
	Blocks    int   `json:"blocks,omitempty"`
	HeapBytes int64 `json:"heap_bytes,omitempty"`
}

// SitesProfile is one pprof file of Sites.
type SitesProfile struct {
	Kind string `json:"kind"` // SitesAlloc, SitesPeak or SitesExit
	Path string `json:"path"`
}

// Site is an allocation site: the innermost frame of the program (not
// the allocator's own: malloc, operator new, the C library), its bytes
// and objects in one view, and the frames above it.
type Site struct {
	Function string `json:"function"`
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
	// Object is the executable or library the function is in.
	Object string `json:"object"`
	Bytes  int64  `json:"bytes"`
	// BytesSE is one standard error of Bytes where it is a sampled
	// estimate (0 where every block was recorded): two sites whose
	// bytes differ by less than a few of it are tied.
	BytesSE   int64 `json:"bytes_se,omitempty"`
	Objects   int64 `json:"objects"`
	Temporary int64 `json:"temporary,omitempty"`
	// Stack are the frames, the site first (at most 8): of the site's
	// stacks, the one with the most of the list's figure (bytes in use
	// for top_peak and top_exit, temporary blocks for top_temporary).
	Stack []string `json:"stack"`
	// Stacks is how many of the site's stacks have some of that figure,
	// where more than one (an allocation wrapper's site has many), and
	// StackSharePct the part of it Stack has.
	Stacks        int     `json:"stacks,omitempty"`
	StackSharePct float64 `json:"stack_share_pct,omitempty"`
	// Mapped says the site made mappings of the program's own (mmap),
	// not (only) blocks of the C allocator.
	Mapped bool `json:"mapped,omitempty"`
	// Native are, where Stack starts at a Python frame (Function its
	// qualified name, File and Line its script's), the native frames
	// that line called down to the allocator (c10::alloc_cpu ...), at
	// most 8. NativeOnly says the process ran Python and this site's
	// stacks have no Python frame: a thread with no Python state
	// (OpenMP's, OpenBLAS's workers), or the interpreter's start or end.
	Native     []string `json:"native,omitempty"`
	NativeOnly bool     `json:"native_only,omitempty"`
}

// SitesProcess is one recorded process image.
type SitesProcess struct {
	PID  int `json:"pid"`
	PPID int `json:"ppid"`
	// Image counts execve calls of the pid: 0 is the first program.
	Image          int    `json:"image"`
	Executable     string `json:"executable"`
	PeakInUseBytes int64  `json:"peak_in_use_bytes"`
	// PeakMappedBytes is the part of PeakInUseBytes in the image's own
	// mappings, as Sites.PeakMappedBytes.
	PeakMappedBytes  int64 `json:"peak_mapped_bytes"`
	ExitInUseBytes   int64 `json:"exit_in_use_bytes"`
	AllocObjects     int64 `json:"alloc_objects"`
	AllocBytes       int64 `json:"alloc_bytes"`
	TemporaryObjects int64 `json:"temporary_objects"`
	// Ended is how the image ended: "exit" (exit, _exit), "execve",
	// "signal" (one that ends it by default, which the library caught:
	// SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGALRM, SIGUSR1, SIGUSR2), or
	// "unflushed" (SIGKILL, a crash: the records end early).
	Ended string `json:"ended"`
	// TopPeak is, for the one image with more in use at its peak than
	// the headline's (the largest: a driver's cc1plus, a launcher's
	// program), its sites at that peak, as Sites.TopPeak; else absent.
	TopPeak []Site `json:"top_peak,omitempty"`
	// Fragmentation and Unexplained are, for an image other than the
	// headline's that a walk of the descendants fell in (--children:
	// the largest descendant's highest walk, Child.AtPeak), that walk's
	// arenas split and its unexplained ranges joined with the image's
	// records, as Sites.Fragmentation and Sites.Unexplained; else absent.
	Fragmentation *SitesFragmentation `json:"fragmentation,omitempty"`
	Unexplained   *SitesUnexplained   `json:"unexplained,omitempty"`
}

// SitesFragmentation splits the resident bytes of glibc's arenas (the
// brk heap and the other arenas' heaps, c.malloc.brk and c.malloc.arenas
// of the reconciliation) at a walk into what the program's blocks in them
// held (from the sites, at the walk's moment) and the rest: free but
// resident, fragmentation and allocator overhead.
type SitesFragmentation struct {
	// At is "peak" or "end": the walk it is taken at; AtMs when, since
	// the watch began.
	At   string  `json:"at"`
	AtMs float64 `json:"at_ms"`
	// InUseBytes are the program's blocks in the arenas at the walk's
	// moment (from the sites); FreeResidentBytes is ArenaResidentBytes
	// less them, by heap, where that is positive. Blocks whose pages were
	// never written are in use and not resident, so a heap's in use may
	// pass its resident bytes; its free but resident bytes, 0 then, are
	// at least that.
	ArenaResidentBytes int64 `json:"arena_resident_bytes"`
	InUseBytes         int64 `json:"in_use_bytes"`
	// InUseSEBytes is one standard error of InUseBytes, sampled (absent
	// at rate 1: exact). Where no sampled block is in use it is the rate:
	// no sample means less than about one sample's worth, not nothing.
	// Where twice it passes the resident bytes, the split says little;
	// the report marks that row's free share unmeasured.
	InUseSEBytes      int64 `json:"in_use_se_bytes,omitempty"`
	FreeResidentBytes int64 `json:"free_resident_bytes"`
	// FreeResidentPct is FreeResidentBytes / ArenaResidentBytes × 100.
	FreeResidentPct float64 `json:"free_resident_pct"`
	// MaxHeapFreeResidentBytes is the most free but resident bytes of
	// one heap of Heaps: the worst heap's, to diff and gate on (heaps'
	// addresses change from run to run).
	MaxHeapFreeResidentBytes int64 `json:"max_heap_free_resident_bytes"`
	// Arenas split the same by arena: "main" (brk) and "others" (every
	// other arena's heaps together).
	Arenas []SitesArena `json:"arenas"`
	// Heaps split the same by heap: the brk heap (the main arena's)
	// first, then each 64 MiB heap of the other arenas, most resident
	// first (an arena that outgrew a heap has several). A block is in
	// the heap its address falls in. Blocks in no heap the walk found
	// count in Arenas' "others" only.
	Heaps []SitesHeap `json:"heaps"`
}

// SitesHeap is one row of SitesFragmentation.Heaps.
type SitesHeap struct {
	// Heap is "[heap]" or the heap's start address (hex).
	Heap string `json:"heap"`
	// Arena is "main" for [heap]; for another heap its arena's address
	// (heap_info.ar_ptr, hex) where the walk read the heaps' headers
	// (exec's program, or attach as root), else "".
	Arena             string  `json:"arena"`
	ResidentBytes     int64   `json:"resident_bytes"`
	InUseBytes        int64   `json:"in_use_bytes"`
	InUseSEBytes      int64   `json:"in_use_se_bytes,omitempty"` // as SitesFragmentation's
	FreeResidentBytes int64   `json:"free_resident_bytes"`
	FreeResidentPct   float64 `json:"free_resident_pct"`
}

// SitesArena is one row of SitesFragmentation.Arenas.
type SitesArena struct {
	Arena             string `json:"arena"`
	ResidentBytes     int64  `json:"resident_bytes"`
	InUseBytes        int64  `json:"in_use_bytes"`
	InUseSEBytes      int64  `json:"in_use_se_bytes,omitempty"` // as SitesFragmentation's
	FreeResidentBytes int64  `json:"free_resident_bytes"`
}
