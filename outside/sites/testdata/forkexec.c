// forkexec: a parent that forks a child which allocates and exits, then
// execs itself as a second image that allocates, for outside/sites' tests.
//   image 0 (parent): parent_site 3 × 300000 bytes, leaked.
//   child of fork:    child_site  5 × 70000 bytes, leaked.
//   image 1 (after execve "second"): second_site 7 × 90000 bytes, leaked.
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void *keep[16];

__attribute__((noinline)) void parent_site(int i) { keep[i] = malloc(300000); memset(keep[i], 1, 300000); }
__attribute__((noinline)) void child_site(int i) { keep[i] = malloc(70000); memset(keep[i], 1, 70000); }
__attribute__((noinline)) void second_site(int i) { keep[i] = malloc(90000); memset(keep[i], 1, 90000); }

int main(int argc, char **argv) {
	if (argc > 1 && strcmp(argv[1], "second") == 0) {
		for (int i = 0; i < 7; i++)
			second_site(i);
		return 0;
	}
	for (int i = 0; i < 3; i++)
		parent_site(i);
	pid_t pid = fork();
	if (pid == 0) {
		for (int i = 0; i < 5; i++)
			child_site(i + 3);
		exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	char *args[] = {argv[0], "second", NULL};
	execv("/proc/self/exe", args);
	return 1;
}
