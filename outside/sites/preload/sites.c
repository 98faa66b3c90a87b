// libmemprobe-sites: the allocation-site recorder that `probe exec --sites`
// puts in LD_PRELOAD. It wraps the C allocator's entry points and the
// program's own mmap, munmap and mprotect, samples allocations by bytes
// (a Poisson process of mean MEMPROBE_SITES_RATE bytes; 1 records every
// allocation), unwinds the stack of each sampled one (on x86-64 by the
// rules of .eh_frame, which it caches; else libunwind, else libgcc's
// unwinder), and writes binary records to
// MEMPROBE_SITES_DIR/sites.PID.N.bin, one file per process image.
// Everything else (symbols, profiles, the
// peak, the leaks) is done outside, by the probe (outside/sites). The record
// format is described in outside/sites/records.go; both sides change
// together (recordVersion).
//
// Costs: with glibc's allocator and a rate above 1, an allocation that is
// not sampled costs a thread-local decrement and the count of its chunk
// header; a free reads that header (the count, and the mark of a sampled
// block, below) and counts it: about 33 instructions a malloc+free pair,
// no lock and no system call (scripts/sites-fastpath.sh). With another
// allocator, or at rate 1, every call takes the general path: a free
// looks in a filter and a lock-free set of the sampled addresses, or at
// rate 1 is recorded.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <unwind.h>

#define EXPORT __attribute__((visibility("default")))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define TLS __thread __attribute__((tls_model("initial-exec")))

enum {
	RECORD_VERSION = 4,
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

// The allocator's functions, from the next object in the lookup order.
static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_memalign)(size_t, size_t);
static void *(*real_valloc)(size_t);
static void *(*real_pvalloc)(size_t);
static void *(*real_reallocarray)(void *, size_t, size_t);
static size_t (*real_usable)(void *);
static void *(*real_mmap)(void *, size_t, int, int, int, off_t);
static int (*real_munmap)(void *, size_t);
static int (*real_mprotect)(void *, size_t, int);
static int (*real_dlclose)(void *);
static void (*real__exit)(int), (*real__Exit)(int);
static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);
static sighandler_t (*real_signal)(int, sighandler_t), (*real_sysv_signal)(int, sighandler_t);

// dlsym may allocate before the functions are known: those calls are
// served from boot, a bump buffer whose blocks are never freed. The word
// before each has bit 3 set, as a marked block's has (8: a size of 0):
// free's fast path sends them to free_marked, which knows them.
static char boot[BOOT_BYTES] __attribute__((aligned(64)));
static size_t boot_used;
static int resolving;
// count says how an allocation's usable size is read: COUNT_HEADER from
// glibc's chunk header (real_malloc is glibc's), COUNT_CALL by
// malloc_usable_size, COUNT_NONE where the allocator has neither.
enum { COUNT_NONE, COUNT_HEADER, COUNT_CALL };
static int count;

static uint64_t rate = 512 << 10; // MEMPROBE_SITES_RATE
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
struct tbuf {
	struct tbuf *next;
	struct tstate *owner; // NULL once the thread has exited
	size_t len;
	uint64_t flushed_ns; // when the buffer was last written
	uint64_t cache[STACK_CACHE];
	unsigned rules_gen; // rules_gen when the rules were last cleared
	struct rule rules[RULES];
	unsigned char data[BUF_BYTES];
};
static struct tbuf *bufs;

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
	return real_usable(p);
}

// count_h is what the count takes for a block of glibc's whose header
// word is h: its usable size, or for a chunk glibc mapped (bit 1, 128 KiB
// and more) 8 bytes more, its second header word. Two instructions on
// the fast paths where the exact figure takes five; every path counts a
// block this way, so the 8 bytes go when the block does.
static inline int64_t count_h(size_t h) { return (int64_t)(h & ~(size_t)7) - 8; }

static struct tbuf *own_buf(void);

// publish adds the thread's unpublished count to inuse_total and keeps
// its peak.
__attribute__((noinline)) static void publish(struct tstate *t) {
	int64_t d = UNPUB(t);
	t->over = -PUBLISH;
	int first = d < UNPUB_NEW / 2;
	if (first)
		d -= UNPUB_NEW;
	int64_t v = atomic_fetch_add_explicit(&shared.inuse_total, d, memory_order_relaxed) + d;
	if (first && t == &ts && enabled)
		own_buf();
	if (!enabled)
		return; // counted, but no peak before the records' clock starts
	int64_t pk = atomic_load_explicit(&shared.inuse_peak, memory_order_relaxed);
	while (v > pk) {
		if (atomic_compare_exchange_weak(&shared.inuse_peak, &pk, v)) {
			atomic_store_explicit(&shared.peak_seq, atomic_load_explicit(&shared.seq, memory_order_relaxed), memory_order_relaxed);
			atomic_store_explicit(&shared.peak_ns, now_ns() - start_ns, memory_order_relaxed);
			break;
		}
	}
}

static void resolve(void) {
	resolving = 1;
	real_malloc = dlsym(RTLD_NEXT, "malloc");
	real_calloc = dlsym(RTLD_NEXT, "calloc");
	real_realloc = dlsym(RTLD_NEXT, "realloc");
	real_free = dlsym(RTLD_NEXT, "free");
	real_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
	real_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
	real_memalign = dlsym(RTLD_NEXT, "memalign");
	real_valloc = dlsym(RTLD_NEXT, "valloc");
	real_pvalloc = dlsym(RTLD_NEXT, "pvalloc");
	real_reallocarray = dlsym(RTLD_NEXT, "reallocarray");
	real_usable = dlsym(RTLD_NEXT, "malloc_usable_size");
	real_mmap = dlsym(RTLD_NEXT, "mmap");
	real_munmap = dlsym(RTLD_NEXT, "munmap");
	real_mprotect = dlsym(RTLD_NEXT, "mprotect");
	real_dlclose = dlsym(RTLD_NEXT, "dlclose");
	real__exit = dlsym(RTLD_NEXT, "_exit");
	real__Exit = dlsym(RTLD_NEXT, "_Exit");
	real_sigaction = dlsym(RTLD_NEXT, "sigaction");
	real_signal = dlsym(RTLD_NEXT, "signal");
	real_sysv_signal = dlsym(RTLD_NEXT, "sysv_signal");
	Dl_info info;
	if (real_malloc && dladdr((void *)real_malloc, &info) && info.dli_fname && strstr(info.dli_fname, "/libc.so"))
		count = COUNT_HEADER;
	else if (real_usable != NULL)
		count = COUNT_CALL;
	resolving = 0;
}

static void *boot_alloc(size_t n) {
	if (n > sizeof boot)
		return NULL;
	n = ((n + 15) & ~(size_t)15) + 16;
	if (boot_used + n > sizeof boot)
		return NULL;
	char *p = boot + boot_used + 16;
	((size_t *)p)[-1] = 8;
	boot_used += n;
	return p;
}

static inline int in_boot(void *p) { return (uintptr_t)p - (uintptr_t)boot < sizeof boot; }

// ---- writing records ----------------------------------------------------

// fd_high moves f above the numbers a program's own files take (open
// takes the lowest free): to 992, or 32 below the limit where that is
// lower. f where it cannot.
static int fd_high(int f) {
	struct rlimit rl;
	long want = 992;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (long)rl.rlim_cur < 1024)
		want = (long)rl.rlim_cur - 32;
	if (want <= f)
		return f;
	int h = fcntl(f, F_DUPFD_CLOEXEC, (int)want);
	if (h < 0)
		return f;
	close(f);
	return h;
}

// fd_ours says whether fd is still the records file. A program may close
// every descriptor (closefrom(3), a daemon, subprocess's close_fds) and
// open files of its own, one of which may take fd's number, or dup2 over
// it: the records would go into its file, and closing fd would close it.
static int fd_ours(void) {
	struct stat st;
	return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == fd_dev && st.st_ino == fd_ino;
}

// fd_keep opens the records file again where fd is no longer it (leaving
// fd, the program's now, as it is). 0 where it cannot: the records stop.
static int fd_keep(void) {
	if (fd_ours())
		return 1;
	fd = -1;
	if (file_n < 0)
		return 0;
	char path[600];
	records_path(path, file_n);
	int f = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (f < 0)
		return 0;
	f = fd_high(f);
	struct stat st;
	if (fstat(f, &st) != 0) {
		close(f);
		return 0;
	}
	fd = f, fd_dev = st.st_dev, fd_ino = st.st_ino;
	return 1;
}

// fd_close closes fd where it is still the records file.
static void fd_close(void) {
	if (fd_ours())
		close(fd);
	fd = -1;
}

