// sampled: many blocks of 64 KiB, for the sampling test of outside/sites.
// Each block costs a page of RSS (glibc writes its header), so the
// in-use bytes are large (720 MiB at the peak) and the program cheap.
//   site_a: 6144 blocks, held, then freed
//   site_b: 1280 blocks, held, then freed
//   leak:   4096 blocks, never freed (256 MiB at exit)
#include <stdlib.h>

#define BLOCK (64 << 10)

static void *a[6144], *b[1280], *l[4096];

__attribute__((noinline)) void *site_a(void) { void *p = malloc(BLOCK); __asm__ volatile("" ::: "memory"); return p; }
__attribute__((noinline)) void *site_b(void) { void *p = malloc(BLOCK); __asm__ volatile("" ::: "memory"); return p; }
__attribute__((noinline)) void *leak(void) { void *p = malloc(BLOCK); __asm__ volatile("" ::: "memory"); return p; }

int main(void) {
	for (int i = 0; i < 6144; i++) {
		a[i] = site_a();
		if (i < 1280)
			b[i] = site_b();
		if (i < 4096)
			l[i] = leak();
	}
	for (int i = 0; i < 6144; i++)
		free(a[i]);
	for (int i = 0; i < 1280; i++)
		free(b[i]);
	return 0;
}
