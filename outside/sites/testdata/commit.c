// commit: a heap as V8 makes one. reserve_site maps 64 MiB with no access;
// commit_site makes its first 8 MiB read-write (mprotect) and writes it;
// flip_site makes the first 4 MiB read-only and executable and writable
// again (a JIT's code pages: a change of access, nothing new in use);
// decommit_site makes the second 4 MiB inaccessible again; recommit_site
// makes 2 MiB of them read-write. guard_site makes a page of a mapping of
// its own (map_site, 16 MiB, read-write) inaccessible and accessible again.
// In use: 24 MiB at the peak (8 committed and map_site's 16), 22 MiB at
// exit (commit_site's 4, recommit_site's 2, map_site's 16 less the page
// guard_site's).
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MiB (1 << 20)

__attribute__((noinline)) char *reserve_site(void) {
	char *p = mmap(NULL, 64 * MiB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	__asm__ volatile("" ::: "memory");
	return p;
}

__attribute__((noinline)) char *map_site(void) {
	char *p = mmap(NULL, 16 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	__asm__ volatile("" ::: "memory");
	return p;
}

#define PROTECT(name)                                                                                                  \
	__attribute__((noinline)) int name(char *at, size_t n, int prot) {                                             \
		int r = mprotect(at, n, prot);                                                                         \
		__asm__ volatile("" ::: "memory");                                                                     \
		return r;                                                                                              \
	}
PROTECT(commit_site)
PROTECT(flip_site)
PROTECT(decommit_site)
PROTECT(recommit_site)
PROTECT(guard_site)

int main(void) {
	char *r = reserve_site(), *m = map_site();
	if (r == MAP_FAILED || m == MAP_FAILED)
		_exit(2);
	memset(m, 1, 16 * MiB);
	if (commit_site(r, 8 * MiB, PROT_READ | PROT_WRITE) != 0)
		_exit(3);
	memset(r, 1, 8 * MiB);
	if (flip_site(r, 4 * MiB, PROT_READ | PROT_EXEC) != 0 || flip_site(r, 4 * MiB, PROT_READ | PROT_WRITE) != 0)
		_exit(4);
	if (decommit_site(r + 4 * MiB, 4 * MiB, PROT_NONE) != 0)
		_exit(5);
	if (recommit_site(r + 4 * MiB, 2 * MiB, PROT_READ | PROT_WRITE) != 0)
		_exit(6);
	if (guard_site(m, 4096, PROT_NONE) != 0 || guard_site(m, 4096, PROT_READ | PROT_WRITE) != 0)
		_exit(7);
	return 0;
}
