// latemap: 8 MiB of heap blocks (heap_site), held together and freed,
// then four mappings of 8 MiB (map_site) held to the exit: the peak is
// the mappings' 32 MiB at the end, long after the library's count of
// heap blocks peaked at 8 MiB with no mapping beside it.
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

__attribute__((noinline)) void *heap_site(void) {
	void *p = malloc(4096);
	__asm__ volatile("" ::: "memory");
	return p;
}

__attribute__((noinline)) void *map_site(void) {
	void *p = mmap(NULL, 8 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	__asm__ volatile("" ::: "memory");
	return p;
}

int main(void) {
	static void *b[2048];
	for (int i = 0; i < 2048; i++)
		b[i] = heap_site();
	for (int i = 0; i < 2048; i++)
		free(b[i]);
	for (int i = 0; i < 4; i++)
		if (map_site() == MAP_FAILED)
			_exit(2);
	return 0;
}
