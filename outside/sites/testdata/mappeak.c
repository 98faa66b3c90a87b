// mappeak: a mapping of 32 MiB held to the exit (map_site), then 256 heap
// blocks of 4 KiB (heap_site), held together, then freed: the peak is 33
// MiB, when the library's count of heap blocks peaks at 1 MiB, and at the
// default rate rarely a sample comes while the count is near its peak.
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

__attribute__((noinline)) void *map_site(void) {
	void *p = mmap(NULL, 32 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	__asm__ volatile("" ::: "memory");
	return p;
}

__attribute__((noinline)) void *heap_site(void) {
	void *p = malloc(4096);
	__asm__ volatile("" ::: "memory");
	return p;
}

int main(void) {
	static void *b[256];
	if (map_site() == MAP_FAILED)
		_exit(2);
	for (int i = 0; i < 256; i++)
		b[i] = heap_site();
	for (int i = 0; i < 256; i++)
		free(b[i]);
	return 0;
}
