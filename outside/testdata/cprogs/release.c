// release: maps MIB MiB of anonymous memory and writes every byte, prints
// "touched" and waits for a line on standard input; then gives the memory
// back with madvise(MADV_DONTNEED) (the mapping stays, its pages go),
// prints "released" and holds until standard input ends, then exits 0.
// The RSS of a program that grew and then released what it took, which
// the diagnosis must not call a plateau at the peak.
//
// usage: release MIB
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int main(int argc, char **argv) {
	if (argc != 2) {
		fprintf(stderr, "usage: release MIB\n");
		return 2;
	}
	size_t n = (size_t)atol(argv[1]) << 20;
	char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	memset(p, 7, n);
	printf("touched\n");
	fflush(stdout);
	char buf[256];
	if (fgets(buf, sizeof buf, stdin) == NULL) {
		return 1;
	}
	if (madvise(p, n, MADV_DONTNEED) != 0) {
		perror("madvise");
		return 1;
	}
	printf("released\n");
	fflush(stdout);
	while (fgets(buf, sizeof buf, stdin) != NULL) {
	}
	return 0;
}
