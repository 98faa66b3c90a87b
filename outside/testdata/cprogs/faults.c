// faults: maps PAGES pages of anonymous memory without huge pages and
// writes one byte of each (PAGES minor faults), then sleeps 1 ms SLEEPS
// times (as many voluntary context switches), and exits 0; with a third
// argument "hold", prints "ready" first and waits for standard input to
// end. The figures /usr/bin/time -v prints, planted.
//
// usage: faults PAGES SLEEPS [hold]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: faults PAGES SLEEPS [hold]\n");
		return 2;
	}
	long page = sysconf(_SC_PAGESIZE);
	size_t pages = (size_t)atol(argv[1]);
	long sleeps = atol(argv[2]);
	if (pages > 0) {
		char *p = mmap(NULL, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
		madvise(p, pages * page, MADV_NOHUGEPAGE);
		for (size_t i = 0; i < pages; i++) {
			p[i * page] = 1;
		}
	}
	struct timespec ms = {0, 1000000};
	for (long i = 0; i < sleeps; i++) {
		nanosleep(&ms, NULL);
	}
	if (argc == 4) {
		char buf[256];
		printf("ready\n");
		fflush(stdout);
		while (fgets(buf, sizeof buf, stdin) != NULL) {
		}
	}
	return 0;
}
