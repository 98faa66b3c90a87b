// stripped: a static function that allocates from two call sites, for
// outside/sites' tests, which strip the executable: no symbol names the
// function, and its site must still be one (the unwind tables' start).
#include <stdlib.h>
#include <string.h>

#ifndef N
#define N 100
#endif
#define SIZE 1000

void *keep[2 * N];

// fill's two calls cannot be merged into one: they are different
// functions (malloc, calloc), both the allocator's frames.
static __attribute__((noinline)) void *fill(int big) {
	void *p;
	if (big) {
		p = calloc(1, 2 * SIZE);
	} else {
		p = malloc(SIZE);
		memset(p, 1, SIZE);
	}
	return p;
}

int main(void) {
	for (int i = 0; i < N; i++) {
		keep[2 * i] = fill(0);
		keep[2 * i + 1] = fill(1);
	}
	return 0;
}
