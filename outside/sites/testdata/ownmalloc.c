// ownmalloc: defines malloc, calloc, realloc and free itself (a bump
// allocator over a static arena), as a program with jemalloc or
// tcmalloc linked in does: the executable's definitions come before
// any preloaded library's, so the library never sees its calls.
#include <stddef.h>
#include <string.h>

static char arena[16 << 20];
static size_t used;

void *malloc(size_t n) {
	n = (n + 15) & ~(size_t)15;
	if (n > sizeof arena - used)
		return NULL;
	void *p = arena + used;
	used += n;
	return p;
}

void free(void *p) { (void)p; }

void *calloc(size_t a, size_t b) {
	void *p = malloc(a * b);
	if (p != NULL)
		memset(p, 0, a * b);
	return p;
}

void *realloc(void *p, size_t n) {
	void *q = malloc(n);
	if (q != NULL && p != NULL)
		memcpy(q, p, n);
	return q;
}

int main(void) {
	for (int i = 0; i < 1000; i++) {
		volatile char *p = malloc(1000);
		p[0] = 1;
	}
	return 0;
}
