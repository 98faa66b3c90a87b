// hooks.c: the wrapped allocator and the program's mmap, munmap and
// mprotect: their fast paths and their general paths (count, sample,
// record).
//
// Part of sites.c, which #includes every unit in order: the library is one
// translation unit, so that the fast paths inline what they call as they
// did in one file (scripts/sites-fastpath.sh). Not compiled alone.

// ---- the general paths --------------------------------------------------

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
	NEED_BOOT(malloc, boot_alloc(n));
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
	NEED_BOOT(calloc, n > 0 && m > sizeof boot / n ? NULL : boot_alloc(n * m)); // zeroed: static
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
	NEED(free);
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
	NEED_BOOT(realloc, boot_alloc(n));
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
	NEED(reallocarray);
	size_t s;
	if (__builtin_mul_overflow(n, m, &s)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, s);
}

EXPORT size_t malloc_usable_size(void *p) {
	NEED(malloc_usable_size);
	if (p == NULL || in_boot(p))
		return 0;
	if (mark && marked(p))
		return marked_usable(p);
	return real_malloc_usable_size(p);
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
	NEED(posix_memalign);
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
	NEED(aligned_alloc);
	ALIGNED(real_aligned_alloc(align, n), align, n, align != 0 && (align & (align - 1)) == 0);
}

EXPORT void *memalign(size_t align, size_t n) {
	NEED(memalign);
	ALIGNED(real_memalign(align, n), align, n, 1);
}

EXPORT void *valloc(size_t n) {
	NEED(valloc);
	ALIGNED(real_valloc(n), page, n, 1);
}

EXPORT void *pvalloc(size_t n) {
	NEED(pvalloc);
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
	NEED(mmap);
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
	NEED(munmap);
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
	NEED(mprotect);
	int r = real_mprotect(addr, len, prot);
	if (r == 0 && len > 0 && enabled && !ts.in_hook) {
		struct hook h = hook_enter();
		record_alloc(addr, len, prot == PROT_NONE ? KIND_UNPROTECT : KIND_PROTECT);
		hook_exit(h);
	}
	return r;
}

// dlopen drops RTLD_DEEPBIND where the library records (as heaptrack's
// does): a library loaded with it binds malloc and free to the C
// library's before this one's, so that its free of a sampled block (the
// program's, marked: its pointer is inside the allocator's block) aborts
// in glibc, and its own blocks go unrecorded, their frees miscounted.
// The mark cannot go instead: the fast path tells a sampled block by the
// word before it, and a table looked up by every free costs more than
// the whole fast path. What the program loses: such a library's own
// definitions no longer come before the program's of the same names
// (one line on stderr says so). The call is a tail call: dlopen finds
// its caller's RUNPATH by its return address, which stays the caller's.
static _Atomic int deepbind_told;

__attribute__((noinline)) static void deepbind_tell(const char *file) {
	if (atomic_exchange(&deepbind_told, 1))
		return;
	char msg[512];
	int n = snprintf(msg, sizeof msg,
			 "libmemprobe-sites: dlopen(%.300s) with RTLD_DEEPBIND: the flag is dropped (its malloc and free must be the recorded ones)\n",
			 file);
	int e = errno;
	if (n > (int)sizeof msg - 1)
		n = (int)sizeof msg - 1;
	if (n > 0)
		(void)!write(2, msg, (size_t)n);
	errno = e;
}

EXPORT void *dlopen(const char *file, int flags) {
	NEED(dlopen);
	if (UNLIKELY(flags & RTLD_DEEPBIND) && rate != 0 && file != NULL) {
		flags &= ~RTLD_DEEPBIND;
		deepbind_tell(file);
	}
	return real_dlopen(file, flags);
}
