// bigwait: blocks of 8 MiB made and the program waiting, as Python's
// list of 10^7 items and then a sleep. big_site makes two, one after the
// other: the first sampled block is the thread's first record, which
// the library writes at once; the second comes within the library's
// second. It writes "a" on stdout and waits for a line on stdin, frees
// both, writes "b" and waits again. No stdio: its buffers would be
// blocks of their own.
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void *volatile big[2];

__attribute__((noinline)) static void *big_site(void) {
	void *p = malloc(8 << 20);
	memset(p, 1, 8 << 20);
	return p;
}

static void wait_line(const char *what) {
	write(1, what, strlen(what));
	char c;
	while (read(0, &c, 1) == 1 && c != '\n')
		;
}

int main(void) {
	big[0] = big_site();
	big[1] = big_site();
	wait_line("a\n");
	free(big[0]);
	free(big[1]);
	wait_line("b\n");
	return 0;
}
