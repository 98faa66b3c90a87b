// deepbind: loads testdata/deeplib.c with RTLD_DEEPBIND (whose malloc and
// free then bind to the C library's own, before the preloaded
// library's) for outside/sites' TestDeepbind. 2000 times: the library
// frees a block the program made, and the program one the library made;
// then each keeps 5 (prog_alloc 5 × 30000 bytes, lib_alloc 5 × 40000).
//   deepbind LIBRARY
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *keep[10];

__attribute__((noinline)) static void *prog_alloc(size_t n) {
	void *p = malloc(n);
	__asm__ volatile("" ::: "memory");
	return p;
}

int main(int argc, char **argv) {
	if (argc != 2)
		return 2;
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_DEEPBIND);
	if (h == NULL) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	void *(*lib_alloc)(size_t) = (void *(*)(size_t))dlsym(h, "lib_alloc");
	void (*lib_free)(void *) = (void (*)(void *))dlsym(h, "lib_free");
	for (int i = 0; i < 2000; i++) {
		void *p = prog_alloc(4000 + i);
		memset(p, 1, 4000);
		lib_free(p);
		void *q = lib_alloc(4000 + i);
		memset(q, 1, 4000);
		free(q);
	}
	for (int i = 0; i < 5; i++) {
		memset(keep[i] = prog_alloc(30000), 1, 30000);
		memset(keep[5 + i] = lib_alloc(40000), 1, 40000);
	}
	return 0;
}
