// midrecord: a thread stopped in the middle of a record while the process
// ends, for outside/sites' TestEndMidRecord, under the library built with
// SITES_TEST_HOOKS (which calls memprobe_sites_mid_record, where the
// program defines it, in the middle of each allocation's record). main
// leaks 3 blocks of 55555 bytes (main_site), then a second thread
// allocates 777777 bytes: its record stops half written, and main ends
// the process with exit(0) ("exit") or SIGTERM ("signal").
//   midrecord exit|signal   (build with -rdynamic)
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static atomic_int armed, stopped;
static pthread_t stopper;
void *keep[4];

// memprobe_sites_mid_record is the library's test hook: the armed
// thread, in the middle of its record, stops there for good.
void memprobe_sites_mid_record(void) {
	if (!atomic_load(&armed) || !pthread_equal(pthread_self(), stopper))
		return;
	atomic_store(&armed, 0);
	atomic_store(&stopped, 1);
	for (;;)
		pause();
}

__attribute__((noinline)) static void *main_site(size_t n) {
	void *p = malloc(n);
	__asm__ volatile("" ::: "memory");
	return p;
}

static void *stop(void *arg) {
	(void)arg;
	while (!atomic_load(&armed))
		usleep(100);
	keep[3] = malloc(777777);
	return NULL;
}

int main(int argc, char **argv) {
	if (argc != 2)
		return 2;
	for (int i = 0; i < 3; i++)
		memset(keep[i] = main_site(55555), 1, 55555);
	pthread_create(&stopper, NULL, stop, NULL);
	atomic_store(&armed, 1);
	while (!atomic_load(&stopped))
		usleep(100);
	if (strcmp(argv[1], "signal") == 0)
		raise(SIGTERM);
	exit(0);
}
