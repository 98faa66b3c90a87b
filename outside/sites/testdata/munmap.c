// munmap: the program's own mappings cut by munmaps, for outside/sites'
// tests (MiB; every mapping is large enough to be sampled at the
// default rate with a chance of at least 1 - e^-10):
//   aligned_site: maps 8, unmaps the head 1 and the tail 3 (the
//                 aligned-allocation trick): 4 to exit.
//   middle_site:  maps 6, unmaps the middle 2: 4 in two pieces, until
//                 one munmap of the whole 6 ends both.
//   whole_site:   maps 5 and unmaps all of it.
//   pair_site:    two mappings of 8, side by side; one munmap of 3
//                 across both leaves 6 and 7 to exit.
//   peak_site:    maps 32 and unmaps it: the peak (4 + 4 + 13 + 32).
// No malloc: the in-use bytes are the mappings'.
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define MiB (1UL << 20)

// map is a macro, not a function: the site is the function that maps.
#define map(hint, n) checked(mmap(hint, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))

static void *checked(void *p) {
	if (p == MAP_FAILED)
		_exit(2);
	return p;
}

static void unmap(void *p, size_t n) {
	if (munmap(p, n) != 0)
		_exit(3);
}

__attribute__((noinline)) char *aligned_site(void) {
	char *p = map(NULL, 8 * MiB);
	unmap(p, MiB);
	// A length the kernel rounds up to whole pages.
	unmap(p + 5 * MiB, 3 * MiB - 100);
	// An address off a page: EINVAL, nothing unmapped.
	if (munmap(p + MiB + 100, 4096) == 0)
		_exit(4);
	return p + MiB;
}

__attribute__((noinline)) char *middle_site(void) {
	char *p = map(NULL, 6 * MiB);
	unmap(p + 2 * MiB, 2 * MiB);
	return p;
}

__attribute__((noinline)) void whole_site(void) { unmap(map(NULL, 5 * MiB), 5 * MiB); }

__attribute__((noinline)) char *reserve(void) {
	char *p = map(NULL, 16 * MiB);
	unmap(p, 16 * MiB);
	return p;
}

__attribute__((noinline)) char *pair_site(char *hint) { return map(hint, 8 * MiB); }

__attribute__((noinline)) void peak_site(void) { unmap(map(NULL, 32 * MiB), 32 * MiB); }

int main(void) {
	char *aligned = aligned_site();
	char *middle = middle_site();
	whole_site();
	char *base = reserve();
	// The hints are free (just unmapped): the kernel takes them.
	if (pair_site(base) != base || pair_site(base + 8 * MiB) != base + 8 * MiB)
		_exit(5);
	unmap(base + 6 * MiB, 3 * MiB);
	peak_site();
	unmap(middle, 6 * MiB);
	aligned[0] = 1;
	return 0;
}
