// busyexit: four threads allocate and free without pause while main
// leaks 10 blocks of 30000 bytes, sleeps 50 ms and returns: the program
// exits while its threads are inside the allocator, as a program with a
// thread pool does. What they were writing must not cost the records
// before it: the leak is named, the maps are there.
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static void *spin(void *arg) {
	(void)arg;
	for (;;) {
		void *p = malloc(64 + (rand() & 1023));
		__asm__ volatile("" ::: "memory");
		free(p);
	}
	return NULL;
}

void *keep[10];

__attribute__((noinline)) void leak_site(int i) {
	keep[i] = malloc(30000);
	__asm__ volatile("" ::: "memory");
}

int main(void) {
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, spin, NULL);
	for (int i = 0; i < 10; i++)
		leak_site(i);
	struct timespec d = {0, 50 * 1000 * 1000};
	nanosleep(&d, NULL);
	return 0;
}
