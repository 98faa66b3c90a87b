// fragment: fills glibc's main arena with 160000 blocks of 512 B (about
// 80 MiB, every page written), frees 15 of every 16, prints "ready" and
// holds until standard input ends, then exits 0.
//   holes: keeps every 16th block, so each page keeps a block in use and
//          stays resident: most of the arena's resident bytes are free
//          (fragmentation).
//   top:   keeps the first 10000 blocks, so the freed ones are the top of
//          the heap, which glibc gives back to the kernel.
//
// usage: fragment holes|top
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 160000

static char *blocks[N];

int main(int argc, char **argv) {
	if (argc != 2 || (strcmp(argv[1], "holes") != 0 && strcmp(argv[1], "top") != 0)) {
		fprintf(stderr, "usage: fragment holes|top\n");
		return 2;
	}
	int holes = strcmp(argv[1], "holes") == 0;
	for (int i = 0; i < N; i++) {
		blocks[i] = malloc(512);
		memset(blocks[i], 1, 512);
	}
	for (int i = 0; i < N; i++) {
		if (holes ? i % 16 != 0 : i >= N / 16) {
			free(blocks[i]);
			blocks[i] = NULL;
		}
	}
	printf("ready\n");
	fflush(stdout);
	char buf[256];
	while (fgets(buf, sizeof buf, stdin) != NULL) {
	}
	return 0;
}
