// dlopen: loads the library named by argv[1] (testdata/plugin.c), leaks 5
// blocks of 12345 bytes through its plugin_alloc, closes it and exits.
#include <dlfcn.h>
#include <stdio.h>

void *keep[5];

int main(int argc, char **argv) {
	if (argc != 2)
		return 2;
	void *h = dlopen(argv[1], RTLD_NOW);
	if (h == NULL) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	void *(*alloc)(size_t) = (void *(*)(size_t))dlsym(h, "plugin_alloc");
	for (int i = 0; i < 5; i++)
		keep[i] = alloc(12345);
	dlclose(h);
	return 0;
}
