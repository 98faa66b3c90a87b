// sigview: what sigaction and signal tell a program of the signals the
// library catches (a vfork child's settings, dash's before its exec,
// its own), and a handler of the program's own that ends it as cleanup
// code does: SIGTERM set back to its default and raised again (with
// "resethand", as Node's does: a handler set with SA_RESETHAND, which
// the kernel sets back to the default as it runs it, raises it again).
// Exits 10 + the number of the first check that failed; passing, it dies
// of SIGTERM holding N blocks of 1000 bytes made at hold_site.
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define N 10

void *keep[N]; // not static: the compiler would drop the mallocs of a static never read
static volatile sig_atomic_t got;

static void on_usr1(int s) { got = s; }
static void on_int(int s) { (void)s; }

static void on_term(int s) {
	signal(s, SIG_DFL);
	raise(s);
}

static void on_term_info(int s, siginfo_t *info, void *uc) {
	(void)info, (void)uc;
	raise(s);
}

__attribute__((noinline)) static void hold_site(int i) {
	keep[i] = malloc(1000);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv) {
	struct sigaction sa, old;
	if (sigaction(SIGINT, NULL, &old) != 0 || old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO))
		return 11; // at its default, as found
	if (signal(SIGHUP, SIG_DFL) != SIG_DFL)
		return 12;
	sa = (struct sigaction){.sa_handler = on_usr1};
	if (sigaction(SIGUSR1, &sa, &old) != 0 || old.sa_handler != SIG_DFL)
		return 13;
	raise(SIGUSR1);
	if (got != SIGUSR1)
		return 14; // the program's handler runs
	if (signal(SIGUSR1, SIG_DFL) != on_usr1)
		return 15; // its own handler, told back
	if (sigaction(SIGUSR1, NULL, &old) != 0 || old.sa_handler != SIG_DFL)
		return 16;
	if (sigaction(SIGPIPE, &(struct sigaction){.sa_handler = SIG_IGN}, NULL) != 0 || signal(SIGPIPE, SIG_DFL) != SIG_IGN)
		return 17;
	sa = (struct sigaction){.sa_handler = on_int};
	if (sigaction(SIGINT, &sa, NULL) != 0)
		return 18;
	pid_t child = vfork();
	if (child == 0) {
		signal(SIGINT, SIG_DFL);
		_exit(0);
	}
	if (child < 0 || waitpid(child, NULL, 0) != child || sigaction(SIGINT, NULL, &old) != 0 || old.sa_handler != on_int)
		return 19; // the parent's own handler, whatever its vfork child set
	for (int i = 0; i < N; i++)
		hold_site(i);
	if (argc > 1 && strcmp(argv[1], "resethand") == 0) {
		sa = (struct sigaction){.sa_sigaction = on_term_info, .sa_flags = SA_SIGINFO | SA_RESETHAND};
		if (sigaction(SIGTERM, &sa, NULL) != 0 || sigaction(SIGTERM, NULL, &old) != 0 || old.sa_sigaction != on_term_info ||
		    !(old.sa_flags & SA_RESETHAND))
			return 20; // its handler, told back with its flags
	} else {
		signal(SIGTERM, on_term);
	}
	raise(SIGTERM);
	return 21;
}
