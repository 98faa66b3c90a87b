// wrapper: an allocation wrapper, xmalloc, reached from two callers.
// keeper makes 8 blocks of 1 MiB and keeps them to the exit; churn then
// makes 64 and frees each at once (temporaries). By bytes allocated
// churn's stack is the wrapper's heaviest (64 MiB against 8); in use at
// the peak (9 MiB: keeper's 8, churn's last) and at exit, keeper's.
#include <stdlib.h>

__attribute__((noinline)) void *xmalloc(size_t n) {
	void *p = malloc(n);
	if (p == NULL)
		abort();
	__asm__ volatile("" ::: "memory");
	return p;
}

static void *kept[8];

__attribute__((noinline)) void keeper(void) {
	for (int i = 0; i < 8; i++)
		kept[i] = xmalloc(1 << 20);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void churn(void) {
	for (int i = 0; i < 64; i++) {
		char *p = xmalloc(1 << 20);
		p[0] = 1;
		free(p);
	}
	__asm__ volatile("" ::: "memory");
}

int main(void) {
	keeper();
	churn();
	return 0;
}
