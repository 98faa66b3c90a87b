// majfaults: writes PAGES pages to FILE, drops them from the page cache
// (fsync, then POSIX_FADV_DONTNEED), maps the file with readahead off
// (MADV_RANDOM) and reads one byte of each page: PAGES major faults, each
// a read from the disk (not on tmpfs, whose pages have no disk to go
// back to). Exits 0. A planted figure of /usr/bin/time -v.
//
// usage: majfaults FILE PAGES
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: majfaults FILE PAGES\n");
		return 2;
	}
	long page = sysconf(_SC_PAGESIZE);
	size_t n = (size_t)atol(argv[2]) * page;
	if (n == 0) {
		return 0;
	}
	int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
	char *buf = malloc(n);
	if (fd < 0 || buf == NULL) {
		perror("majfaults");
		return 1;
	}
	memset(buf, 3, n);
	if (write(fd, buf, n) != (ssize_t)n || fsync(fd) != 0) {
		perror("write");
		return 1;
	}
	posix_fadvise(fd, 0, n, POSIX_FADV_DONTNEED);
	char *p = mmap(NULL, n, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	madvise(p, n, MADV_RANDOM);
	volatile long s = 0;
	for (size_t i = 0; i < n; i += page) {
		s += p[i];
	}
	return 0;
}
