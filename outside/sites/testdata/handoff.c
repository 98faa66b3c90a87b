// handoff: blocks made by one thread and freed by another, for the live
// reader's test: each thread's records reach the file in its own
// chunks, so a free is often written before its allocation.
// PRODUCERS threads allocate from produce_small or produce_big and push
// the blocks on a ring; CONSUMERS threads pop and free them, keeping
// one in KEEP_EVERY. It runs for about ROUNDS × 10 ms.
//   handoff ROUNDS   (default 200)
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PRODUCERS 2
#define CONSUMERS 2
#define RING 1024
#define PER_ROUND 200
#define KEEP_EVERY 97

static void *ring[RING];
static int head, tail, count, done;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t notfull = PTHREAD_COND_INITIALIZER, notempty = PTHREAD_COND_INITIALIZER;
static long rounds = 200;
void *volatile kept[CONSUMERS][1 << 16];

__attribute__((noinline)) void *produce_small(size_t n) {
	void *p = malloc(n);
	__asm__ volatile("" ::: "memory");
	return p;
}

__attribute__((noinline)) void *produce_big(size_t n) {
	void *p = malloc(n);
	__asm__ volatile("" ::: "memory");
	return p;
}

static void *producer(void *arg) {
	uint64_t x = (uint64_t)(uintptr_t)arg * 0x9E3779B97F4A7C15ULL + 1;
	struct timespec ts = {0, 10000000};
	for (long r = 0; r < rounds; r++) {
		for (int i = 0; i < PER_ROUND; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			void *p = x % 16 == 0 ? produce_big(20000 + x % 50000) : produce_small(16 + x % 2000);
			((char *)p)[0] = 1;
			pthread_mutex_lock(&mu);
			while (count == RING)
				pthread_cond_wait(&notfull, &mu);
			ring[head] = p;
			head = (head + 1) % RING;
			count++;
			pthread_cond_signal(&notempty);
			pthread_mutex_unlock(&mu);
		}
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static void *consumer(void *arg) {
	int id = (int)(uintptr_t)arg;
	long n = 0, k = 0;
	for (;;) {
		pthread_mutex_lock(&mu);
		while (count == 0 && !done)
			pthread_cond_wait(&notempty, &mu);
		if (count == 0 && done) {
			pthread_mutex_unlock(&mu);
			return NULL;
		}
		void *p = ring[tail];
		tail = (tail + 1) % RING;
		count--;
		pthread_cond_signal(&notfull);
		pthread_mutex_unlock(&mu);
		if (++n % KEEP_EVERY == 0 && k < (1 << 16))
			kept[id][k++] = p;
		else
			free(p);
	}
}

int main(int argc, char **argv) {
	if (argc > 1)
		rounds = atol(argv[1]);
	pthread_t p[PRODUCERS], c[CONSUMERS];
	for (int i = 0; i < CONSUMERS; i++)
		pthread_create(&c[i], NULL, consumer, (void *)(uintptr_t)i);
	for (int i = 0; i < PRODUCERS; i++)
		pthread_create(&p[i], NULL, producer, (void *)(uintptr_t)(i + 1));
	for (int i = 0; i < PRODUCERS; i++)
		pthread_join(p[i], NULL);
	pthread_mutex_lock(&mu);
	done = 1;
	pthread_cond_broadcast(&notempty);
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < CONSUMERS; i++)
		pthread_join(c[i], NULL);
	return 0;
}
