// threads: NTHREADS pthreads with STACK_MIB stacks; each mallocs
// PER_THREAD_KIB in 64 KiB blocks (below glibc's mmap threshold, so from
// its thread's arena), writes every byte, writes 16 KiB of its own stack,
// then blocks until released. Main prints "ready" once every thread has
// done so, holds (HOLD milliseconds, or "stdin": until standard input
// ends), releases them, joins and exits 0.
//
// usage: threads NTHREADS STACK_MIB PER_THREAD_KIB HOLD
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_barrier_t ready;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int released;
static long per_thread_kib;

static void *worker(void *arg) {
	(void)arg;
	volatile char stackbuf[16 << 10];
	memset((char *)stackbuf, 1, sizeof stackbuf);
	long blocks = per_thread_kib / 64;
	char **p = malloc(sizeof(char *) * (blocks + 1));
	for (long i = 0; i < blocks; i++) {
		p[i] = malloc(64 << 10);
		memset(p[i], (int)i + 1, 64 << 10);
	}
	pthread_barrier_wait(&ready);
	pthread_mutex_lock(&mu);
	while (!released)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	for (long i = 0; i < blocks; i++)
		free(p[i]);
	free(p);
	return (void *)(long)stackbuf[100];
}

static void hold(const char *how) {
	if (strcmp(how, "stdin") == 0) {
		char buf[256];
		while (read(0, buf, sizeof buf) > 0) {
		}
		return;
	}
	usleep(atol(how) * 1000);
}

int main(int argc, char **argv) {
	if (argc != 5) {
		fprintf(stderr, "usage: threads NTHREADS STACK_MIB PER_THREAD_KIB HOLD\n");
		return 2;
	}
	int n = atoi(argv[1]);
	size_t stack = (size_t)atol(argv[2]) << 20;
	per_thread_kib = atol(argv[3]);
	pthread_t *t = calloc(n, sizeof *t);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, stack);
	pthread_barrier_init(&ready, NULL, n + 1);
	for (int i = 0; i < n; i++) {
		if (pthread_create(&t[i], &attr, worker, NULL) != 0) {
			perror("pthread_create");
			return 1;
		}
	}
	pthread_barrier_wait(&ready);
	printf("ready\n");
	fflush(stdout);
	hold(argv[4]);
	pthread_mutex_lock(&mu);
	released = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	return 0;
}
