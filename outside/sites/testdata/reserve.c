// reserve: a heap as the JVM makes one. reserve_site maps 256 MiB with no
// access (PROT_NONE: address space, no memory); commit_site maps 16 MiB
// read-write over its start (MAP_FIXED) and writes it; uncommit_site maps
// the second half of that back to PROT_NONE, 64 KiB at a time (most such
// calls are not sampled at the default rate: each must still end what
// it covers). In use: 16 MiB at the peak, 8 MiB at exit, all of it
// commit_site's.
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MiB (1 << 20)

__attribute__((noinline)) char *reserve_site(void) {
	char *p = mmap(NULL, 256 * MiB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	__asm__ volatile("" ::: "memory");
	return p;
}

__attribute__((noinline)) char *commit_site(char *at, size_t n) {
	char *p = mmap(at, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	__asm__ volatile("" ::: "memory");
	return p;
}

__attribute__((noinline)) char *uncommit_site(char *at, size_t n) {
	char *p = mmap(at, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
	__asm__ volatile("" ::: "memory");
	return p;
}

int main(void) {
	char *r = reserve_site();
	if (r == MAP_FAILED || commit_site(r, 16 * MiB) != r)
		_exit(2);
	memset(r, 1, 16 * MiB);
	for (char *q = r + 8 * MiB; q < r + 16 * MiB; q += 64 << 10)
		if (uncommit_site(q, 64 << 10) != q)
			_exit(3);
	return 0;
}
