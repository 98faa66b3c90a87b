// lifecycle.c: the process's start (init), fork, exec and end: the
// records file opened, the maps and the end record written.
//
// Part of sites.c, which #includes every unit in order: the library is one
// translation unit, so that the fast paths inline what they call as they
// did in one file (scripts/sites-fastpath.sh). Not compiled alone.

// ---- the process's start, fork, exec and end -----------------------------

// The maps are read whole before their record is written (its length
// comes first), into maps_buf: mapped once at the start (address space,
// MAP_NORESERVE; its pages given back after each use), so that an end
// by a signal maps nothing. A process with more than MAPS_CAP bytes of
// maps lines is cut. maps_buf holds the record: its 9 bytes of head,
// then the text.
enum { MAPS_CAP = 4 << 20 };
static unsigned char *maps_buf;

// write_maps_locked writes /proc/self/maps ('M'); wlock held (maps_buf
// is the lock's). Async-signal-safe: open, read, write, madvise.
static void write_maps_locked(void) {
	if (maps_buf == NULL || getpid() != file_pid)
		return;
	int m = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (m < 0)
		return;
	unsigned char *t = maps_buf + 9;
	size_t len = 0;
	for (;;) {
		ssize_t r = read(m, t + len, MAPS_CAP - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
		if (len == MAPS_CAP)
			break;
	}
	close(m);
	uint64_t l = len;
	maps_buf[0] = R_MAPS;
	memcpy(maps_buf + 1, &l, 8);
	write_all(maps_buf, 9 + len); // one write: whole, whoever else writes
	uintptr_t from = ((uintptr_t)maps_buf + page - 1) & ~(uintptr_t)(page - 1);
	uintptr_t to = ((uintptr_t)t + len + page - 1) & ~(uintptr_t)(page - 1);
	if (to > from)
		madvise((void *)from, to - from, MADV_DONTNEED);
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

// unpub is t's count not yet in inuse_total, read without changing it:
// t may be another thread's, running.
static int64_t unpub(struct tstate *t) {
	int64_t d = __atomic_load_n(&t->over, __ATOMIC_RELAXED) + PUBLISH;
	if (d < UNPUB_NEW / 2)
		d -= UNPUB_NEW; // its first count
	return d;
}

// send_locked writes what of b's records is committed and not yet
// written, then its thread's counts ('T', made here); wlock held. Of b it
// changes only sent: its thread may be in the middle of a record (the
// thread that ends, a signal's, or any other), which stays its own to
// finish, and to write at its next flush if the image goes on (a failed
// execve). Async-signal-safe: plain loads and write.
static void send_locked(struct tbuf *b) {
	size_t c = atomic_load_explicit(&b->committed, memory_order_acquire);
	if (c > b->sent) {
		write_all(b->data + b->sent, c - b->sent);
		b->sent = c;
	}
	struct tstate *t = b->owner;
	if (t == NULL)
		return;
	uint64_t a = __atomic_load_n(&t->allocs, __ATOMIC_RELAXED);
	uint64_t by = (uint64_t)(__atomic_load_n(&t->drawn, __ATOMIC_RELAXED) - __atomic_load_n(&t->left, __ATOMIC_RELAXED));
	if (a == t->allocs_w)
		return;
	unsigned char r[17];
	uint64_t da = a - t->allocs_w, db = by - t->bytes_w;
	r[0] = R_TOTALS;
	memcpy(r + 1, &da, 8);
	memcpy(r + 9, &db, 8);
	write_all(r, sizeof r);
	t->allocs_w = a, t->bytes_w = by;
}

// write_end writes the end record ('E'), how ended.
static void write_end(int how) {
	unsigned char e[18];
	uint64_t s = atomic_load(&shared.seq);
	e[0] = R_END;
	e[1] = (unsigned char)how;
	memcpy(e + 2, &s, 8);
	uint64_t t = now_ns() - start_ns;
	memcpy(e + 10, &t, 8);
	write_all(e, sizeof e);
}

// end_locked ends the image's records: every buffer's committed records,
// the maps, the count and the end record (how, END_CUT added by a
// signal's end that cut records); wlock held, the process the file's.
// It changes no thread's state but the buffers' sent: an end by a signal
// runs it (async-signal-safe), and so does one by exit or execve while
// other threads record.
static void end_locked(int how) {
	enabled = 0;
	int64_t ex = atomic_load(&shared.inuse_total);
	for (struct tbuf *b = bufs; b; b = b->next) {
		send_locked(b);
		if (b->owner != NULL)
			ex += unpub(b->owner);
	}
	write_maps_locked();
	unsigned char c[33];
	int64_t pk = atomic_load(&shared.inuse_peak);
	uint64_t ps = atomic_load(&shared.peak_seq), pn = atomic_load(&shared.peak_ns);
	// The end, with every thread's count added, is a moment of the run
	// too: a heap that never moved a thread's count by PUBLISH peaks
	// here, not at its first block (TestSmallHeapPeak).
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
	write_end(how);
	if ((how & ~END_CUT) != END_EXEC)
		fd_close();
}

// finish ends the records (end_locked): at exit, and before an execve
// replaces the image.
static void finish(int how) {
	if (!enabled)
		return;
	ts.in_hook++;
	pthread_mutex_lock(&wlock);
	if (enabled && getpid() == file_pid)
		end_locked(how);
	pthread_mutex_unlock(&wlock);
	ts.in_hook--;
}

static void at_exit(void) { finish(END_EXIT); }

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
		b->len = 0, b->sent = 0;
		commit(b);
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

// refuse says on stderr that the library does not record, for the
// variable name's value v (NULL: not set). The probe always sets its
// variables (sites.Env) to values it has checked (sites.RecordOptions):
// a bad one is a mistake to show, not one to paper over with a default.
static void refuse(const char *name, const char *v, const char *want) {
	char msg[256];
	int n = v == NULL ? snprintf(msg, sizeof msg, "libmemprobe-sites: %s is not set: %s; not recording\n", name, want)
			  : snprintf(msg, sizeof msg, "libmemprobe-sites: %s=%.80s: %s; not recording\n", name, v, want);
	if (n > (int)sizeof msg - 1)
		n = (int)sizeof msg - 1;
	int e = errno;
	if (n > 0)
		(void)!write(2, msg, (size_t)n);
	errno = e;
}

// parse_rate is MEMPROBE_SITES_RATE's value s: decimal digits only, 1
// to INT64_MAX (the probe's int64). 0 where s is anything else.
static uint64_t parse_rate(const char *s) {
	if (s == NULL || *s == '\0')
		return 0;
	uint64_t v = 0;
	for (; *s != '\0'; s++)
		if (*s < '0' || *s > '9' || __builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, (uint64_t)(*s - '0'), &v))
			return 0;
	return v <= INT64_MAX ? v : 0;
}

// init records where MEMPROBE_SITES_DIR is set (where it is not, the
// library only passes the calls on), given a good MEMPROBE_SITES_RATE.
__attribute__((constructor(101))) static void init(void) {
	NEED(malloc);
	const char *d = getenv("MEMPROBE_SITES_DIR");
	if (d == NULL)
		return;
	if (strlen(d) >= sizeof dir) {
		refuse("MEMPROBE_SITES_DIR", d, "want a directory's path of at most 511 bytes");
		return;
	}
	strcpy(dir, d);
	const char *r = getenv("MEMPROBE_SITES_RATE");
	rate = parse_rate(r);
	if (rate == 0) {
		refuse("MEMPROBE_SITES_RATE", r, "want a number of bytes, 1 or more");
		return;
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
	maps_buf = own_map(9 + MAPS_CAP, MAP_NORESERVE);
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
	py_init(); // Python frames: the interpreter's version and layout, once
	pthread_key_create(&key, thread_exit);
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	atexit(at_exit);
	catch_end_signals();
	open_file();
	// The maps at the start too: a program that ends without the C
	// library's exit (the Go runtime's exit_group, a crash) writes no
	// end, and its frames were addresses and its executable unknown.
	if (fd >= 0) {
		pthread_mutex_lock(&wlock);
		write_maps_locked();
		pthread_mutex_unlock(&wlock);
	}
	hook_exit(h);
	if (fd >= 0)
		enabled = 1;
}

__attribute__((destructor)) static void fini(void) { finish(END_EXIT); }

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

EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
	NEED(execve);
	EXEC_WRAP(real_execve(path, argv, envp));
}

EXPORT int execv(const char *path, char *const argv[]) {
	NEED(execv);
	EXEC_WRAP(real_execv(path, argv));
}

EXPORT int execvp(const char *file, char *const argv[]) {
	NEED(execvp);
	EXEC_WRAP(real_execvp(file, argv));
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) {
	NEED(execvpe);
	EXEC_WRAP(real_execvpe(file, argv, envp));
}

EXPORT int fexecve(int fdesc, char *const argv[], char *const envp[]) {
	NEED(fexecve);
	EXEC_WRAP(real_fexecve(fdesc, argv, envp));
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
	NEED(dlclose);
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
