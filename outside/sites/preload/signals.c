// signals.c: the signals that end a process (Ctrl-C, kill, a closed
// pipe): the library's handler writes the records first, and sigaction
// and signal show the program the dispositions it set.
//
// Part of sites.c, which #includes every unit in order: the library is one
// translation unit, so that the fast paths inline what they call as they
// did in one file (scripts/sites-fastpath.sh). Not compiled alone.

// The signals whose default action ends the process without a core and
// that a user or a pipe sends (Ctrl-C, kill, a closed pipe): where the
// program left them at their default, the library's handler writes the
// records (as at exit, by async-signal-safe means only: end_by_signal)
// and raises the signal again at its default, so that the program dies
// of it as it would have. Before, a program stopped with
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

// The end by a signal does only what is async-signal-safe: the
// interrupted code may hold anything (the records' lock, the
// allocator's). It waits for the records' lock a bounded time
// (LOCK_WAIT_NS: a flush takes microseconds, the maps a few
// milliseconds), writes every buffer's committed records, the maps, the
// count and the end with write(2), and keeps the lock until the process
// dies, so that nothing is written after the end. A thread in the middle
// of a record (this one among them) or a lock that stayed taken (this
// thread was inside it) marks the end cut (END_CUT): the end alone is
// written then. Before, the handler took the lock with
// pthread_mutex_lock, wrote each buffer as it stood (a record half
// written among them) and mapped memory.
enum { LOCK_WAIT_NS = 50000000, LOCK_STEP_NS = 100000 };

// ending: 0, then 1 while the first end signal's handler writes, 2 once
// it has. A second end signal (on another thread) waits for it.
static _Atomic int ending;

// lock_bounded takes wlock within LOCK_WAIT_NS; 0 where it cannot.
static int lock_bounded(void) {
	for (long w = 0; w <= LOCK_WAIT_NS; w += LOCK_STEP_NS) {
		if (pthread_mutex_trylock(&wlock) == 0)
			return 1;
		struct timespec d = {0, LOCK_STEP_NS};
		nanosleep(&d, NULL);
	}
	return 0;
}

// mid_record says whether a thread is in the middle of a record: its
// buffer holds more than it has committed.
static int mid_record(void) {
	for (struct tbuf *b = bufs; b; b = b->next)
		if (b->owner != NULL && __atomic_load_n(&b->len, __ATOMIC_RELAXED) != atomic_load_explicit(&b->committed, memory_order_acquire))
			return 1;
	return 0;
}

// end_by_signal ends the records as a signal ends the process.
static void end_by_signal(void) {
	if (!enabled || getpid() != file_pid)
		return;
	ts.in_hook++;
	if (!lock_bounded()) {
		enabled = 0;
		if (fd_ours())
			write_end(END_SIGNAL | END_CUT);
		return;
	}
	// An end that began on another thread (exit) has written its own;
	// a descriptor the program took over is not reopened here.
	if (enabled && fd_ours())
		end_locked(END_SIGNAL | (mid_record() ? END_CUT : 0));
	enabled = 0;
	// wlock stays taken: the process dies of the signal next.
}

static void on_end_signal(int sig) {
	int e = errno, i = end_slot(sig);
	int first = 0;
	if (atomic_compare_exchange_strong(&ending, &first, 1)) {
		end_by_signal();
		atomic_store(&ending, 2);
	} else {
		for (long w = 0; w <= 2 * LOCK_WAIT_NS && atomic_load(&ending) == 1; w += LOCK_STEP_NS) {
			struct timespec d = {0, LOCK_STEP_NS};
			nanosleep(&d, NULL);
		}
	}
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
	NEED(sigaction);
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
	NEED(signal);
	return end_slot(sig) >= 0 ? signal_as(sig, h, 0) : real_signal(sig, h);
}

EXPORT sighandler_t bsd_signal(int sig, sighandler_t h) { return signal(sig, h); }

EXPORT sighandler_t sysv_signal(int sig, sighandler_t h) {
	NEED(sysv_signal);
	return end_slot(sig) >= 0 ? signal_as(sig, h, 1) : real_sysv_signal(sig, h);
}
