// live: the blocks of two sites in use at two moments, for the live
// reader's test, which reads the records while the program runs.
//   first_site:  FIRST_N blocks of FIRST_SIZE bytes, then freed.
//   second_site: SECOND_N blocks of SECOND_SIZE bytes (glibc maps each),
//                in use to the end.
// After each phase it waits over a second and frees a block kept for
// it: the library writes a thread's records at least once a second while
// it records, so that free writes them all. It then writes "a" (or "b")
// on stdout and waits for a line on stdin. No stdio: its buffers would
// be blocks of their own.
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FIRST_N 8
#define FIRST_SIZE 100000
#define SECOND_N 5
#define SECOND_SIZE 300000

__attribute__((noinline)) void *first_site(void) {
	void *p = malloc(FIRST_SIZE);
	memset(p, 1, FIRST_SIZE);
	return p;
}

__attribute__((noinline)) void *second_site(void) {
	void *p = malloc(SECOND_SIZE);
	memset(p, 2, SECOND_SIZE);
	return p;
}

// trigger is volatile: the compiler drops a malloc and free of a block
// nothing reads.
void *volatile trigger;

// flushed waits past the library's second, frees trigger (its free
// writes the thread's records), says what and waits for a line.
static void flushed(const char *what) {
	struct timespec ts = {1, 100000000};
	nanosleep(&ts, NULL);
	free(trigger);
	write(1, what, strlen(what));
	char c;
	while (read(0, &c, 1) == 1 && c != '\n')
		;
}

int main(void) {
	static void *first[FIRST_N], *second[SECOND_N];
	trigger = malloc(16);
	for (int i = 0; i < FIRST_N; i++)
		first[i] = first_site();
	flushed("a\n");
	trigger = malloc(16);
	for (int i = 0; i < FIRST_N; i++)
		free(first[i]);
	for (int i = 0; i < SECOND_N; i++)
		second[i] = second_site();
	flushed("b\n");
	return second[0] == NULL;
}
