// planted: allocation sites with known bytes, for outside/sites' tests.
//   leak_site:  LEAK_N blocks of LEAK_SIZE bytes, never freed (exit profile).
//   peak_site:  PEAK_N blocks of PEAK_SIZE bytes, held together, then freed
//               (the peak profile, not the exit one).
//   temp_site:  TEMP_N blocks of TEMP_SIZE bytes, each freed at once
//               (temporary allocations).
// The sizes can be changed at build time (-DPEAK_SIZE=...) for the diff test.
#include <stdlib.h>
#include <string.h>

#ifndef LEAK_N
#define LEAK_N 10
#endif
#ifndef LEAK_SIZE
#define LEAK_SIZE 100000
#endif
#ifndef PEAK_N
#define PEAK_N 64
#endif
#ifndef PEAK_SIZE
#define PEAK_SIZE (1 << 20)
#endif
#ifndef TEMP_N
#define TEMP_N 5000
#endif
#ifndef TEMP_SIZE
#define TEMP_SIZE 200
#endif

void *sink;

__attribute__((noinline)) void *leak_site(void) {
	void *p = malloc(LEAK_SIZE);
	memset(p, 1, LEAK_SIZE);
	return p;
}

__attribute__((noinline)) void *peak_site(void) {
	void *p = calloc(1, PEAK_SIZE);
	((char *)p)[0] = 1;
	return p;
}

__attribute__((noinline)) void temp_site(void) {
	char *p = malloc(TEMP_SIZE);
	p[0] = 1;
	sink = p;
	free(p);
}

int main(void) {
	static void *leaks[LEAK_N], *held[PEAK_N];
	for (int i = 0; i < LEAK_N; i++)
		leaks[i] = leak_site();
	for (int i = 0; i < PEAK_N; i++)
		held[i] = peak_site();
	for (int i = 0; i < PEAK_N; i++)
		free(held[i]);
	for (int i = 0; i < TEMP_N; i++)
		temp_site();
	sink = leaks;
	return 0;
}
