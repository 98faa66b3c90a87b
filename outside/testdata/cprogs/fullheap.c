// fullheap: one thread mallocs MIB mebibytes in 32-byte pieces from its
// own arena, so glibc grows the arena's first heap page by page to the
// whole 64 MiB (no PROT_NONE tail left) and opens a second heap for the
// rest, mapped where the kernel may merge it with the first. Prints
// "ready" with the thread still holding it all, waits for standard input
// to end, and exits 0.
//
// usage: fullheap MIB
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static long mib;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int done;

static void *worker(void *arg) {
	(void)arg;
	// 32 bytes of payload take a 48-byte chunk.
	long n = (mib << 20) / 48;
	for (long i = 0; i < n; i++) {
		volatile char *q = malloc(32);
		q[0] = 1;
	}
	pthread_mutex_lock(&mu);
	done = 1;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mu);
	pause();
	return NULL;
}

int main(int argc, char **argv) {
	if (argc != 2 || (mib = atol(argv[1])) <= 0) {
		fprintf(stderr, "usage: fullheap MIB\n");
		return 2;
	}
	pthread_t t;
	if (pthread_create(&t, NULL, worker, NULL) != 0) {
		return 1;
	}
	pthread_mutex_lock(&mu);
	while (!done) {
		pthread_cond_wait(&cv, &mu);
	}
	pthread_mutex_unlock(&mu);
	printf("ready\n");
	fflush(stdout);
	char buf[64];
	while (fread(buf, 1, sizeof buf, stdin) > 0) {
	}
	return 0;
}
