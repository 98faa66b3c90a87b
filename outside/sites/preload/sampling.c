// sampling.c: which allocations are sampled (a Poisson process over the
// bytes), the set of sampled addresses or the mark of a sampled block by
// which a free is told, and the count of the bytes in use.
//
// Part of sites.c, which #includes every unit in order: the library is one
// translation unit, so that the fast paths inline what they call as they
// did in one file (scripts/sites-fastpath.sh). Not compiled alone.

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
		return (int64_t)real_malloc_usable_size(p);
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
		return (int64_t)real_malloc_usable_size(p);
	return 0;
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
