// noreturn: an allocation under a call that is its caller's last
// instruction (to a function that does not return), so the return
// address is past the caller's end: an unwinder looks up the return
// address less 1, or finds the next function's rule (or none).
#include <stdlib.h>

void *keep;

__attribute__((noinline, noreturn)) void alloc_and_exit(void) {
	keep = malloc(4321);
	__asm__ volatile("" ::: "memory");
	exit(0);
}

__attribute__((noinline)) void last_call(void) { alloc_and_exit(); }

__attribute__((noinline)) int after(int x) { return x * 3 + 1; }

int main(int argc, char **argv) {
	(void)argv;
	if (argc > 5)
		return after(argc);
	last_call();
}
