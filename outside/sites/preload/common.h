// common.h: the library's constants and macros: the record format's
// (outside/sites/records.go), the kinds and flags of its records.
//
// Part of sites.c, which #includes every unit in order: the library is one
// translation unit, so that the fast paths inline what they call as they
// did in one file (scripts/sites-fastpath.sh). Not compiled alone.

#define EXPORT __attribute__((visibility("default")))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define TLS __thread __attribute__((tls_model("initial-exec")))

enum {
	RECORD_VERSION = 5,
	MAX_FRAMES = 64,
	BUF_BYTES = 64 << 10,
	// Per thread, direct mapped: the hashes of the stacks already
	// written. At rate 1 all of it; sampled, STACK_CACHE_SAMPLED slots:
	// 4 KiB, one page, for a sample to touch among the program's lines
	// (hashing and looking up took 263 to 325 cycles a sample of
	// stress.c on Zen 4, against 315 to 340 in 32 KiB).
	STACK_CACHE = 4096,
	STACK_CACHE_SAMPLED = 512,
	SET_SLOTS = 1 << 18, // sampled addresses (rate > 1)
	SET_PROBES = 128,
	FILTER_BITS = 17,
	BOOT_BYTES = 64 << 10,
	// Python frames (python.c): at most PY_FRAMES a sample (the
	// innermost), code keys already described kept per thread in
	// CODE_CACHE slots, and a code record's strings and location table
	// cut at these lengths (its lengths say so).
	PY_FRAMES = 128,
	CODE_CACHE = 512,
	CODE_FILE_CAP = 1024,
	CODE_NAME_CAP = 512,
	CODE_LINES_CAP = 16 << 10,
};

// Record types (records.go).
enum {
	R_ALLOC = 'A',
	R_FREE = 'F',
	R_UNMAP = 'U',
	R_STACK = 'S',
	R_TOTALS = 'T',
	R_MAPS = 'M',
	R_END = 'E',
	R_COUNT = 'P',
	R_PYSTACK = 'Y', // a stack with Python frames
	R_CODE = 'C',    // a code object's description
};
// KIND_CHUNK is a block glibc's malloc served with a mapping of its own
// (IS_MMAPPED in its chunk header): outside the arenas. KIND_RESERVE is
// a mapping of the program's with no access (PROT_NONE): address space
// kept for later, as the JVM and V8 reserve their heaps, not memory.
// KIND_PROTECT and KIND_UNPROTECT are the program's mprotect calls, every
// one (not sampled): to access (what of a reservation they cover is
// committed: V8's heap) and to none (back to a reservation).
enum { KIND_HEAP = 0, KIND_MMAP = 1, KIND_CHUNK = 2, KIND_RESERVE = 3, KIND_PROTECT = 4, KIND_UNPROTECT = 5 };
enum { F_TEMPORARY = 1, F_MUNMAP = 2 };
enum { END_EXIT = 0, END_EXEC = 1, END_SIGNAL = 2 };
