// grow: allocates TOTAL_MIB in STEP_MIB blocks, writing every byte, one
// block every STEP_US microseconds, so that its resident set grows
// steadily; prints "done", holds (HOLD milliseconds, or "stdin": until
// standard input ends) and exits 0 without freeing. HOLD "gate" is
// "stdin" after a line read from standard input before the first block:
// a watch's first sample then sees the program before its growth.
//
// usage: grow TOTAL_MIB STEP_MIB STEP_US HOLD
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
	if (argc != 5) {
		fprintf(stderr, "usage: grow TOTAL_MIB STEP_MIB STEP_US HOLD\n");
		return 2;
	}
	long total = atol(argv[1]), step = atol(argv[2]), us = atol(argv[3]);
	int gate = strcmp(argv[4], "gate") == 0;
	if (gate) {
		char line[64];
		if (fgets(line, sizeof line, stdin) == NULL)
			return 1;
	}
	for (long done = 0; done < total; done += step) {
		char *p = malloc((size_t)step << 20);
		if (p == NULL) {
			perror("malloc");
			return 1;
		}
		memset(p, 7, (size_t)step << 20);
		usleep(us);
	}
	printf("done\n");
	fflush(stdout);
	if (gate || strcmp(argv[4], "stdin") == 0) {
		char buf[256];
		while (read(0, buf, sizeof buf) > 0) {
		}
	} else {
		usleep(atol(argv[4]) * 1000);
	}
	return 0;
}
