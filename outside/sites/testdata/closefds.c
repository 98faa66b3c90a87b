// closefds: closes every descriptor above stderr, as a daemon or
// closefrom(3) does, then opens a file of its own (FILE, argv[1]),
// which takes the lowest free number, allocates, and writes "hello\n"
// to the file through stdio, which exit flushes after the atexit
// handlers (the library's among them). N blocks of 1000 bytes before
// the closes and N after are held to the end; between them, enough
// blocks made and freed to fill the library's buffer at rate 1 leave
// errno as it was (exit 3 where not).
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define N 50

void *keep[2 * N];

int main(int argc, char **argv) {
	if (argc < 2)
		return 2;
	for (int i = 0; i < N; i++)
		keep[i] = malloc(1000);
	for (int f = 3; f < 4096; f++)
		close(f);
	FILE *out = fopen(argv[1], "w");
	if (out == NULL)
		return 1;
	errno = 0;
	for (int i = 0; i < 20000; i++) {
		void *volatile p = malloc(64); // volatile: not a pair the compiler drops
		free(p);
	}
	if (errno != 0)
		return 3;
	for (int i = N; i < 2 * N; i++)
		keep[i] = malloc(1000);
	fprintf(out, "hello\n");
	return 0;
}
