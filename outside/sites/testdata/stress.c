// stress: a multithreaded allocator stress for outside/sites' tests and
// scripts/sites-vs-heaptrack.sh. THREADS threads each make N allocations
// of sizes 16 B to 4 KiB (xorshift), holding a window of WINDOW blocks
// (so the in-use bytes rise, plateau and fall), from three sites:
// small_site (most blocks), medium_site, and big_site, which holds
// 64 KiB blocks in a second window: the top site at the peak.
//   stress N THREADS   (defaults 1000000 4)
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 4096
#define BIGWINDOW 256

static long n_per_thread = 1000000;

// The empty asm keeps each site a frame of its own: without it the call
// is a tail call, and the site's frame is gone when malloc runs.
__attribute__((noinline)) static void *small_site(size_t n) {
	void *p = malloc(n);
	__asm__ volatile("" ::: "memory");
	return p;
}
__attribute__((noinline)) static void *medium_site(size_t n) {
	void *p = calloc(1, n);
	__asm__ volatile("" ::: "memory");
	return p;
}
__attribute__((noinline)) static void *big_site(void) {
	void *p = malloc(64 << 10);
	__asm__ volatile("" ::: "memory");
	return p;
}

static void *worker(void *arg) {
	uint64_t x = (uint64_t)(uintptr_t)arg * 0x9E3779B97F4A7C15ULL + 1;
	void **win = calloc(WINDOW, sizeof *win);
	void **big = calloc(BIGWINDOW, sizeof *big);
	for (long i = 0; i < n_per_thread; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		int slot = (int)(x % WINDOW);
		free(win[slot]);
		size_t n = 16 + (x >> 20) % 4080;
		win[slot] = (x >> 40) % 8 == 0 ? medium_site(n) : small_site(n);
		((char *)win[slot])[0] = 1;
		if (i % 64 == 0) {
			int b = (int)((x >> 30) % BIGWINDOW);
			free(big[b]);
			big[b] = big_site();
			((char *)big[b])[0] = 1;
		}
	}
	for (int i = 0; i < WINDOW; i++)
		free(win[i]);
	for (int i = 0; i < BIGWINDOW; i++)
		free(big[i]);
	free(win);
	free(big);
	return NULL;
}

int main(int argc, char **argv) {
	int threads = 4;
	if (argc > 1)
		n_per_thread = atol(argv[1]);
	if (argc > 2)
		threads = atoi(argv[2]);
	pthread_t t[256];
	for (int i = 0; i < threads && i < 256; i++)
		pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1));
	for (int i = 0; i < threads && i < 256; i++)
		pthread_join(t[i], NULL);
	return 0;
}
