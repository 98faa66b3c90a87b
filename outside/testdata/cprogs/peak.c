// peak: the shape of a short program whose breakdown was taken during
// its teardown: it prints "ready" and waits for a line on standard
// input; then maps MIB MiB of anonymous memory in 8 MiB steps, writing
// every page, prints "peak" and waits for a line; then unmaps all but
// KEEP MiB of it, prints "freed" and lingers until standard input ends,
// then exits 0.
//
// usage: peak MIB KEEP
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define STEP (8UL << 20)

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: peak MIB KEEP\n");
		return 2;
	}
	size_t n = (size_t)atol(argv[1]) << 20, keep = (size_t)atol(argv[2]) << 20;
	size_t steps = n / STEP;
	char **blocks = calloc(steps, sizeof *blocks);
	char buf[256];
	printf("ready\n");
	fflush(stdout);
	if (fgets(buf, sizeof buf, stdin) == NULL) {
		return 1;
	}
	for (size_t i = 0; i < steps; i++) {
		blocks[i] = mmap(NULL, STEP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (blocks[i] == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
		memset(blocks[i], 7, STEP);
	}
	printf("peak\n");
	fflush(stdout);
	if (fgets(buf, sizeof buf, stdin) == NULL) {
		return 1;
	}
	for (size_t i = keep / STEP; i < steps; i++) {
		munmap(blocks[i], STEP);
	}
	printf("freed\n");
	fflush(stdout);
	while (fgets(buf, sizeof buf, stdin) != NULL) {
	}
	return 0;
}
