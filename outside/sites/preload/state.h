// state.h: the state the units share: the options, the records file,
// the sampled set's filter, the counts every thread publishes, a thread's
// state and buffer.
//
// Part of sites.c, which #includes every unit in order: the library is one
// translation unit, so that the fast paths inline what they call as they
// did in one file (scripts/sites-fastpath.sh). Not compiled alone.

static uint64_t rate;             // MEMPROBE_SITES_RATE, 1 or more: the probe's, no default here
static size_t page = 4096;
static int enabled;               // recording: after init, before the end
static int fd = -1;
static pid_t file_pid;
static char dir[512];
// file_n is the records file's number (sites.PID.N.bin, -1 for none);
// fd_dev and fd_ino are its identity, by which fd_ours tells it from a
// file of the program's.
static int file_n = -1;
static dev_t fd_dev;
static ino_t fd_ino;

// records_path writes the records file's path to path (600 bytes).
static void records_path(char *path, int n) {
	snprintf(path, 600, "%s/sites.%d.%d.bin", dir, (int)file_pid, n);
}
static pthread_mutex_t wlock = PTHREAD_MUTEX_INITIALIZER; // the file and the buffer list
static pthread_key_t key;
// seq orders the records of all threads; shared.seq below.
static _Atomic uint64_t *set;    // sampled addresses; 0 empty, 1 deleted
// filter counts the sampled addresses by a multiplicative hash of their
// own (a counting Bloom filter of one hash, 128 KiB, which stays in the
// cache where the set does not): a free whose count is 0 was not sampled,
// and needs no look in the set. A count that reaches 255 stays there.
// Every free looks here and nowhere else: before the library records it
// is zero_filter (all 0), at rate 1 all 255, and where the set overflows
// it is filled with 255 (free_all).
enum { FILTER_BYTES = 1 << FILTER_BITS };
static _Atomic uint8_t zero_filter[FILTER_BYTES];
static _Atomic uint8_t *filter = zero_filter;
static _Atomic int free_all; // the set overflowed: record every free
static uint64_t start_ns;

// The count of every block in use, by its usable size
// (malloc_usable_size: the request rounded up to the allocator's size
// class), sampled or not: each thread adds to its own figure and
// publishes it to inuse_total when it has moved by PUBLISH bytes, so the
// total is at most PUBLISH bytes a thread behind, and inuse_peak is its
// largest value, at peak_seq. The sampled in-use estimate's maximum is
// biased high (the largest of many noisy values); this count is not.
enum { PUBLISH = 128 << 10 };
// The figures every thread writes (publish, each record) are two cache
// lines of their own (the pair a prefetcher fetches together), away from
// the read-mostly globals the fast paths read (mark, the allocator's
// functions).
static struct {
	_Atomic uint64_t seq;
	_Atomic int64_t inuse_total, inuse_peak;
	_Atomic uint64_t peak_seq, peak_ns;
} __attribute__((aligned(128))) shared;
// unw_backtrace of libunwind, where libunwind.so.8 opens and
// MEMPROBE_SITES_UNWIND is not "libgcc": twice as fast as libgcc's
// _Unwind_Backtrace here (docs/exec.md), which is the fallback.
static int (*unw_bt)(void **, int);
// unwinder: how a sample's stack is walked (MEMPROBE_SITES_UNWIND).
// UNWIND_CFI_ONLY ("cfi", for the tests) records an empty stack where
// the rules give up, so that a test comparing it with libunwind's stacks
// sees each frame it could not walk.
enum { UNWIND_CFI, UNWIND_CFI_ONLY, UNWIND_LIBUNWIND, UNWIND_LIBGCC };
static int unwinder = UNWIND_CFI;
static uint64_t cache_mask = STACK_CACHE - 1; // STACK_CACHE_SAMPLED - 1 where the rate is above 1

// A thread's state: what the fast paths touch (left, over, allocs) is
// here, in the first half of a cache line of its static TLS,
// and nothing else of the library's but a read-mostly global (mark) and
// the word before the block. The counts go into the thread's buffer's
// totals record when it is written.
struct tstate {
	int64_t left;          // bytes until the next sample (at or below 0: every allocation asks draw)
	int64_t over;          // counted bytes not yet in inuse_total, less PUBLISH (UNPUB below)
	uint64_t allocs;       // since the thread began, outside the library's own calls (hooks)
	int64_t drawn;         // the bytes allocated are drawn - left (set_left)
	void *last;            // the last sampled block this thread allocated,
	uint64_t last_allocs;  // and allocs then: a temporary if freed while they agree
	struct tbuf *buf;
	int in_hook;
	uint64_t rng;
	int64_t gleft;         // where blocks are not marked, bytes until the next sample (left stays at or below 0)
	uint64_t allocs_w, bytes_w; // written in totals records
} __attribute__((aligned(64)));
// UNPUB(t) is t's count not yet in inuse_total. It is kept less PUBLISH,
// in over, so that malloc's bound is the sign of its add (ADD_GT0), one
// instruction fewer than a compare; free's bound, over below
// -2 PUBLISH, is a compare. A new thread's count starts at UNPUB_NEW:
// its first count is out of range either way, and publish sees it is
// the first (a thread that only frees gets its buffer there, so that its
// counts are written when it exits).
#define UNPUB(t) ((t)->over + PUBLISH)
#define UNPUB_NEW (-(INT64_C(1) << 62))
static TLS struct tstate ts = {.over = UNPUB_NEW - PUBLISH};

