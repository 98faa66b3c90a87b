// fragment: fills glibc's main arena with 160000 blocks of 512 B (about
// 80 MiB, every page written), frees 15 of every 16, prints "ready" and
// holds until standard input ends, then exits 0.
//   holes: keeps every 16th block, so each page keeps a block in use and
//          stays resident: most of the arena's resident bytes are free
//          (fragmentation).
//   top:   keeps the first 10000 blocks, so the freed ones are the top of
//          the heap, which glibc gives back to the kernel.
//   arenas: two threads, each in an arena of its own (both have
//          allocated before either goes on): holes_thread fills its
//          arena's heap with 40000 blocks of 512 B and frees 15 of every
//          16 as holes does; kept_thread allocates 10000 blocks of 512 B
//          and keeps them all.
//
// usage: fragment holes|top|arenas
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 160000

static char *blocks[N];

static pthread_barrier_t both;

// fill allocates n blocks of 512 B from blocks[0] on, each written.
static void fill(char **b, int n) {
	for (int i = 0; i < n; i++) {
		b[i] = malloc(512);
		memset(b[i], 1, 512);
	}
}

__attribute__((noinline)) static void *holes_thread(void *arg) {
	(void)arg;
	char **b = blocks;
	b[0] = malloc(512); // attaches the thread to an arena of its own
	pthread_barrier_wait(&both);
	free(b[0]);
	fill(b, 40000);
	for (int i = 0; i < 40000; i++) {
		if (i % 16 != 0) {
			free(b[i]);
			b[i] = NULL;
		}
	}
	return NULL;
}

__attribute__((noinline)) static void *kept_thread(void *arg) {
	(void)arg;
	char **b = blocks + 40000;
	b[0] = malloc(512);
	pthread_barrier_wait(&both);
	free(b[0]);
	fill(b, 10000);
	return NULL;
}

static int arenas(void) {
	pthread_t a, b;
	pthread_barrier_init(&both, NULL, 2);
	if (pthread_create(&a, NULL, holes_thread, NULL) != 0 || pthread_create(&b, NULL, kept_thread, NULL) != 0) {
		fprintf(stderr, "fragment: pthread_create failed\n");
		return 1;
	}
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	return 0;
}

int main(int argc, char **argv) {
	if (argc != 2 || (strcmp(argv[1], "holes") != 0 && strcmp(argv[1], "top") != 0 && strcmp(argv[1], "arenas") != 0)) {
		fprintf(stderr, "usage: fragment holes|top|arenas\n");
		return 2;
	}
	if (strcmp(argv[1], "arenas") == 0) {
		if (arenas() != 0)
			return 1;
	} else {
		int holes = strcmp(argv[1], "holes") == 0;
		fill(blocks, N);
		for (int i = 0; i < N; i++) {
			if (holes ? i % 16 != 0 : i >= N / 16) {
				free(blocks[i]);
				blocks[i] = NULL;
			}
		}
	}
	printf("ready\n");
	fflush(stdout);
	char buf[256];
	while (fgets(buf, sizeof buf, stdin) != NULL) {
	}
	return 0;
}
