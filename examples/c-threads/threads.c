/*
 * threads.c: the threads note's first fixes in a small C program, for
 * examples/c-threads.toml (probe run --plan-file).
 *
 * It starts --threads pthreads with a --stack stack each; every thread
 * mallocs --thread-bytes in small blocks (so glibc gives it a malloc
 * arena of its own, up to its limit of 8 x cores, or MALLOC_ARENA_MAX),
 * touches them and 64 KiB of its stack, and waits. Before that, the
 * main thread fills --batches batch buffers of --batch-bytes up front
 * (--batch-alloc eager) or one buffer refilled (lazy). Then it holds
 * everything for --hold-ms, so that the probe's walks see the peak, and
 * exits with every thread alive: the last samples still hold every
 * stack and arena.
 *
 *   cc -O2 -pthread -o threads threads.c
 *   ./threads --threads 63 --stack 8M --batch-alloc eager
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long threads = 63, hold_ms = 1500;
static size_t stack_bytes = 8 << 20, thread_bytes = 1 << 20;
static long batches = 63;
static size_t batch_bytes = 48 << 10;
static int eager = 1;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static long started;

static size_t parse_size(const char *flag, const char *s) {
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || v < 0) {
		fprintf(stderr, "threads: %s %s: not a size\n", flag, s);
		exit(2);
	}
	switch (*end) {
	case 'K': case 'k': v *= 1024; end++; break;
	case 'M': case 'm': v *= 1024 * 1024; end++; break;
	case 'G': case 'g': v *= 1024.0 * 1024 * 1024; end++; break;
	}
	if (*end == 'i') end++;
	if (*end == 'B') end++;
	if (*end) {
		fprintf(stderr, "threads: %s %s: not a size (want e.g. 8M)\n", flag, s);
		exit(2);
	}
	return (size_t)v;
}

static void *worker(void *arg) {
	(void)arg;
	/* 64 KiB of the stack touched: resident, of the reserved --stack. */
	volatile char frame[64 << 10];
	memset((char *)frame, 1, sizeof frame);
	/* Small blocks (below the mmap threshold) come from this thread's
	 * arena: its first malloc picks or makes one. */
	size_t block = 16 << 10, n = thread_bytes / block;
	char **blocks = malloc((n + 1) * sizeof *blocks);
	for (size_t i = 0; i < n; i++) {
		blocks[i] = malloc(block);
		memset(blocks[i], 2, block);
	}
	pthread_mutex_lock(&mu);
	started++;
	pthread_cond_broadcast(&cv);
	for (;;) /* alive until the process exits */
		pthread_cond_wait(&cv, &mu);
	return NULL;
}

int main(int argc, char **argv) {
	for (int i = 1; i < argc; i++) {
		const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v) {
			fprintf(stderr, "threads: %s needs a value\n", f);
			return 2;
		}
		i++;
		if (!strcmp(f, "--threads")) threads = atol(v);
		else if (!strcmp(f, "--stack")) stack_bytes = parse_size(f, v);
		else if (!strcmp(f, "--thread-bytes")) thread_bytes = parse_size(f, v);
		else if (!strcmp(f, "--batches")) batches = atol(v);
		else if (!strcmp(f, "--batch-bytes")) batch_bytes = parse_size(f, v);
		else if (!strcmp(f, "--hold-ms")) hold_ms = atol(v);
		else if (!strcmp(f, "--batch-alloc")) {
			if (strcmp(v, "eager") && strcmp(v, "lazy")) {
				fprintf(stderr, "threads: --batch-alloc %s: want eager or lazy\n", v);
				return 2;
			}
			eager = !strcmp(v, "eager");
		} else {
			fprintf(stderr, "threads: unknown flag %s\n", f);
			return 2;
		}
	}
	if (threads < 1 || threads > 4096 || batches < 1) {
		fprintf(stderr, "threads: --threads or --batches out of range\n");
		return 2;
	}
	/* The epoch's batches: all of them filled up front, or one refilled. */
	long nbuf = eager ? batches : 1;
	char **buf = malloc(nbuf * sizeof *buf);
	for (long b = 0; b < batches; b++) {
		long k = eager ? b : 0;
		buf[k] = b < nbuf ? malloc(batch_bytes) : buf[k];
		memset(buf[k], (int)b, batch_bytes);
	}

	pthread_attr_t attr;
	pthread_attr_init(&attr);
	if (stack_bytes > 0 && (errno = pthread_attr_setstacksize(&attr, stack_bytes))) {
		perror("threads: pthread_attr_setstacksize");
		return 1;
	}
	for (long i = 0; i < threads; i++) {
		pthread_t t;
		if ((errno = pthread_create(&t, &attr, worker, NULL))) {
			fprintf(stderr, "threads: thread %ld of %ld: pthread_create: %s\n", i + 1, threads, strerror(errno));
			return 1;
		}
	}
	pthread_attr_destroy(&attr);
	pthread_mutex_lock(&mu);
	while (started < threads)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	printf("threads: %ld threads, %zu-byte stacks, %ld batch buffers of %zu bytes\n", threads, stack_bytes, nbuf, batch_bytes);
	fflush(stdout);
	struct timespec ts = {hold_ms / 1000, (hold_ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
	exit(0);
}