// set_left sets the bytes to the next sample, keeping the bytes
// allocated (drawn - left) as they were.
static inline void set_left(int64_t v) {
	ts.drawn += v - ts.left;
	ts.left = v;
}

// The library's own calls (unwinding, making a buffer, loading
// libunwind) may allocate: within a hook those allocations are neither
// sampled (draw) nor in the totals nor the count, nor do they move the
// sampling, as if they had not been made. hook_enter saves what the fast
// paths change, and hook_exit puts it back.
struct hook {
	int64_t left, over;
	uint64_t allocs;
};
static inline struct hook hook_enter(void) {
	struct hook h = {ts.left, ts.over, ts.allocs};
	ts.in_hook++;
	return h;
}
static inline void hook_exit(struct hook h) {
	ts.in_hook--;
	ts.left = h.left, ts.over = h.over, ts.allocs = h.allocs;
}

// A frame rule of cfi_backtrace's (below), for the return address ip
// (less 1): the CFA is rsp or rbp (RULE_CFA_RBP) plus cfa_off, the
// return address is at CFA + ra_off, rbp at CFA + rbp_off (0: unchanged);
// RULE_LAST marks the outermost frame, and a rule without RULE_OK a pc
// the walk gives up at.
enum { RULE_OK = 1, RULE_CFA_RBP = 2, RULE_LAST = 4, RULES = 256 };
struct rule {
	uint64_t ip;
	int32_t cfa_off;
	int16_t ra_off, rbp_off;
	uint32_t flags;
};

// A thread's buffer of records. Buffers are mmapped (never malloc'd),
// listed in bufs, and reused after their thread exits. owner is the
// thread's state while it runs: the counts its totals record takes.
//
// Only its thread writes records into it (len, data). committed is len
// at the end of its last whole record, stored with release once the
// record is complete (commit): an end on another thread (finish, a
// signal's) writes data up to committed, read with acquire, and never a
// record half written; sent is how much of that it wrote (wlock held),
// which the thread's next flush does not write again.
struct tbuf {
	struct tbuf *next;
	struct tstate *owner; // NULL once the thread has exited
	size_t len;
	_Atomic size_t committed;
	size_t sent;
	uint64_t flushed_ns; // when the buffer was last written
	uint64_t cache[STACK_CACHE];
	// codes: the keys of the code objects described (py_code_key),
	// direct mapped, in the records of codes_pid (a fork's child
	// describes them again in its own file).
	uint64_t codes[CODE_CACHE];
	pid_t codes_pid;
	unsigned rules_gen; // rules_gen when the rules were last cleared
	struct rule rules[RULES];
	unsigned char data[BUF_BYTES];
};
static struct tbuf *bufs;

// commit marks the records in b so far whole: they may be written by
// another thread's end.
static inline void commit(struct tbuf *b) { atomic_store_explicit(&b->committed, b->len, memory_order_release); }

static uint64_t now_ns(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

// usable is malloc_usable_size(p): read from glibc's chunk header where
// the allocator is glibc's (its size less the header, two of them for a
// mapped chunk: what malloc_usable_size computes, without the call and
// its checks), else asked.
static inline size_t usable_h(size_t h) {
	size_t u = (h & ~(size_t)7) - 8;
	if (UNLIKELY(h & 2))
		u -= 8; // a mapped chunk: two header words
	return u;
}

static inline size_t usable(void *p) {
	if (LIKELY(count == COUNT_HEADER))
		return usable_h(((size_t *)p)[-1]);
	return real_malloc_usable_size(p);
}

// count_h is what the count takes for a block of glibc's whose header
// word is h: its usable size, or for a chunk glibc mapped (bit 1, 128 KiB
// and more) 8 bytes more, its second header word. Two instructions on
// the fast paths where the exact figure takes five; every path counts a
// block this way, so the 8 bytes go when the block does.
static inline int64_t count_h(size_t h) { return (int64_t)(h & ~(size_t)7) - 8; }

// MID_RECORD is the safety tests' hook (outside/sites' TestEndMidRecord,
// in the library built with SITES_TEST_HOOKS; nothing otherwise): called
// in the middle of an allocation's record, it calls the program's
// memprobe_sites_mid_record where the program defines one, which may
// stop the thread there for good.
#ifdef SITES_TEST_HOOKS
extern void memprobe_sites_mid_record(void) __attribute__((weak, visibility("default")));
#define MID_RECORD()                                                                                                   \
	do {                                                                                                           \
		if (memprobe_sites_mid_record)                                                                         \
			memprobe_sites_mid_record();                                                                   \
	} while (0)
#else
#define MID_RECORD() ((void)0)
#endif

// END_CUT is added to an end record's END_SIGNAL where the end by a
// signal cut records: a thread was in the middle of one, or the
// records' lock stayed taken (records.go, cutNote).
enum { END_CUT = 0x80 };

// Defined in a later unit, called by an earlier one.
static struct tbuf *own_buf(void);
static void publish(struct tstate *t);
static void finish(int how);
static void catch_end_signals(void);
