// callers: one allocating site reached from two callers, light_caller
// (8 blocks of 64 KiB) and heavy_caller (24 blocks), all kept to the exit:
// the site's shown stack is the heavier one's.
#include <stdlib.h>

__attribute__((noinline)) void *the_site(void) {
	void *p = malloc(64 << 10);
	__asm__ volatile("" ::: "memory");
	return p;
}

__attribute__((noinline)) void light_caller(void **out) {
	for (int i = 0; i < 8; i++)
		out[i] = the_site();
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void heavy_caller(void **out) {
	for (int i = 0; i < 24; i++)
		out[i] = the_site();
	__asm__ volatile("" ::: "memory");
}

static void *kept[32];

int main(void) {
	light_caller(kept);
	heavy_caller(kept + 8);
	return 0;
}
