// spin: a CPU-bound loop of ITERATIONS steps of an xorshift generator over
// a 4 MiB table (so it touches memory as well as registers); prints the
// final value, so the loop cannot be optimised away.
//
// usage: spin ITERATIONS
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
	if (argc != 2) {
		fprintf(stderr, "usage: spin ITERATIONS\n");
		return 2;
	}
	long n = atol(argv[1]);
	enum { N = 1 << 20 };
	uint32_t *tab = malloc(N * sizeof *tab);
	for (uint32_t i = 0; i < N; i++)
		tab[i] = i * 2654435761u;
	uint64_t x = 88172645463325252ull;
	for (long i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		tab[x & (N - 1)] += (uint32_t)x;
	}
	uint64_t s = 0;
	for (uint32_t i = 0; i < N; i++)
		s += tab[i];
	printf("%llu\n", (unsigned long long)(s ^ x));
	return 0;
}
