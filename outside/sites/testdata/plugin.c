// plugin: a shared library that testdata/dlopen.c loads, allocates from
// and closes: its frames must still be named after dlclose.
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) void *plugin_alloc(size_t n) {
	void *p = malloc(n);
	memset(p, 1, n);
	__asm__ volatile("" ::: "memory");
	return p;
}
