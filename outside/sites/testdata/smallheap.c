// smallheap: 16 blocks of 4000 bytes (small_site) held to the exit, 64000
// bytes in all: less than a thread's count moves by before it is
// published (128 KiB), so the count's peak within the run is the
// thread's first block, and the peak is the end's count.
#include <stdlib.h>

__attribute__((noinline)) void *small_site(void) {
	void *p = malloc(4000);
	__asm__ volatile("" ::: "memory");
	return p;
}

int main(void) {
	static void *b[16];
	for (int i = 0; i < 16; i++)
		b[i] = small_site();
	return b[15] == NULL;
}
