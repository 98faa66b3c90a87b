// freeonly: a thread that only frees. main allocates 1000 blocks of 100
// bytes for the thread to free and keeps 1000 more (100000 bytes in use
// at exit); the thread frees its blocks, fewer bytes than a count is
// published by, and exits before main does. At the default rate no block
// may be sampled: the thread's frees reach the count only if the library
// publishes them when it exits.
#include <pthread.h>
#include <stdlib.h>

#define N 1000

static void *blocks[N];
void *volatile kept[N];

static void *freer(void *arg) {
	(void)arg;
	for (int i = 0; i < N; i++)
		free(blocks[i]);
	return NULL;
}

int main(void) {
	for (int i = 0; i < N; i++) {
		blocks[i] = malloc(100);
		kept[i] = malloc(100);
	}
	pthread_t t;
	pthread_create(&t, NULL, freer, NULL);
	pthread_join(t, NULL);
	return 0;
}
