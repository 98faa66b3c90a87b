// marked: every allocator entry point the library wraps, with the checks
// a program relies on (alignment, contents kept by realloc, usable size
// at least what was asked, errors where glibc gives them); exit 1 and a
// line on stderr at the first that fails. At a rate of a few bytes every
// block is sampled, and so marked (sites.c: a prefix before the block),
// so it tests the marked path of each; at rate 1 and the default, the
// others. It leaves 8 blocks of 4096 bytes (kept_site) in use at exit.
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fails;
#define CHECK(cond, ...)                                                                                               \
	do {                                                                                                           \
		if (!(cond)) {                                                                                         \
			fprintf(stderr, "marked: " __VA_ARGS__);                                                       \
			fputc('\n', stderr);                                                                           \
			fails++;                                                                                       \
		}                                                                                                      \
	} while (0)

static void fill(unsigned char *p, size_t n, unsigned seed) {
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(seed + i * 31);
}

static int same(const unsigned char *p, size_t n, unsigned seed) {
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)(seed + i * 31))
			return 0;
	return 1;
}

static void block(void *p, size_t n, size_t align, const char *what) {
	CHECK(p != NULL, "%s(%zu): NULL", what, n);
	if (p == NULL)
		return;
	CHECK(((uintptr_t)p & (align - 1)) == 0, "%s(%zu): %p not aligned to %zu", what, n, p, align);
	CHECK(malloc_usable_size(p) >= n, "%s(%zu): usable size %zu", what, n, malloc_usable_size(p));
	fill(p, n, (unsigned)n);
}

__attribute__((noinline)) void *kept_site(void) {
	void *p = malloc(4096);
	__asm__ volatile("" ::: "memory");
	return p;
}

int main(void) {
	static const size_t sizes[] = {1, 16, 24, 100, 4096, 70000, 200000, 1 << 20};
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	for (int round = 0; round < 20; round++) {
		for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
			size_t n = sizes[i];
			void *p = malloc(n);
			block(p, n, 16, "malloc");
			unsigned char *z = calloc(n, 1);
			block(z, n, 16, "calloc");
			if (z != NULL) {
				memset(z, 0, n);
				free(z);
			}
			z = calloc(1, n);
			int zero = z != NULL;
			for (size_t k = 0; zero && k < n; k++)
				zero = z[k] == 0;
			CHECK(zero, "calloc(1, %zu): not zeroed", n);
			free(z);
			// realloc: grow, shrink, same; the contents kept.
			unsigned char *q = realloc(p, 2 * n + 8);
			CHECK(q != NULL && same(q, n, (unsigned)n), "realloc(%zu -> %zu): contents lost", n, 2 * n + 8);
			q = realloc(q, n / 2 + 1);
			CHECK(q != NULL && same(q, n / 2 + 1, (unsigned)n), "realloc(-> %zu): contents lost", n / 2 + 1);
			q = reallocarray(q, n + 1, 2);
			CHECK(q != NULL && same(q, n / 2 + 1, (unsigned)n), "reallocarray: contents lost");
			free(q);
			for (size_t a = 8; a <= 8192; a *= 4) {
				void *m = NULL;
				CHECK(posix_memalign(&m, a, n) == 0, "posix_memalign(%zu, %zu) failed", a, n);
				block(m, n, a, "posix_memalign");
				free(m);
				m = aligned_alloc(a, n);
				block(m, n, a, "aligned_alloc");
				m = realloc(m, n + 100);
				CHECK(m != NULL && same(m, n, (unsigned)n), "realloc of aligned_alloc(%zu, %zu): contents lost", a, n);
				free(m);
				m = memalign(a, n);
				block(m, n, a, "memalign");
				free(m);
			}
			void *m = memalign(48, n); // not a power of two: glibc rounds it up
			block(m, n, 16, "memalign(48)");
			free(m);
			m = valloc(n);
			block(m, n, pg, "valloc");
			free(m);
			m = pvalloc(n);
			block(m, n, pg, "pvalloc");
			CHECK(m == NULL || malloc_usable_size(m) >= ((n + pg - 1) & ~(pg - 1)), "pvalloc(%zu): usable %zu", n,
			      malloc_usable_size(m));
			free(m);
		}
		void *m = NULL;
		CHECK(posix_memalign(&m, 24, 100) == EINVAL, "posix_memalign(24): want EINVAL");
		CHECK(realloc(malloc(10), 0) == NULL, "realloc(p, 0): want NULL");
		free(NULL);
	}
	void *kept[8];
	for (int i = 0; i < 8; i++)
		kept[i] = kept_site();
	printf("%d\n", kept[7] != NULL);
	return fails ? 1 : 0;
}
