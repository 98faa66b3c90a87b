// endsignal: threads that allocate and free without pause, for ever, for
// outside/sites' TestEndSignalAnyMoment: the test kills it with SIGTERM at
// a random moment and it must die of the signal with its records whole
// or marked cut. main blocks the end signals, so that a worker (maybe in
// the middle of a record, or holding the library's lock) takes them; it
// prints "ready" once every worker has begun.
//   endsignal THREADS   (default 4)
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define WINDOW 1024

static atomic_int started;

__attribute__((noinline)) static void *churn_site(size_t n) {
	void *p = malloc(n);
	__asm__ volatile("" ::: "memory");
	return p;
}

static void *worker(void *arg) {
	uint64_t x = (uint64_t)(uintptr_t)arg * 0x9E3779B97F4A7C15ULL + 1;
	void **win = calloc(WINDOW, sizeof *win);
	atomic_fetch_add(&started, 1);
	for (;;) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		int slot = (int)(x % WINDOW);
		free(win[slot]);
		win[slot] = churn_site(16 + (x >> 20) % 2048);
		((char *)win[slot])[0] = 1;
	}
	return NULL;
}

int main(int argc, char **argv) {
	int threads = argc > 1 ? atoi(argv[1]) : 4;
	for (int i = 0; i < threads; i++) {
		pthread_t t;
		pthread_create(&t, NULL, worker, (void *)(uintptr_t)(i + 1));
	}
	// Blocked here only: the workers, made before, take them.
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGTERM);
	sigaddset(&s, SIGINT);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
	while (atomic_load(&started) < threads)
		usleep(100);
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}
