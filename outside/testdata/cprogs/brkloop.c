// brkloop: grows its brk heap a page at a time, writing each page, to 80
// MiB, gives it all back and starts again, until killed: an area whose
// end moves all the time, for TestWalkAreaOnce.
#include <unistd.h>

int main(void) {
	for (;;) {
		for (int i = 0; i < 20480; i++) {
			char *p = sbrk(4096);
			if (p == (void *)-1)
				return 1;
			p[0] = 1;
		}
		sbrk(-20480 * 4096);
	}
}
