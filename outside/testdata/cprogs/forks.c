// forks: for each SPEC "MIB:MS", in turn, forks a child that maps MIB
// MiB of anonymous memory, writes every page, sleeps MS ms and exits 0;
// waits for it, then sleeps GAP ms before the next. Exits 0. Descendants
// of known sizes and lifetimes, one at a time.
//
// usage: forks GAP MIB:MS...
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(long ms) {
	struct timespec t = {ms / 1000, (ms % 1000) * 1000000};
	nanosleep(&t, NULL);
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: forks GAP MIB:MS...\n");
		return 2;
	}
	long gap = atol(argv[1]);
	for (int i = 2; i < argc; i++) {
		size_t mib = (size_t)atol(argv[i]);
		const char *colon = strchr(argv[i], ':');
		long ms = colon ? atol(colon + 1) : 0;
		pid_t pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			size_t n = mib << 20;
			char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (p == MAP_FAILED) {
				_exit(1);
			}
			memset(p, 7, n);
			sleep_ms(ms);
			_exit(0);
		}
		int st;
		if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "forks: child %d failed\n", (int)pid);
			return 1;
		}
		sleep_ms(gap);
	}
	return 0;
}