// write_all writes p to the records file, leaving errno as it was: it
// runs within the program's malloc and free, which do not set it where
// they succeed.
static void write_all(const void *p, size_t n) {
	int e = errno;
	const char *b = p;
	if (n > 0 && !fd_keep())
		n = 0;
	while (n > 0 && fd >= 0) {
		ssize_t w = write(fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		b += w;
		n -= (size_t)w;
	}
	errno = e;
}

static void put(struct tbuf *b, const void *p, size_t n) {
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

static void put8(struct tbuf *b, uint8_t v) { b->data[b->len++] = v; }
static void put64(struct tbuf *b, uint64_t v) { put(b, &v, 8); }

// flush_locked writes b's records; wlock held. A process that is not the
// one that opened the file (a vfork child, a clone without atfork) writes
// nothing: its records would be charged to the wrong pid.
static void flush_locked(struct tbuf *b) {
	struct tstate *t = b->owner;
	if (t != NULL && t->allocs != t->allocs_w) {
		uint64_t a = t->allocs, by = (uint64_t)(t->drawn - t->left);
		put8(b, R_TOTALS);
		put64(b, a - t->allocs_w);
		put64(b, by - t->bytes_w);
		t->allocs_w = a, t->bytes_w = by;
	}
	if (b->len > 0 && fd >= 0 && getpid() == file_pid)
		write_all(b->data, b->len);
	b->len = 0;
}

static void flush(struct tbuf *b) {
	pthread_mutex_lock(&wlock);
	flush_locked(b);
	pthread_mutex_unlock(&wlock);
}

// room makes sure n bytes fit in the buffer.
static void room(struct tbuf *b, size_t n) {
	if (b->len + n + 32 > BUF_BYTES)
		flush(b);
}

// FLUSH_NS: a thread's records are written at least this often while it
// records (a live view reads the file as the program runs), not only
// when its buffer is full. A record of a block of FLUSH_BIG bytes or more
// is written at once: a program that makes one and then waits (Python's
// list of 10^7 items, then a sleep) showed 1.2 MiB of its 77 MiB in use
// in the live view until its exit; such blocks are few, and each costs
// far more to make than a write.
enum { FLUSH_NS = 1000000000, FLUSH_BIG = 1 << 20 };

static void flush_if_old(struct tbuf *b, uint64_t t, size_t size) {
	if (size >= FLUSH_BIG || t - b->flushed_ns > FLUSH_NS) {
		flush(b);
		b->flushed_ns = t;
	}
}

// ---- the library's own mappings ------------------------------------------
//
// Each mapping the library makes for itself begins with OWN_MAGIC and
// its length: the probe's walks (instrument/reconcile, sitesOwnMagic) read
// that header to claim the library's memory as its own (probe.sites),
// and step over it where the kernel merged it with glibc's large blocks,
// whose headers they follow from one to the next. Unmarked, a buffer
// merged in front of a chunk left that chunk and all after it
// unexplained: 28.9 MiB of xz's 284.8 MiB.
#define OWN_MAGIC 0x4e574f5345544953ULL // "SITESOWN"
enum { OWN_HEAD = 16 };

// own_map maps n bytes, read-write and zeroed (flags added to
// MAP_PRIVATE | MAP_ANONYMOUS), after the header; NULL where mmap fails.
static void *own_map(size_t n, int flags) {
	size_t len = (n + OWN_HEAD + page - 1) & ~(page - 1);
	uint64_t *h = real_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
	if (h == MAP_FAILED)
		return NULL;
	h[0] = OWN_MAGIC;
	h[1] = len;
	return (char *)h + OWN_HEAD;
}

static void own_unmap(void *p) {
	uint64_t *h = (uint64_t *)((char *)p - OWN_HEAD);
	real_munmap(h, h[1]);
}

static void thread_exit(void *p) {
	struct tbuf *b = p;
	ts.in_hook++;
	pthread_mutex_lock(&wlock);
	flush_locked(b);
	publish(&ts);
	b->owner = NULL;
	pthread_mutex_unlock(&wlock);
	ts.buf = NULL;
	ts.in_hook--;
}

// thread_buf is the calling thread's buffer, made on its first record.
static struct tbuf *thread_buf(void) {
	if (LIKELY(ts.buf != NULL))
		return ts.buf;
	struct tbuf *b = NULL;
	pthread_mutex_lock(&wlock);
	for (struct tbuf *x = bufs; x; x = x->next)
		if (x->owner == NULL) {
			b = x;
			break;
		}
	if (b == NULL) {
		b = own_map(sizeof *b, 0);
		if (b == NULL) {
			pthread_mutex_unlock(&wlock);
			return NULL;
		}
		b->next = bufs;
		bufs = b;
	} else {
		memset(b->cache, 0, sizeof b->cache);
	}
	b->owner = &ts;
	b->len = 0;
	pthread_mutex_unlock(&wlock);
	ts.buf = b;
	pthread_setspecific(key, b); // may allocate: callers hold in_hook
	return b;
}

// ---- sampling -----------------------------------------------------------

static uint64_t rnd(void) {
	uint64_t x = ts.rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	ts.rng = x;
	return x * 0x2545F4914F6CDD1DULL;
}

// next_interval draws the bytes to the next sample: exponential with mean
// rate, so that every byte has the same chance and a block of size s is
// sampled with probability 1 - exp(-s/rate), whatever came before.
static int64_t next_interval(void) {
	double u = (double)((rnd() >> 11) + 1) * (1.0 / 9007199254740992.0); // (0, 1]
	double v = -log(u) * (double)rate;
	if (v > 9e18)
		v = 9e18;
	return (int64_t)v + 1;
}

// The sampling decision is made by the fast path: ts.left -= n, and the
// allocation is sampled when it reaches 0 or below. ts.left starts at 0,
// so a thread's first allocation takes the slow path, which seeds its
// generator and makes its buffer; at rate 1 it stays 0.

// ---- the set of sampled addresses (rate > 1) ----------------------------

static inline uint64_t mix(uint64_t x) {
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

static inline _Atomic uint8_t *filter_slot(uint64_t a) { return &filter[(a * 0x9E3779B97F4A7C15ULL) >> (64 - FILTER_BITS)]; }

static void set_add(uint64_t a) {
	uint64_t h = mix(a);
	_Atomic uint8_t *fc = filter_slot(a);
	uint8_t c = atomic_load_explicit(fc, memory_order_relaxed);
	while (c < 255 && !atomic_compare_exchange_weak(fc, &c, (uint8_t)(c + 1)))
		;
	for (int i = 0; i < SET_PROBES; i++) {
		_Atomic uint64_t *s = &set[(h + i) & (SET_SLOTS - 1)];
		uint64_t v = atomic_load_explicit(s, memory_order_relaxed);
		if ((v == 0 || v == 1) && atomic_compare_exchange_strong(s, &v, a))
			return;
	}
	if (!atomic_exchange(&free_all, 1))
		memset((void *)filter, 255, FILTER_BYTES);
}

// set_del says whether a was sampled, and forgets it.
static int set_del(uint64_t a) {
	if (atomic_load_explicit(&free_all, memory_order_relaxed))
		return 1;
	uint64_t h = mix(a);
	_Atomic uint8_t *fc = filter_slot(a);
	if (atomic_load_explicit(fc, memory_order_relaxed) == 0)
		return 0;
	for (int i = 0; i < SET_PROBES; i++) {
		_Atomic uint64_t *s = &set[(h + i) & (SET_SLOTS - 1)];
		uint64_t v = atomic_load_explicit(s, memory_order_relaxed);
		if (v == 0)
			return 0;
		if (v == a && atomic_compare_exchange_strong(s, &v, 1)) {
			uint8_t c = atomic_load_explicit(fc, memory_order_relaxed);
			while (c > 0 && c < 255 && !atomic_compare_exchange_weak(fc, &c, (uint8_t)(c - 1)))
				;
			return 1;
		}
	}
	return 0;
}

// ---- marked blocks (glibc's allocator, rate above 1) ----------------------
//
// Where the allocator is glibc's and the rate is above 1, a sampled block
// is allocated with a prefix of its own (16 bytes, or its alignment)
// holding the allocator's pointer and MARK, just before the block. The
// word before any other block is glibc's chunk size: a multiple of 16
// with flags in its three low bits, so bit 3 is never set there, and is
// in MARK. A free tells a sampled block by the word it reads for the
// count anyway, with no table to look in; realloc and
// malloc_usable_size are wrapped to see through the prefix.
#define MARK 0x6d656d70726f62e8ULL
enum { PREFIX = 16 };
static int mark; // set at the start where it applies; never cleared (marked blocks live on)
// free_below is UINTPTR_MAX where mark is set, else 0: free takes its
// fast path where p - 1 is below it, one compare for a p that is not
// NULL and blocks that are marked.
static uintptr_t free_below;

static inline int marked(void *p) { return (((size_t *)p)[-1] & 8) != 0; }
static inline char *base(void *p) { return ((char **)p)[-2]; }

// marked_usable is a marked block's usable size: its allocator block's
// less the prefix.
static size_t marked_usable(void *p) {
	char *q = base(p);
	return usable(q) - (size_t)((char *)p - q);
}

// marked_alloc allocates n bytes with the prefix: aligned to align where
// that is above 16 (rounded up to a power of two, as glibc's memalign
// does), zeroed if zero. NULL, with errno set, where the allocator fails.
__attribute__((noinline)) static void *marked_alloc(size_t n, size_t align, int zero) {
	size_t off = PREFIX, tot;
	if (align > PREFIX)
		off = (align & (align - 1)) ? (size_t)1 << (64 - __builtin_clzll(align - 1)) : align;
	if (__builtin_add_overflow(n, off, &tot)) {
		errno = ENOMEM;
		return NULL;
	}
	char *q = off > PREFIX ? real_memalign(off, tot) : zero ? real_calloc(1, tot) : real_malloc(tot);
	if (q == NULL)
		return NULL;
	char *p = q + off;
	((char **)p)[-2] = q;
	((uint64_t *)p)[-1] = MARK;
	return p;
}

// usable_of is p's usable size (0 where it cannot be read).
static inline __attribute__((always_inline)) int64_t usable_of(void *p) {
	if (LIKELY(count == COUNT_HEADER))
		return (int64_t)(mark && marked(p) ? marked_usable(p) : usable(p));
	if (count == COUNT_CALL)
		return (int64_t)real_usable(p);
	return 0;
}

// count_of is what the count takes for p: count_h of its header (a
// marked block's allocator block's, less the prefix), or its usable size
// where the allocator is not glibc's.
static inline __attribute__((always_inline)) int64_t count_of(void *p) {
	if (LIKELY(count == COUNT_HEADER)) {
		if (mark && marked(p))
			return count_h(((size_t *)base(p))[-1]) - (int64_t)((char *)p - base(p));
		return count_h(((size_t *)p)[-1]);
	}
	if (count == COUNT_CALL)
		return (int64_t)real_usable(p);
	return 0;
}

// ---- stacks -------------------------------------------------------------

struct frames {
	uint64_t pc[MAX_FRAMES];
	int n, skip;
};

static _Unwind_Reason_Code frame(struct _Unwind_Context *ctx, void *arg) {
	struct frames *f = arg;
	if (f->skip > 0) {
		f->skip--;
		return _URC_NO_REASON;
	}
	uintptr_t ip = _Unwind_GetIP(ctx);
	if (ip == 0)
		return _URC_END_OF_STACK;
	f->pc[f->n++] = ip;
	return f->n < MAX_FRAMES ? _URC_NO_REASON : _URC_END_OF_STACK;
}

// ---- stacks by the rules of .eh_frame, cached -----------------------------
//
// On x86-64 the library walks a sample's stack itself: each return
// address's frame rule (where the canonical frame address is, from rsp
// or rbp, and where the return address and rbp are saved) is read once
// from the object's .eh_frame (found by _dl_find_object: no lock, no
// allocation) and kept in the thread's buffer; a walk is then a table
// look and two loads a frame: on stress.c a sample adds 940 instructions
// and 45 L1 misses where with libunwind it adds 1500 and 77 (cachegrind,
// docs/exec.md; in seconds the difference was within the measure). A
// frame whose rule is not of this simple form (a CFA
// by expression, a signal frame, no unwind entry) gives the whole stack
// to libunwind or libgcc's unwinder, as before; MEMPROBE_SITES_UNWIND=
// libunwind or libgcc asks for them always.
#if defined(__x86_64__) && defined(DLFO_STRUCT_HAS_EH_DBASE)
#define CFI_UNWIND 1
enum { DW_RBP = 6, DW_RSP = 7, DW_RA = 16, CFI_STATES = 8 };
static int (*find_object)(void *, struct dl_find_object *);
static _Atomic unsigned rules_gen = 1; // a dlclose makes every thread's rules stale

// A register's rule as the CFA program leaves it: unchanged (RULE_SAME),
// saved at CFA + off (RULE_AT), undefined (the return address of the
// outermost frame), or any other (RULE_OTHER: the walk gives up).
enum { RULE_SAME, RULE_AT, RULE_UNDEF, RULE_OTHER };
struct cfa_row {
	int cfa_reg; // DW_RSP or DW_RBP; anything else gives up
	int64_t cfa_off;
	int rbp, ra; // RULE_*
	int64_t rbp_off, ra_off;
};

static uint64_t uleb(const uint8_t **p, const uint8_t *end) {
	uint64_t v = 0;
	for (int s = 0; *p < end && s < 64; s += 7) {
		uint8_t b = *(*p)++;
		v |= (uint64_t)(b & 0x7f) << s;
		if (!(b & 0x80))
			break;
	}
	return v;
}

static int64_t sleb(const uint8_t **p, const uint8_t *end) {
	int64_t v = 0;
	int s = 0;
	uint8_t b = 0x80;
	while (*p < end && s < 64 && (b & 0x80)) {
		b = *(*p)++;
		v |= (int64_t)(b & 0x7f) << s;
		s += 7;
	}
	if (s < 64 && (b & 0x40))
		v |= -((int64_t)1 << s);
	return v;
}

// read_enc reads a pointer encoded as enc (DW_EH_PE_*): absolute or
// relative to its own place (pcrel), or to base (datarel); 0 where the
// encoding is one this does not read (indirect, textrel, funcrel).
static int read_enc(const uint8_t **p, const uint8_t *end, uint8_t enc, uint64_t base, uint64_t *v) {
	const uint8_t *q = *p;
	uint64_t x;
	if (enc == 0xff)
		return 0;
	switch (enc & 0x0f) {
	case 0x00: case 0x04: case 0x0c:
		if (end - q < 8) return 0;
		memcpy(&x, q, 8), q += 8;
		break;
	case 0x01: x = uleb(&q, end); break;
	case 0x09: x = (uint64_t)sleb(&q, end); break;
	case 0x02: { uint16_t y; if (end - q < 2) return 0; memcpy(&y, q, 2), q += 2; x = y; break; }
	case 0x0a: { int16_t y; if (end - q < 2) return 0; memcpy(&y, q, 2), q += 2; x = (uint64_t)(int64_t)y; break; }
	case 0x03: { uint32_t y; if (end - q < 4) return 0; memcpy(&y, q, 4), q += 4; x = y; break; }
	case 0x0b: { int32_t y; if (end - q < 4) return 0; memcpy(&y, q, 4), q += 4; x = (uint64_t)(int64_t)y; break; }
	default: return 0;
	}
	switch (enc & 0x70) {
	case 0x00: break;
	case 0x10: x += (uint64_t)(uintptr_t)*p; break;
	case 0x30: x += base; break;
	default: return 0;
	}
	*p = q;
	*v = x;
	return 1;
}

// cfa_run runs a CFA program on row r until the row that covers target
// (loc is the address the program starts at); init is the row after the
// CIE's initial instructions (DW_CFA_restore's). 0 where the program
// has an instruction this does not follow for rsp, rbp or the return
// address.
static int cfa_run(const uint8_t *p, const uint8_t *end, uint64_t loc, uint64_t target, uint64_t code_align,
		   int64_t data_align, uint8_t fde_enc, struct cfa_row *r, const struct cfa_row *init) {
	struct cfa_row saved[CFI_STATES];
	int depth = 0;
	while (p < end) {
		uint8_t op = *p++;
		uint64_t reg, delta = 0;
		int64_t off;
		int advance = 0;
		switch (op >> 6) {
		case 1: delta = (op & 0x3f) * code_align, advance = 1; break;
		case 2:
			reg = op & 0x3f, off = (int64_t)uleb(&p, end) * data_align;
			goto at;
		case 3:
			reg = op & 0x3f;
			goto restore;
		}
		if (advance)
			goto advance;
		switch (op) {
		case 0x00: continue; // nop
		case 0x01: { // set_loc
			uint64_t v;
			if (!read_enc(&p, end, fde_enc, 0, &v))
				return 0;
			if (target < v)
				return 1;
			loc = v;
			continue;
		}
		case 0x02: if (p >= end) return 0; delta = *p++ * code_align; goto advance;
		case 0x03: { uint16_t v; if (end - p < 2) return 0; memcpy(&v, p, 2), p += 2; delta = v * code_align; goto advance; }
		case 0x04: { uint32_t v; if (end - p < 4) return 0; memcpy(&v, p, 4), p += 4; delta = v * code_align; goto advance; }
		case 0x05: reg = uleb(&p, end), off = (int64_t)uleb(&p, end) * data_align; goto at;  // offset_extended
		case 0x11: reg = uleb(&p, end), off = sleb(&p, end) * data_align; goto at;           // offset_extended_sf
		case 0x2f: reg = uleb(&p, end), off = -(int64_t)uleb(&p, end) * data_align; goto at; // GNU_negative_offset_extended
		case 0x06: reg = uleb(&p, end); goto restore;                                        // restore_extended
		case 0x07: reg = uleb(&p, end); // undefined
			if (reg == DW_RA) r->ra = RULE_UNDEF;
			else if (reg == DW_RBP) r->rbp = RULE_UNDEF;
			continue;
		case 0x08: reg = uleb(&p, end); // same_value
			if (reg == DW_RA) r->ra = RULE_OTHER;
			else if (reg == DW_RBP) r->rbp = RULE_SAME;
			continue;
		case 0x09: reg = uleb(&p, end), (void)uleb(&p, end); goto other; // register
		case 0x0a: if (depth == CFI_STATES) return 0; saved[depth++] = *r; continue; // remember_state
		case 0x0b: if (depth == 0) return 0; *r = saved[--depth]; continue; // restore_state: the CFA's rule too
		case 0x0c: r->cfa_reg = (int)uleb(&p, end), r->cfa_off = (int64_t)uleb(&p, end); continue; // def_cfa
		case 0x12: r->cfa_reg = (int)uleb(&p, end), r->cfa_off = sleb(&p, end) * data_align; continue; // def_cfa_sf
		case 0x0d: r->cfa_reg = (int)uleb(&p, end); continue;                                  // def_cfa_register
		case 0x0e: r->cfa_off = (int64_t)uleb(&p, end); continue;                              // def_cfa_offset
		case 0x13: r->cfa_off = sleb(&p, end) * data_align; continue;                          // def_cfa_offset_sf
		case 0x0f: return 0;                                                                    // def_cfa_expression
		case 0x10: case 0x16: { // expression, val_expression
			reg = uleb(&p, end);
			uint64_t n = uleb(&p, end);
			if ((uint64_t)(end - p) < n) return 0;
			p += n;
			goto other;
		}
		case 0x14: reg = uleb(&p, end), (void)uleb(&p, end); goto other; // val_offset
		case 0x15: reg = uleb(&p, end), (void)sleb(&p, end); goto other; // val_offset_sf
		case 0x2e: (void)uleb(&p, end); continue;                         // GNU_args_size
		default: return 0;
		}
	advance:
		if (target < loc + delta)
			return 1;
		loc += delta;
		continue;
	at:
		if (reg == DW_RA) r->ra = RULE_AT, r->ra_off = off;
		else if (reg == DW_RBP) r->rbp = RULE_AT, r->rbp_off = off;
		continue;
	restore:
		if (reg == DW_RA) r->ra = init->ra, r->ra_off = init->ra_off;
		else if (reg == DW_RBP) r->rbp = init->rbp, r->rbp_off = init->rbp_off;
		continue;
	other:
		if (reg == DW_RA || reg == DW_RBP || reg == DW_RSP)
			return 0;
		continue;
	}
	return 1;
}

// cfi_rule finds the frame rule at pc (a return address less 1, or the
// walk's first pc): 0 where there is none of the simple form.
static int cfi_rule(uint64_t pc, struct rule *out) {
	struct dl_find_object fo;
	if (find_object((void *)(uintptr_t)pc, &fo) != 0 || fo.dlfo_eh_frame == NULL)
		return 0;
	// .eh_frame_hdr: version 1, its encodings, and the sorted table of
	// (function start, FDE) as 32-bit offsets from the header, which
	// every linker writes.
	const uint8_t *h = fo.dlfo_eh_frame, *q = h + 4;
	if (h[0] != 1 || h[3] != 0x3b)
		return 0;
	uint64_t v, count;
	const uint8_t *hend = h + 64; // the header's fixed part, before the table
	if (!read_enc(&q, hend, h[1], (uint64_t)(uintptr_t)h, &v) || !read_enc(&q, hend, h[2], (uint64_t)(uintptr_t)h, &count) || count == 0)
		return 0;
	const int32_t *tab = (const int32_t *)q;
	int64_t rel = (int64_t)(pc - (uint64_t)(uintptr_t)h);
	if (rel < tab[0])
		return 0;
	uint64_t lo = 0, hi = count; // the last entry whose start is at or below pc
	while (hi - lo > 1) {
		uint64_t m = lo + (hi - lo) / 2;
		if (tab[2 * m] <= rel)
			lo = m;
		else
			hi = m;
	}
	const uint8_t *fde = h + tab[2 * lo + 1];
	uint32_t len, cie_off;
	memcpy(&len, fde, 4);
	if (len == 0 || len == 0xffffffffu)
		return 0;
	const uint8_t *fend = fde + 4 + len;
	memcpy(&cie_off, fde + 4, 4);
	const uint8_t *cie = fde + 4 - cie_off;
	uint32_t clen;
	memcpy(&clen, cie, 4);
	if (clen == 0 || clen == 0xffffffffu)
		return 0;
	const uint8_t *cend = cie + 4 + clen, *c = cie + 8;
	uint8_t version = *c++;
	const char *aug = (const char *)c;
	size_t alen = strnlen(aug, (size_t)(cend - c));
	c += alen + 1;
	if (version != 1 && version != 3)
		return 0;
	uint64_t code_align = uleb(&c, cend);
	int64_t data_align = sleb(&c, cend);
	uint64_t ra_reg = version == 1 ? *c++ : uleb(&c, cend);
	uint8_t fde_enc = 0;
	if (ra_reg != DW_RA)
		return 0;
	if (aug[0] == 'z') {
		uint64_t n = uleb(&c, cend);
		const uint8_t *a = c, *aend = c + n;
		for (const char *s = aug + 1; *s; s++) {
			switch (*s) {
			case 'R': fde_enc = *a++; break;
			case 'L': a++; break;
			case 'P': { uint8_t e = *a++; uint64_t x; if (!read_enc(&a, aend, e & 0x7f, 0, &x)) return 0; break; }
			default: return 0; // 'S' (a signal frame) and the rest
			}
		}
		c = aend;
	} else if (aug[0] != '\0') {
		return 0;
	}
	// The FDE: the function's start and length, its augmentation data
	// (skipped), its program.
	const uint8_t *f = fde + 8;
	uint64_t start, range;
	if (!read_enc(&f, fend, fde_enc, 0, &start) || !read_enc(&f, fend, fde_enc & 0x0f, 0, &range))
		return 0;
	if (pc < start || pc - start >= range)
		return 0;
	if (aug[0] == 'z') {
		uint64_t n = uleb(&f, fend);
		f += n;
	}
	struct cfa_row r = {.cfa_reg = -1, .rbp = RULE_SAME, .ra = RULE_OTHER}, init;
	if (!cfa_run(c, cend, start, UINT64_MAX, code_align, data_align, fde_enc, &r, &r))
		return 0;
	init = r;
	if (!cfa_run(f, fend, start, pc, code_align, data_align, fde_enc, &r, &init))
		return 0;
	if ((r.cfa_reg != DW_RSP && r.cfa_reg != DW_RBP) || r.cfa_off < 0 || r.cfa_off > INT32_MAX ||
	    (r.ra != RULE_AT && r.ra != RULE_UNDEF) || (r.rbp != RULE_AT && r.rbp != RULE_SAME && r.rbp != RULE_UNDEF) ||
	    r.ra_off < INT16_MIN || r.ra_off > INT16_MAX || r.rbp_off < INT16_MIN || r.rbp_off > INT16_MAX)
		return 0;
	out->cfa_off = (int32_t)r.cfa_off;
	out->ra_off = (int16_t)r.ra_off;
	out->rbp_off = r.rbp == RULE_AT ? (int16_t)r.rbp_off : 0;
	out->flags = (r.cfa_reg == DW_RBP ? RULE_CFA_RBP : 0) | (r.ra == RULE_UNDEF ? RULE_LAST : 0) | RULE_OK;
	return 1;
}

// cfi_backtrace writes the return addresses of the caller's stack to pc
// (its own caller's first), at most max; -1 where a frame's rule is not
// one it follows (the caller unwinds another way).
__attribute__((noinline)) static int cfi_backtrace(struct tbuf *b, uint64_t *pc, int max) {
	unsigned gen = atomic_load_explicit(&rules_gen, memory_order_acquire);
	if (UNLIKELY(b->rules_gen != gen)) {
		memset(b->rules, 0, sizeof b->rules);
		b->rules_gen = gen;
	}
	uint64_t ip, sp, bp;
	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2" : "=r"(ip), "=r"(sp), "=r"(bp));
	int n = -1; // this function's own frame is not written
	for (uint64_t look = ip; n < max;) {
		struct rule *r = &b->rules[(look ^ (look >> 9)) & (RULES - 1)];
		if (r->ip != look) {
			struct rule x = {0};
			if (!cfi_rule(look, &x))
				x.flags = 0; // kept: the next look at this pc gives up at once
			x.ip = look;
			*r = x;
		}
		if (!(r->flags & RULE_OK))
			return -1;
		uint64_t cfa = (r->flags & RULE_CFA_RBP ? bp : sp) + (uint64_t)(int64_t)r->cfa_off;
		if (r->flags & RULE_LAST)
			return n < 0 ? 0 : n;
		if (cfa <= sp || cfa - sp > (1u << 30))
			return -1; // not a frame of a stack: not ours to follow
		uint64_t ra = *(const uint64_t *)(uintptr_t)(cfa + (uint64_t)(int64_t)r->ra_off);
		if (r->rbp_off != 0)
			bp = *(const uint64_t *)(uintptr_t)(cfa + (uint64_t)(int64_t)r->rbp_off);
		sp = cfa;
		if (ra == 0)
			break;
		if (n >= 0)
			pc[n] = ra;
		n++;
		look = ra - 1;
	}
	return n < 0 ? 0 : n;
}
#endif

// backtrace writes the stack of record_alloc's caller to f: by the
// rules of .eh_frame, else libunwind's unw_backtrace, else libgcc's
// _Unwind_Backtrace. Inlined: the frame each skips is record_alloc's.
static inline __attribute__((always_inline)) void backtrace(struct tbuf *b, struct frames *f) {
	f->n = 0;
	f->skip = 1;
#ifdef CFI_UNWIND
	if (unwinder <= UNWIND_CFI_ONLY && find_object != NULL && (f->n = cfi_backtrace(b, f->pc, MAX_FRAMES)) >= 0)
		return;
	f->n = 0;
	if (unwinder == UNWIND_CFI_ONLY)
		return;
#else
	(void)b;
#endif
	if (unw_bt != NULL) {
		uint64_t pc[MAX_FRAMES + 1];
		int n = unw_bt((void **)pc, MAX_FRAMES + 1);
		for (int i = 1; i < n; i++)
			f->pc[f->n++] = pc[i];
	} else {
		_Unwind_Backtrace(frame, f);
	}
}

// ---- recording ----------------------------------------------------------

__attribute__((noinline)) static void record_alloc(void *p, size_t n, int kind) {
	struct tbuf *b = thread_buf();
	if (b == NULL)
		return;
	struct frames f;
	backtrace(b, &f);
	uint64_t h = 0xcbf29ce484222325ULL;
	for (int i = 0; i < f.n; i++)
		h = mix(h ^ f.pc[i]) + (uint64_t)i;
	if (h < 2)
		h += 2;
	room(b, 2 + 8 + 8 * (size_t)f.n + 58);
	uint64_t *c = &b->cache[h & cache_mask];
	if (*c != h) {
		*c = h;
		put8(b, R_STACK);
		put8(b, (uint8_t)f.n);
		put64(b, h);
		put(b, f.pc, 8 * (size_t)f.n);
	}
	if (set != NULL && kind < KIND_PROTECT)
		set_add((uint64_t)(uintptr_t)p);
	size_t u = n;
	if (kind == KIND_HEAP && count != COUNT_NONE) {
		u = (size_t)usable_of(p);
		if (count == COUNT_HEADER && ((size_t *)(mark && marked(p) ? base(p) : (char *)p))[-1] & 2)
			kind = KIND_CHUNK;
	}
	uint64_t t = now_ns();
	put8(b, R_ALLOC);
	put8(b, (uint8_t)kind);
	put64(b, atomic_fetch_add_explicit(&shared.seq, 1, memory_order_relaxed));
	put64(b, t - start_ns);
	put64(b, (uint64_t)(uintptr_t)p);
	put64(b, n);
	put64(b, h);
	put64(b, (uint64_t)atomic_load_explicit(&shared.inuse_total, memory_order_relaxed));
	put64(b, u);
	flush_if_old(b, t, n);
}

// record_free records the free of a sampled block of len bytes (0 where
// not known), or (F_MUNMAP) a munmap of the program's of len bytes,
// whatever it unmaps (a sampled mapping, a part of one, or none): the
// probe cuts the sampled mappings it overlaps. A munmap is a system
// call: recording each costs little beside it.
static void record_free(void *p, int flags, size_t len) {
	struct tbuf *b = thread_buf();
	if (b == NULL)
		return;
	room(b, 34);
	uint64_t t = now_ns();
	put8(b, (flags & F_MUNMAP) ? R_UNMAP : R_FREE);
	put8(b, (uint8_t)flags);
	put64(b, atomic_fetch_add_explicit(&shared.seq, 1, memory_order_relaxed));
	put64(b, t - start_ns);
	put64(b, (uint64_t)(uintptr_t)p);
	if (flags & F_MUNMAP)
		put64(b, len);
	flush_if_old(b, t, len);
}

// own_buf is the calling thread's buffer, made on its first call.
static inline struct tbuf *own_buf(void) {
	struct tbuf *b = ts.buf;
	if (UNLIKELY(b == NULL)) {
		struct hook h = hook_enter();
		b = thread_buf();
		hook_exit(h);
	}
	return b;
}

// ---- counting and sampling ------------------------------------------------

// SUB_LE(x, v) subtracts v from the thread-local x and says whether x is
// then at or below 0; ADD_GT0(x, v) adds and says whether x is then
// above 0; ADD(x, v) adds. On x86-64 each is one instruction on x in
// place (and its flags), where gcc writes a load, the change, a store and
// a test: malloc's fast path is 17 instructions with them, 22 without.
// Elsewhere they are C.
#if defined(__x86_64__) && defined(__GCC_ASM_FLAG_OUTPUTS__)
#define SUB_LE(x, v)                                                                                                   \
	({                                                                                                             \
		int le_;                                                                                               \
		__asm__("subq %2, %0" : "+m"(x), "=@ccle"(le_) : "er"((int64_t)(v)));                                  \
		le_;                                                                                                   \
	})
#define ADD_GT0(x, v)                                                                                                  \
	({                                                                                                             \
		int gt_;                                                                                               \
		__asm__("addq %2, %0" : "+m"(x), "=@ccg"(gt_) : "er"((int64_t)(v)));                                   \
		gt_;                                                                                                   \
	})
#define ADD(x, v) __asm__("addq %1, %0" : "+m"(x) : "er"((int64_t)(v)))
#else
#define SUB_LE(x, v) (((x) -= (int64_t)(v)) <= 0)
#define ADD_GT0(x, v) (((x) += (int64_t)(v)) > 0)
#define ADD(x, v) ((x) += (int64_t)(v))
#endif

// count_publish publishes the thread's count, where it is not within a
// hook (there the count is put back at the hook's end).
__attribute__((noinline)) static void count_publish(void) {
	if (!ts.in_hook)
		publish(&ts);
}

// count_add adds u bytes to the thread's count of the bytes in use.
static inline __attribute__((always_inline)) void count_add(int64_t u) {
	ts.over += u;
	if (UNLIKELY(ts.over > 0 || ts.over < -2 * PUBLISH))
		count_publish();
}

// draw is the slow path of sampled: the thread's first allocation (seed
// the generator, make the buffer, draw the first interval and judge this
// one by it), a sampled one, and every one while ts.left stays at or
// below 0: while the library does not record (before its start, after
// its end, within a hook), and where blocks are not marked, where
// ts.gleft keeps the schedule and every allocation comes here.
__attribute__((noinline)) static int draw(size_t n) {
	if (ts.in_hook || !enabled || UNLIKELY(own_buf() == NULL))
		return 0;
	if (rate <= 1)
		return 1;
	if (!mark) {
		ts.gleft -= (int64_t)n;
		if (ts.gleft > 0)
			return 0;
	}
	int64_t next = 0;
	if (UNLIKELY(ts.rng == 0)) {
		ts.rng = (now_ns() ^ ((uint64_t)(uintptr_t)&ts << 16) ^ (uint64_t)syscall(SYS_gettid)) | 1;
		next = next_interval() - (int64_t)n;
	}
	int s = next <= 0;
	if (s)
		next = next_interval();
	if (mark)
		set_left(next);
	else
		ts.gleft = next;
	return s;
}

// sampled says whether an allocation of n bytes is sampled. It is asked
// before the allocation (a sampled block is marked as it is made).
static inline __attribute__((always_inline)) int sampled(size_t n) { return UNLIKELY(SUB_LE(ts.left, n)) && draw(n); }

// temporary says whether the sampled block p is freed by the thread that
// made it before that thread allocated again, and forgets it.
static int temporary(void *p) {
	if (ts.last != p)
		return 0;
	ts.last = NULL;
	return ts.allocs == ts.last_allocs;
}

// after_sampled and alloc_sampled are inlined into their callers: two
// frames fewer for each sample's unwinding to step through.
static inline __attribute__((always_inline)) void after_sampled(void *p, size_t n, int kind) {
	ts.last = p;
	ts.last_allocs = ts.allocs;
	if (kind == KIND_HEAP)
		count_add(count_of(p));
	struct hook h = hook_enter();
	record_alloc(p, n, kind);
	hook_exit(h);
}

// after_alloc counts a block the allocator returned, and records it if
// it was sampled (s). It counts whether or not the library records: the
// count of the bytes in use includes the blocks made before it started.
static inline __attribute__((always_inline)) void after_alloc(void *p, size_t n, int kind, int s) {
	if (UNLIKELY(p == NULL))
		return;
	ts.allocs++;
	if (UNLIKELY(s))
		after_sampled(p, n, kind);
	else if (kind == KIND_HEAP)
		count_add(count_of(p));
}

// alloc_sampled makes a sampled block of malloc (zero 0) or calloc
// (zero 1), marked where blocks are, and records it.
static inline __attribute__((always_inline)) void *alloc_sampled(size_t n, size_t m, int zero) {
	void *p = mark ? marked_alloc(n, 0, zero) : zero ? real_calloc(n, m) : real_malloc(n);
	after_alloc(p, n, KIND_HEAP, 1);
	return p;
}

// free_slow is the slow path of before_free: the free of a block the
// filter may have seen sampled (every free at rate 1).
__attribute__((noinline)) static void free_slow(void *p) {
	if (!enabled || ts.in_hook || (rate > 1 && !set_del((uint64_t)(uintptr_t)p)))
		return;
	int flags = temporary(p) ? F_TEMPORARY : 0;
	struct hook h = hook_enter();
	record_free(p, flags, (size_t)usable_of(p));
	hook_exit(h);
}

// free_marked frees a marked block (or a boot block: never freed):
// counts, records and frees its allocator block.
__attribute__((noinline)) static void free_marked(void *p) {
	if (in_boot(p))
		return;
	char *q = base(p);
	int64_t c = count_of(p);
	count_add(-c);
	if (enabled && !ts.in_hook) {
		int flags = temporary(p) ? F_TEMPORARY : 0;
		struct hook h = hook_enter();
		record_free(p, flags, (size_t)c);
		hook_exit(h);
	}
	real_free(q);
}

// before_free counts the free of p, and records it if p was sampled: the
// general path (blocks that are not marked: another allocator's, rate 1,
// realloc).
static inline __attribute__((always_inline)) void before_free(void *p) {
	count_add(-count_of(p));
	if (UNLIKELY(atomic_load_explicit(filter_slot((uint64_t)(uintptr_t)p), memory_order_relaxed) != 0))
		free_slow(p);
}

// ---- the process's start, fork, exec and end -----------------------------

static void write_maps_locked(void) {
	int m = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (m < 0)
		return;
	// The maps are read whole before the record is written: its length
	// comes first. A process with more than 4 MiB of maps lines is cut.
	size_t cap = 4 << 20, len = 0;
	char *t = own_map(cap, 0);
	if (t == NULL) {
		close(m);
		return;
	}
	for (;;) {
		ssize_t r = read(m, t + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
		if (len == cap)
			break;
	}
	close(m);
	unsigned char h[9];
	uint64_t l = len;
	h[0] = R_MAPS;
	memcpy(h + 1, &l, 8);
	if (getpid() == file_pid) {
		write_all(h, 9);
		write_all(t, len);
	}
	own_unmap(t);
}

static void open_file(void) {
	file_pid = getpid();
	start_ns = now_ns();
	char path[600];
	file_n = -1;
	for (int n = 0; n < 1000; n++) {
		records_path(path, n);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
		if (fd >= 0) {
			file_n = n;
			break;
		}
		if (errno != EEXIST)
			break;
	}
	struct stat st;
	if (fd >= 0) {
		fd = fd_high(fd);
		if (fstat(fd, &st) != 0) {
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0) {
		file_n = -1;
		return;
	}
	fd_dev = st.st_dev, fd_ino = st.st_ino;
	unsigned char h[40];
	memcpy(h, "MPSITES\n", 8);
	uint32_t v = RECORD_VERSION, pid = (uint32_t)file_pid, ppid = (uint32_t)getppid(), pad = 0;
	memcpy(h + 8, &v, 4);
	memcpy(h + 12, &pid, 4);
	memcpy(h + 16, &ppid, 4);
	memcpy(h + 20, &pad, 4);
	memcpy(h + 24, &rate, 8);
	memcpy(h + 32, &start_ns, 8); // CLOCK_MONOTONIC: the probe's clock too
	write_all(h, sizeof h);
}

// finish writes every buffer, the maps and the end record: at exit, and
// before an execve replaces the image.
static void finish(int how) {
	if (!enabled)
		return;
	ts.in_hook++;
	pthread_mutex_lock(&wlock);
	if (getpid() == file_pid) {
		enabled = 0;
		for (struct tbuf *b = bufs; b; b = b->next) {
			flush_locked(b);
			if (b->owner != NULL)
				publish(b->owner);
		}
		write_maps_locked();
		unsigned char c[33];
		int64_t pk = atomic_load(&shared.inuse_peak), ex = atomic_load(&shared.inuse_total);
		uint64_t ps = atomic_load(&shared.peak_seq), pn = atomic_load(&shared.peak_ns);
		// The end, with every thread's count published, is a moment of
		// the run too: a heap that never moved a thread's count by
		// PUBLISH peaks here, not at its first block (TestSmallHeapPeak).
		if (ex > pk) {
			pk = ex;
			ps = atomic_load(&shared.seq);
			pn = now_ns() - start_ns;
		}
		c[0] = R_COUNT;
		memcpy(c + 1, &pk, 8);
		memcpy(c + 9, &ps, 8);
		memcpy(c + 17, &pn, 8);
		memcpy(c + 25, &ex, 8);
		if (count != COUNT_NONE)
			write_all(c, sizeof c);
		unsigned char e[18];
		uint64_t s = atomic_load(&shared.seq);
		e[0] = R_END;
		e[1] = (unsigned char)how;
		memcpy(e + 2, &s, 8);
		uint64_t t = now_ns() - start_ns;
		memcpy(e + 10, &t, 8);
		write_all(e, sizeof e);
		if (how != END_EXEC)
			fd_close();
	}
	pthread_mutex_unlock(&wlock);
	ts.in_hook--;
}

static void at_exit(void) { finish(END_EXIT); }

// The signals whose default action ends the process without a core and
// that a user or a pipe sends (Ctrl-C, kill, a closed pipe): where the
// program left them at their default, the library's handler writes the
// records (as at exit; not on a thread inside the library, whose buffer
// is mid-record) and raises the signal again at its default, so that the
// program dies of it as it would have. Before, a program stopped with
// Ctrl-C lost its last buffers and its maps: its frames read as
// addresses. A handler the program sets replaces this one; a default it
// sets puts it back.
//
// The handler is the library's, not the program's: sigaction and signal
// tell the program of the disposition it set or found (view), SIG_DFL,
// while the library's handler stands in for it (ours). CPython installs
// its KeyboardInterrupt handler only where SIGINT is at its default:
// told of a handler, it installed none, and Ctrl-C killed it without a
// traceback or its finally blocks.
static const int end_signals[] = {SIGHUP, SIGINT, SIGPIPE, SIGALRM, SIGTERM, SIGUSR1, SIGUSR2};
enum { N_END = sizeof end_signals / sizeof end_signals[0] };
// By end_slot: ours says the library's handler is set where the program
// knows of view.
static _Atomic unsigned char ours[N_END];
static struct sigaction view[N_END];
static struct sigaction catcher; // on_end_signal's

// end_slot is sig's place in end_signals, -1 where it is not one.
static int end_slot(int sig) {
	for (int i = 0; i < N_END; i++)
		if (end_signals[i] == sig)
			return i;
	return -1;
}

static int at_default(const struct sigaction *a) { return !(a->sa_flags & SA_SIGINFO) && a->sa_handler == SIG_DFL; }

static void on_end_signal(int sig) {
	int e = errno, i = end_slot(sig);
	if (!ts.in_hook)
		finish(END_SIGNAL);
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	if (i >= 0) {
		dfl = view[i];
		dfl.sa_handler = SIG_DFL;
		dfl.sa_flags &= ~SA_SIGINFO;
		atomic_store(&ours[i], 0);
	}
	real_sigaction(sig, &dfl, NULL);
	raise(sig); // delivered, at its default, once this handler returns
	errno = e;
}

static void catch_end_signals(void) {
	catcher.sa_handler = on_end_signal;
	sigfillset(&catcher.sa_mask);
	for (int i = 0; i < N_END; i++) {
		struct sigaction old;
		if (real_sigaction(end_signals[i], NULL, &old) == 0 && at_default(&old) && real_sigaction(end_signals[i], &catcher, NULL) == 0) {
			view[i] = old;
			atomic_store(&ours[i], 1);
		}
	}
}

// A handler the program sets with SA_RESETHAND (Node's for SIGINT and
// SIGTERM, which raise the signal again) is set without it, behind
// trampoline, which does what the kernel would (the default back, the
// library's handler in its place) and calls it: the signal it raises
// is then the library's to catch, not the default's.
static struct sigaction handed[N_END];
static _Atomic unsigned char tramp[N_END];

static void trampoline(int sig, siginfo_t *info, void *uc) {
	int i = end_slot(sig);
	if (i < 0)
		return;
	struct sigaction h = handed[i];
	view[i] = (struct sigaction){.sa_handler = SIG_DFL};
	atomic_store(&tramp[i], 0);
	atomic_store(&ours[i], 1);
	real_sigaction(sig, &catcher, NULL);
	if (h.sa_flags & SA_SIGINFO)
		h.sa_sigaction(sig, info, uc);
	else
		h.sa_handler(sig);
}

EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
	if (UNLIKELY(!real_sigaction))
		resolve();
	// A vfork child (dash's, before its exec) shares ours and view with
	// its parent but not its dispositions: it sets its own, as asked.
	int i = end_slot(sig);
	if (i < 0 || getpid() != file_pid)
		return real_sigaction(sig, act, old);
	// stood: the library's handler stands in for view[i].
	int stood = atomic_load(&ours[i]) || atomic_load(&tramp[i]);
	struct sigaction was;
	if (stood)
		was = view[i];
	if (act != NULL) {
		struct sigaction set = *act;
		int o = 0, t = 0;
		if (at_default(act) && enabled) {
			set = catcher, o = 1;
		} else if ((act->sa_flags & SA_RESETHAND) && act->sa_handler != SIG_IGN && !at_default(act) && enabled) {
			set.sa_flags = (act->sa_flags & ~SA_RESETHAND) | SA_SIGINFO;
			set.sa_sigaction = trampoline;
			handed[i] = *act;
			t = 1;
		}
		int r = real_sigaction(sig, &set, stood ? NULL : &was);
		if (r != 0)
			return r;
		view[i] = *act;
		atomic_store(&ours[i], o);
		atomic_store(&tramp[i], t);
	} else if (!stood && real_sigaction(sig, NULL, &was) != 0) {
		return -1;
	}
	if (old != NULL)
		*old = was;
	return 0;
}

// signal_as sets h by sigaction with glibc's flags: signal's and
// bsd_signal's (SA_RESTART, sig blocked in the handler), sysv_signal's
// (SA_RESETHAND | SA_NODEFER).
static sighandler_t signal_as(int sig, sighandler_t h, int sysv) {
	if (h == SIG_ERR || sig <= 0 || sig >= NSIG) {
		errno = EINVAL;
		return SIG_ERR;
	}
	struct sigaction act, old;
	memset(&act, 0, sizeof act);
	act.sa_handler = h;
	sigemptyset(&act.sa_mask);
	if (sysv) {
		act.sa_flags = SA_RESETHAND | SA_NODEFER;
	} else {
		sigaddset(&act.sa_mask, sig);
		act.sa_flags = SA_RESTART;
	}
	if (sigaction(sig, &act, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

EXPORT sighandler_t signal(int sig, sighandler_t h) {
	if (UNLIKELY(!real_signal))
		resolve();
	return end_slot(sig) >= 0 ? signal_as(sig, h, 0) : real_signal(sig, h);
}

EXPORT sighandler_t bsd_signal(int sig, sighandler_t h) { return signal(sig, h); }

EXPORT sighandler_t sysv_signal(int sig, sighandler_t h) {
	if (UNLIKELY(!real_sysv_signal))
		resolve();
	return end_slot(sig) >= 0 ? signal_as(sig, h, 1) : real_sysv_signal(sig, h);
}

static void fork_prepare(void) {
	ts.in_hook++;
	pthread_mutex_lock(&wlock);
	if (ts.buf)
		flush_locked(ts.buf);
}

static void fork_parent(void) {
	pthread_mutex_unlock(&wlock);
	ts.in_hook--;
}

// fork_child: the child writes its own file. The parent's other threads
// do not exist here: their buffers (copies, already the parent's to
// write) are dropped from the list and reused.
static void fork_child(void) {
	pthread_mutex_init(&wlock, NULL);
	for (struct tbuf *b = bufs; b; b = b->next) {
		b->len = 0;
		if (b != ts.buf)
			b->owner = NULL;
	}
	ts.allocs_w = ts.allocs, ts.bytes_w = (uint64_t)(ts.drawn - ts.left);
	publish(&ts);
	// The child holds what the parent held: its count goes on from
	// there, its peak starts again.
	atomic_store(&shared.inuse_peak, atomic_load(&shared.inuse_total));
	atomic_store(&shared.peak_seq, atomic_load(&shared.seq));
	atomic_store(&shared.peak_ns, 0);
	fd_close();
	file_pid = getpid();
	if (enabled)
		open_file();
	ts.in_hook--;
}

__attribute__((constructor(101))) static void init(void) {
	if (!real_malloc)
		resolve();
	const char *d = getenv("MEMPROBE_SITES_DIR");
	if (d == NULL || strlen(d) >= sizeof dir)
		return;
	strcpy(dir, d);
	const char *r = getenv("MEMPROBE_SITES_RATE");
	if (r != NULL) {
		char *end;
		unsigned long long v = strtoull(r, &end, 10);
		if (end != r && v >= 1)
			rate = v;
	}
	long pg = sysconf(_SC_PAGESIZE);
	if (pg > 0)
		page = (size_t)pg;
	if (rate > 1)
		cache_mask = STACK_CACHE_SAMPLED - 1;
	if (count == COUNT_HEADER && rate > 1) {
		mark = 1;
		free_below = UINTPTR_MAX;
	} else {
		_Atomic uint8_t *f = own_map(FILTER_BYTES, 0);
		if (f == NULL)
			return;
		if (rate > 1) {
			_Atomic uint64_t *st = own_map(SET_SLOTS * sizeof *set, MAP_NORESERVE);
			if (st == NULL)
				return;
			set = st;
		} else {
			memset((void *)f, 255, FILTER_BYTES); // every free is recorded
		}
		filter = f;
	}
	struct hook h = hook_enter();
	const char *u = getenv("MEMPROBE_SITES_UNWIND");
	if (u != NULL && strcmp(u, "libgcc") == 0)
		unwinder = UNWIND_LIBGCC;
	else if (u != NULL && strcmp(u, "libunwind") == 0)
		unwinder = UNWIND_LIBUNWIND;
	else if (u != NULL && strcmp(u, "cfi") == 0)
		unwinder = UNWIND_CFI_ONLY;
#ifdef CFI_UNWIND
	find_object = (int (*)(void *, struct dl_find_object *))dlsym(RTLD_DEFAULT, "_dl_find_object");
#endif
	if (unwinder != UNWIND_LIBGCC) {
		void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
		if (h != NULL)
			unw_bt = (int (*)(void **, int))dlsym(h, "unw_backtrace");
	}
	pthread_key_create(&key, thread_exit);
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	atexit(at_exit);
	catch_end_signals();
	open_file();
	hook_exit(h);
	if (fd >= 0)
		enabled = 1;
}

__attribute__((destructor)) static void fini(void) { finish(END_EXIT); }

// ---- the wrapped functions ----------------------------------------------

// The fast paths of malloc, calloc and free are taken where blocks are
// marked (glibc's allocator, a rate above 1), ts.left is above 0 (the
// library records, the thread has begun, this is not a sample) and the
// block is not marked. Everything else goes to the general paths
// (malloc_slow, calloc_slow, free_other, free_marked).

// publish_ret publishes the thread's count and returns p: a tail call
// from the fast paths, which then keep no frame across it (two
// instructions fewer a call: the stack pointer's moves).
__attribute__((noinline)) static void *publish_ret(void *p) {
	count_publish();
	return p;
}

// count_new counts a block of the fast paths (glibc's, not marked).
static inline __attribute__((always_inline)) void *count_new(void *p) {
	if (LIKELY(p != NULL)) {
		ts.allocs++;
		if (UNLIKELY(ADD_GT0(ts.over, count_h(((size_t *)p)[-1]))))
			return publish_ret(p);
	}
	return p;
}

__attribute__((noinline)) static void *malloc_slow(size_t n) {
	if (UNLIKELY(!real_malloc)) {
		if (resolving)
			return boot_alloc(n);
		resolve();
	}
	if (UNLIKELY(draw(n)))
		return alloc_sampled(n, 1, 0);
	void *p = real_malloc(n);
	after_alloc(p, n, KIND_HEAP, 0);
	return p;
}

EXPORT void *malloc(size_t n) {
	if (UNLIKELY(SUB_LE(ts.left, n)))
		return malloc_slow(n);
	return count_new(real_malloc(n));
}

__attribute__((noinline)) static void *calloc_slow(size_t n, size_t m) {
	if (UNLIKELY(!real_calloc)) {
		if (resolving)
			return n > 0 && m > sizeof boot / n ? NULL : boot_alloc(n * m); // zeroed: static
		resolve();
	}
	size_t t;
	if (UNLIKELY(__builtin_mul_overflow(n, m, &t)))
		return real_calloc(n, m);
	if (UNLIKELY(draw(t)))
		return alloc_sampled(t, 1, 1);
	void *p = real_calloc(n, m);
	after_alloc(p, t, KIND_HEAP, 0);
	return p;
}

EXPORT void *calloc(size_t n, size_t m) {
	size_t t;
	if (UNLIKELY(__builtin_mul_overflow(n, m, &t)))
		return calloc_slow(n, m);
	if (UNLIKELY(SUB_LE(ts.left, t)))
		return calloc_slow(n, m);
	return count_new(real_calloc(n, m));
}

__attribute__((noinline)) static void free_other(void *p) {
	if (p == NULL || in_boot(p))
		return;
	if (UNLIKELY(!real_free))
		resolve();
	before_free(p);
	real_free(p);
}

__attribute__((noinline)) static void free_publish(void *p) {
	count_publish();
	real_free(p);
}

EXPORT void free(void *p) {
	if (UNLIKELY((uintptr_t)p - 1 >= free_below)) {
		free_other(p);
		return;
	}
	size_t h = ((size_t *)p)[-1];
	if (UNLIKELY(h & 8)) {
		free_marked(p);
		return;
	}
	ADD(ts.over, -count_h(h));
	if (UNLIKELY(ts.over < -2 * PUBLISH)) {
		free_publish(p);
		return;
	}
	real_free(p);
}

// realloc_moved is realloc of a block that is marked, or to a sampled
// one: the allocator cannot resize across the prefix, so the block moves.
__attribute__((noinline)) static void *realloc_moved(void *p, size_t n, int was, int s) {
	size_t old = was ? marked_usable(p) : usable(p);
	void *q = s ? marked_alloc(n, 0, 0) : real_malloc(n);
	if (q == NULL)
		return NULL;
	memcpy(q, p, old < n ? old : n);
	after_alloc(q, n, KIND_HEAP, s);
	free(p);
	return q;
}

EXPORT void *realloc(void *p, size_t n) {
	if (UNLIKELY(!real_realloc)) {
		if (resolving)
			return boot_alloc(n);
		resolve();
	}
	if (UNLIKELY(in_boot(p))) {
		void *q = malloc(n);
		if (q)
			memcpy(q, p, n < (size_t)(boot + sizeof boot - (char *)p) ? n : (size_t)(boot + sizeof boot - (char *)p));
		return q;
	}
	if (p == NULL)
		return malloc(n);
	if (n == 0) {
		free(p);
		return NULL;
	}
	int was = mark && marked(p);
	int s = sampled(n);
	if (UNLIKELY(was || (s && mark)))
		return realloc_moved(p, n, was, s);
	// The old block is counted (and recorded, if sampled) freed before
	// the call: once realloc returns, another thread may be given its
	// address. If the call fails, p is still the program's.
	int64_t u = count_of(p);
	before_free(p);
	void *q = real_realloc(p, n);
	if (q == NULL) {
		count_add(u);
		return NULL;
	}
	after_alloc(q, n, KIND_HEAP, s);
	return q;
}

EXPORT void *reallocarray(void *p, size_t n, size_t m) {
	if (UNLIKELY(!real_reallocarray))
		resolve();
	size_t s;
	if (__builtin_mul_overflow(n, m, &s)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, s);
}

EXPORT size_t malloc_usable_size(void *p) {
	if (UNLIKELY(!real_usable))
		resolve();
	if (p == NULL || in_boot(p))
		return 0;
	if (mark && marked(p))
		return marked_usable(p);
	return real_usable(p);
}

// free_sized and free_aligned_sized (C23) free as free does: glibc's
// would be given a marked block's pointer.
EXPORT void free_sized(void *p, size_t n) {
	(void)n;
	free(p);
}

EXPORT void free_aligned_sized(void *p, size_t align, size_t n) {
	(void)align;
	(void)n;
	free(p);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n) {
	if (UNLIKELY(!real_posix_memalign))
		resolve();
	int s = sampled(n);
	if (UNLIKELY(s && mark) && align % sizeof(void *) == 0 && (align & (align - 1)) == 0) {
		void *p = marked_alloc(n, align, 0);
		if (p == NULL)
			return ENOMEM;
		*out = p;
		after_alloc(p, n, KIND_HEAP, s);
		return 0;
	}
	int r = real_posix_memalign(out, align, n);
	if (r == 0)
		after_alloc(*out, n, KIND_HEAP, s && !mark);
	return r;
}

// aligned is the memalign family: the allocator's call where the block is
// not sampled (or a marked block cannot be made for this alignment).
#define ALIGNED(call, align, n, markable)                                                                              \
	int s = sampled(n);                                                                                            \
	void *p = UNLIKELY(s && mark) && (markable) ? marked_alloc(n, align, 0) : call;                               \
	after_alloc(p, n, KIND_HEAP, s && (!mark || (markable)));                                                     \
	return p

EXPORT void *aligned_alloc(size_t align, size_t n) {
	if (UNLIKELY(!real_aligned_alloc))
		resolve();
	ALIGNED(real_aligned_alloc(align, n), align, n, align != 0 && (align & (align - 1)) == 0);
}

EXPORT void *memalign(size_t align, size_t n) {
	if (UNLIKELY(!real_memalign))
		resolve();
	ALIGNED(real_memalign(align, n), align, n, 1);
}

EXPORT void *valloc(size_t n) {
	if (UNLIKELY(!real_valloc))
		resolve();
	ALIGNED(real_valloc(n), page, n, 1);
}

EXPORT void *pvalloc(size_t n) {
	if (UNLIKELY(!real_pvalloc))
		resolve();
	size_t r = n ? (n + page - 1) & ~(page - 1) : page;
	ALIGNED(real_pvalloc(n), page, r, r >= n);
}

// record_unmap records that [addr, addr+len) of the program's mappings
// is gone (munmap, or a MAP_FIXED mapping over it).
static void record_unmap(void *addr, size_t len, int flags) {
	if (set != NULL)
		set_del((uint64_t)(uintptr_t)addr);
	struct hook h = hook_enter();
	record_free(addr, flags | F_MUNMAP, len);
	hook_exit(h);
}

// mmap and munmap: the program's own anonymous private mappings (the C
// allocator calls the kernel through glibc's internal entry, not these),
// a PROT_NONE one as a reservation. A MAP_FIXED mapping replaces what
// was there: where it is not itself recorded, its range is recorded as
// unmapped (a JVM or V8 giving back part of its heap maps PROT_NONE over
// it; committing maps read-write over its reservation).
EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int f, off_t off) {
	if (UNLIKELY(!real_mmap))
		resolve();
	void *p = real_mmap(addr, len, prot, flags, f, off);
	if (p == MAP_FAILED || ts.in_hook)
		return p;
	int s = 0;
	if ((flags & MAP_ANONYMOUS) && (flags & MAP_PRIVATE)) {
		s = sampled(len);
		if (prot != PROT_NONE) {
			after_alloc(p, len, KIND_MMAP, s);
		} else {
			// Address space, no allocation: out of the totals
			// (sampled moved the bytes allocated by len).
			ts.drawn -= (int64_t)len;
			if (s)
				after_sampled(p, len, KIND_RESERVE);
		}
	}
	if ((flags & MAP_FIXED) && !s && enabled)
		record_unmap(p, len, 0);
	return p;
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int f, off_t off) {
	return mmap(addr, len, prot, flags, f, off);
}

EXPORT int munmap(void *addr, size_t len) {
	if (UNLIKELY(!real_munmap))
		resolve();
	if (enabled && !ts.in_hook && addr != NULL)
		record_unmap(addr, len, temporary(addr) ? F_TEMPORARY : 0);
	return real_munmap(addr, len);
}

// mprotect: every call of the program's that changes a range's access
// is recorded, with its stack (a system call each: V8 commits its heap's
// pages in its reservations this way, and flips its code pages between
// writable and executable). The probe tells a commit from a flip by what
// it has recorded of the range.
EXPORT int mprotect(void *addr, size_t len, int prot) {
	if (UNLIKELY(!real_mprotect))
		resolve();
	int r = real_mprotect(addr, len, prot);
	if (r == 0 && len > 0 && enabled && !ts.in_hook) {
		struct hook h = hook_enter();
		record_alloc(addr, len, prot == PROT_NONE ? KIND_UNPROTECT : KIND_PROTECT);
		hook_exit(h);
	}
	return r;
}

// The exec family: the new image loads this library again (LD_PRELOAD is
// inherited) and writes a new file; this one ends here. glibc's execv,
// execvp and execl* call the kernel through an internal entry, not
// execve, so each is wrapped.
#define EXEC_WRAP(call)                                                                                                \
	int was = enabled;                                                                                             \
	finish(END_EXEC);                                                                                              \
	int r = call;                                                                                                  \
	if (was && fd >= 0)                                                                                            \
		enabled = 1; /* it failed: go on in this file */                                                       \
	return r

static void *next(const char *name) {
	if (UNLIKELY(!real_malloc))
		resolve();
	return dlsym(RTLD_NEXT, name);
}

EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
	static int (*f)(const char *, char *const[], char *const[]);
	if (!f)
		f = next("execve");
	EXEC_WRAP(f(path, argv, envp));
}

EXPORT int execv(const char *path, char *const argv[]) {
	static int (*f)(const char *, char *const[]);
	if (!f)
		f = next("execv");
	EXEC_WRAP(f(path, argv));
}

EXPORT int execvp(const char *file, char *const argv[]) {
	static int (*f)(const char *, char *const[]);
	if (!f)
		f = next("execvp");
	EXEC_WRAP(f(file, argv));
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) {
	static int (*f)(const char *, char *const[], char *const[]);
	if (!f)
		f = next("execvpe");
	EXEC_WRAP(f(file, argv, envp));
}

EXPORT int fexecve(int fdesc, char *const argv[], char *const envp[]) {
	static int (*f)(int, char *const[], char *const[]);
	if (!f)
		f = next("fexecve");
	EXEC_WRAP(f(fdesc, argv, envp));
}

// _exit and _Exit end the process without exit's handlers, at_exit's
// finish among them: dash's exit builtin is one, and every sh -c lost
// its last buffer and its maps. They finish first, except on a thread
// inside the library (a signal handler's _exit: its buffer is mid-record)
// or in a vfork child (finish writes nothing in another pid). The real
// calls are resolved with the allocator's, never here: a vfork child
// shares its parent's memory, and dlsym may allocate.
static __attribute__((noreturn)) void end_now(void (*f)(int), int status) {
	if (!ts.in_hook)
		finish(END_EXIT);
	if (f != NULL)
		f(status);
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

EXPORT void _exit(int status) { end_now(real__exit, status); }

EXPORT void _Exit(int status) { end_now(real__Exit, status); }

// The execl family, its arguments gathered into an array (at most 4095).
#define GATHER(first, extra)                                                                                           \
	char *argv[4096];                                                                                              \
	int n = 0;                                                                                                     \
	va_list ap;                                                                                                    \
	va_start(ap, first);                                                                                           \
	argv[n++] = (char *)first;                                                                                     \
	while (argv[n - 1] != NULL && n < 4095)                                                                        \
		argv[n++] = va_arg(ap, char *);                                                                        \
	argv[n] = NULL;                                                                                                \
	extra;                                                                                                         \
	va_end(ap)

EXPORT int execl(const char *path, const char *arg, ...) {
	GATHER(arg, (void)0);
	return execv(path, argv);
}

EXPORT int execlp(const char *file, const char *arg, ...) {
	GATHER(arg, (void)0);
	return execvp(file, argv);
}

EXPORT int execle(const char *path, const char *arg, ...) {
	char **envp;
	GATHER(arg, envp = va_arg(ap, char **));
	return execve(path, argv, envp);
}

EXPORT int dlclose(void *h) {
	if (UNLIKELY(!real_dlclose))
		resolve();
	// The library's mappings go away: write them first, so that its
	// frames can be named.
	if (enabled && !ts.in_hook) {
		ts.in_hook++;
		pthread_mutex_lock(&wlock);
		if (ts.buf)
			flush_locked(ts.buf);
		write_maps_locked();
		pthread_mutex_unlock(&wlock);
		ts.in_hook--;
	}
	int r = real_dlclose(h);
#ifdef CFI_UNWIND
	atomic_fetch_add(&rules_gen, 1); // its code's rules go with it
#endif
	return r;
}
