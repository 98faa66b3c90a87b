// pairs: N frees then mallocs of 16 B to 4 KiB in a window of 4096 blocks,
// on one thread: nothing but the allocator's fast paths, for
// scripts/sites-fastpath.sh's count of what the library adds to each.
//   pairs N   (default 5000000)
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#define WINDOW 4096
int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 5000000;
	void **win = calloc(WINDOW, sizeof *win);
	uint64_t x = 88172645463325252ULL;
	for (long i = 0; i < n; i++) {
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		int slot = (int)(x % WINDOW);
		free(win[slot]);
		win[slot] = malloc(16 + (x >> 20) % 4080);
		((char *)win[slot])[0] = 1;
	}
	printf("%d\n", win[0] != NULL);
	return 0;
}
