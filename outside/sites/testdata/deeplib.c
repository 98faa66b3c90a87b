// deeplib: the library testdata/deepbind.c loads with RTLD_DEEPBIND: it
// allocates (lib_alloc) and frees (lib_free) for the program.
#include <stdlib.h>

__attribute__((noinline)) void *lib_alloc(size_t n) {
	void *p = malloc(n);
	__asm__ volatile("" ::: "memory");
	return p;
}

__attribute__((noinline)) void lib_free(void *p) {
	free(p);
	__asm__ volatile("" ::: "memory");
}
