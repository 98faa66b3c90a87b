// records.c: the records file and the threads' buffers, and the records
// of an allocation and of a free (records.go reads them).
//
// Part of sites.c, which #includes every unit in order: the library is one
// translation unit, so that the fast paths inline what they call as they
// did in one file (scripts/sites-fastpath.sh). Not compiled alone.

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
	if (b->len > b->sent && fd >= 0 && getpid() == file_pid)
		write_all(b->data + b->sent, b->len - b->sent);
	b->len = 0, b->sent = 0;
	commit(b);
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

static __attribute__((unused)) void own_unmap(void *p) {
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
		memset(b->codes, 0, sizeof b->codes);
	}
	b->owner = &ts;
	b->len = 0;
	pthread_mutex_unlock(&wlock);
	ts.buf = b;
	pthread_setspecific(key, b); // may allocate: callers hold in_hook
	return b;
}

// ---- recording ----------------------------------------------------------

// py_describe writes a code record for each of the n frames' code
// objects not yet described in this file (b->codes), and puts each
// frame's key in key[]; a frame whose code object cannot be read is
// left out. It returns the frames kept.
static int py_describe(struct tbuf *b, const uint64_t *code, uint64_t *key, uint32_t *off, int n) {
	if (b->codes_pid != file_pid) {
		memset(b->codes, 0, sizeof b->codes);
		b->codes_pid = file_pid;
	}
	int k = 0;
	for (int i = 0; i < n; i++) {
		uint64_t id = py_code_key(code[i]);
		if (id == 0)
			continue;
		uint64_t *c = &b->codes[id & (CODE_CACHE - 1)];
		if (*c != id) {
			// 'C' u64 key, u64 address, i32 first line, u32 file length,
			// u32 name length, u32 table length, then each, cut at its cap
			// (each length that of the bytes written).
			room(b, 33 + CODE_FILE_CAP + CODE_NAME_CAP + CODE_LINES_CAP);
			unsigned char *h = b->data + b->len;
			struct py_code pc = {.file = (char *)h + 33, .file_cap = CODE_FILE_CAP, .qualname = (char *)h, .lines = h};
			if (py_code_info(code[i], &pc) != 0)
				continue;
			size_t fl = pc.file_len < CODE_FILE_CAP ? pc.file_len : CODE_FILE_CAP;
			pc.qualname = (char *)h + 33 + fl, pc.qualname_cap = CODE_NAME_CAP;
			if (py_code_info(code[i], &pc) != 0)
				continue;
			size_t ql = pc.qualname_len < CODE_NAME_CAP ? pc.qualname_len : CODE_NAME_CAP;
			pc.lines = h + 33 + fl + ql, pc.lines_cap = CODE_LINES_CAP;
			if (py_code_info(code[i], &pc) != 0)
				continue;
			size_t ll = pc.lines_len < CODE_LINES_CAP ? pc.lines_len : CODE_LINES_CAP;
			uint32_t lens[3] = {(uint32_t)fl, (uint32_t)ql, (uint32_t)ll};
			put8(b, R_CODE);
			put64(b, id);
			put64(b, code[i]);
			put(b, &pc.firstline, 4);
			put(b, lens, 12);
			b->len += fl + ql + ll;
			*c = id;
		}
		key[k] = id, off[k] = off[i];
		k++;
	}
	return k;
}

__attribute__((noinline)) static void record_alloc(void *p, size_t n, int kind) {
	struct tbuf *b = thread_buf();
	if (b == NULL)
		return;
	struct frames f;
	backtrace(b, &f);
	uint64_t h = 0xcbf29ce484222325ULL;
	for (int i = 0; i < f.n; i++)
		h = mix(h ^ f.pc[i]) + (uint64_t)i;
	// The thread's Python frames (none where it has no Python state, or
	// the program is no Python the library reads): a stack of their own,
	// its hash over both.
	uint64_t pyc[PY_FRAMES], pyk[PY_FRAMES];
	uint32_t pyo[PY_FRAMES];
	int k = 0;
	if (py != NULL && (k = py_stack(pyc, pyo, PY_FRAMES)) > 0) {
		k = py_describe(b, pyc, pyk, pyo, k);
		for (int i = 0; i < k; i++)
			h = mix(h ^ pyk[i] ^ ((uint64_t)pyo[i] << 1)) + (uint64_t)(f.n + i);
	}
	if (h < 2)
		h += 2;
	room(b, 2 + 8 + 8 * (size_t)f.n + 1 + 12 * (size_t)k + 58);
	uint64_t *c = &b->cache[h & cache_mask];
	if (*c != h) {
		*c = h;
		put8(b, k > 0 ? R_PYSTACK : R_STACK);
		put8(b, (uint8_t)f.n);
		put64(b, h);
		put(b, f.pc, 8 * (size_t)f.n);
		if (k > 0) {
			// 'Y' is 'S' followed by u8 k, k x (u64 code key, u32
			// instruction offset | PY_ENTRY), innermost first.
			put8(b, (uint8_t)k);
			for (int i = 0; i < k; i++) {
				put64(b, pyk[i]);
				put(b, &pyo[i], 4);
			}
		}
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
	MID_RECORD();
	put64(b, (uint64_t)(uintptr_t)p);
	put64(b, n);
	put64(b, h);
	put64(b, (uint64_t)atomic_load_explicit(&shared.inuse_total, memory_order_relaxed));
	put64(b, u);
	commit(b);
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
	commit(b);
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
