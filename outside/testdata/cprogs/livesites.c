// livesites: PLANTED_N blocks of PLANTED_SIZE bytes from planted_site,
// in use while it waits on stdin, for exec --live --sites. It waits over
// a second and frees a block first: the allocation-site library writes
// a thread's records at least once a second while it records, so that
// free writes them. Then it prints "ready" and reads its stdin to the
// end, or with an argument waits for a signal. No stdio before: its
// buffers would be blocks of their own.
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PLANTED_N 12
#define PLANTED_SIZE 250000

void *blocks[PLANTED_N];
// trigger is volatile: the compiler drops a malloc and free of a block
// nothing reads.
void *volatile trigger;

__attribute__((noinline)) void *planted_site(void) {
	void *p = malloc(PLANTED_SIZE);
	memset(p, 3, PLANTED_SIZE);
	return p;
}

int main(int argc, char **argv) {
	(void)argv;
	trigger = malloc(16);
	for (int i = 0; i < PLANTED_N; i++)
		blocks[i] = planted_site();
	struct timespec ts = {1, 100000000};
	nanosleep(&ts, NULL);
	free(trigger);
	if (write(1, "ready\n", 6) != 6)
		return 1;
	if (argc > 1)
		for (;;)
			pause();
	char c;
	while (read(0, &c, 1) == 1)
		;
	return 0;
}
