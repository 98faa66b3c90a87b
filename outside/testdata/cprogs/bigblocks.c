// bigblocks: mallocs N blocks of MIB mebibytes each (glibc gives each a
// mapping of its own: its large blocks, mmapped chunks), writes every
// page, prints "ready", waits for standard input to end, and exits 0.
// With "memalign" the blocks are aligned to 1 MiB: glibc places each
// inside a larger mapping. With "mmap" they are the program's own
// anonymous mappings, not malloc's. With "gate" after it, it first
// waits for a line on standard input: a watch's first walk then sees the
// program before its blocks, not in the middle of writing them.
//
// usage: bigblocks N MIB [malloc|memalign|mmap [gate]]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

// map_block is the site of the program's own mappings.
__attribute__((noinline)) static char *map_block(size_t size) {
	char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	__asm__ volatile("" ::: "memory");
	return p == MAP_FAILED ? NULL : p;
}

int main(int argc, char **argv) {
	if (argc < 3 || atoi(argv[1]) <= 0 || atol(argv[2]) <= 0) {
		fprintf(stderr, "usage: bigblocks N MIB [memalign|mmap]\n");
		return 2;
	}
	int n = atoi(argv[1]);
	size_t size = (size_t)atol(argv[2]) << 20;
	const char *how = argc > 3 ? argv[3] : "malloc";
	if (argc > 4 && strcmp(argv[4], "gate") == 0) {
		char line[64];
		if (fgets(line, sizeof line, stdin) == NULL)
			return 1;
	}
	for (int i = 0; i < n; i++) {
		char *p = NULL;
		if (strcmp(how, "memalign") == 0) {
			if (posix_memalign((void **)&p, 1 << 20, size) != 0)
				return 1;
		} else if (strcmp(how, "mmap") == 0) {
			if ((p = map_block(size)) == NULL)
				return 1;
		} else if ((p = malloc(size)) == NULL) {
			return 1;
		}
		memset(p, 1, size);
	}
	printf("ready\n");
	fflush(stdout);
	char b[64];
	while (read(0, b, sizeof b) > 0) {
	}
	return 0;
}
