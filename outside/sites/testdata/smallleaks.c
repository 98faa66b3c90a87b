// smallleaks: small blocks from four sites, kept to the exit, beside 4 MiB
// of small blocks held together and freed (the peak). Sampled, a small
// block stands for the rate's bytes: the sites' scaled figures must not
// pass the headline's counted ones.
#include <stdlib.h>

#define LEAK_N 500
#define HELD_N 65536

void *sink;

#define SITE(name, size)                                                                                               \
	__attribute__((noinline)) void *name(void) {                                                                   \
		char *p = malloc(size);                                                                                \
		p[0] = 1;                                                                                              \
		return p;                                                                                              \
	}
SITE(leak_a, 24)
SITE(leak_b, 40)
SITE(leak_c, 56)
SITE(leak_d, 72)
SITE(held, 64)

int main(void) {
	static void *leaks[4 * LEAK_N], *h[HELD_N];
	for (int i = 0; i < LEAK_N; i++) {
		leaks[4 * i] = leak_a();
		leaks[4 * i + 1] = leak_b();
		leaks[4 * i + 2] = leak_c();
		leaks[4 * i + 3] = leak_d();
	}
	for (int i = 0; i < HELD_N; i++)
		h[i] = held();
	for (int i = 0; i < HELD_N; i++)
		free(h[i]);
	sink = leaks;
	return 0;
}
