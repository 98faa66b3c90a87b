// quickexit: leaks 10 blocks of 30000 bytes at leak_site and ends
// without exit's handlers, as dash does (its exit builtin calls _exit):
//   quickexit _exit | _Exit   end with that call
//   quickexit vfork           first vfork a child that calls _exit at
//                             once (it shares the parent's memory and
//                             must write nothing), then end with _exit
//   quickexit SIGTERM         raise SIGTERM: at its default, it ends the
//                             program (exit 0 where it is ignored)
//   quickexit SIGPIPE         write to a pipe nobody reads
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void *keep[10];

__attribute__((noinline)) void *leak_site(void) {
	void *p = malloc(30000);
	__asm__ volatile("" ::: "memory");
	return p;
}

int main(int argc, char **argv) {
	const char *how = argc > 1 ? argv[1] : "_exit";
	if (strcmp(how, "vfork") == 0) {
		pid_t pid = vfork();
		if (pid == 0)
			_exit(0);
		if (pid < 0 || waitpid(pid, NULL, 0) != pid)
			return 1;
	}
	for (int i = 0; i < 10; i++)
		keep[i] = leak_site();
	if (strcmp(how, "_Exit") == 0)
		_Exit(0);
	if (strcmp(how, "SIGTERM") == 0) {
		raise(SIGTERM);
		return 0; // ignored
	}
	if (strcmp(how, "SIGPIPE") == 0) {
		int fds[2];
		if (pipe(fds) != 0)
			return 1;
		close(fds[0]);
		(void)write(fds[1], "x", 1);
		return 1; // survived a write to a closed pipe
	}
	_exit(0);
}
