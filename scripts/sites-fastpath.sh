#!/usr/bin/env bash
# sites-fastpath.sh: the instructions the allocation-site library adds to
# a malloc+free pair at the default rate, counted by valgrind's cachegrind
# (the same from run to run, unlike seconds on a shared machine), on
# outside/sites/testdata/pairs.c: glibc alone, then under bin/libmemprobe-sites.so.
# docs/exec.md quotes it.
#   scripts/sites-fastpath.sh          (make build first)
#   N=200000 scripts/sites-fastpath.sh
set -euo pipefail
N=${N:-1000000}
here=$(cd "$(dirname "$0")/.." && pwd)
lib=${LIB:-$here/bin/libmemprobe-sites.so}
command -v valgrind >/dev/null || { echo "sites-fastpath: valgrind not found (apt-get install valgrind)" >&2; exit 2; }
[ -f "$lib" ] || { echo "sites-fastpath: $lib not found: run make build" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/sites-fastpath.XXXXXX")
trap 'rm -rf "$work"' EXIT
gcc -O2 -o "$work/pairs" "$here/outside/sites/testdata/pairs.c"
count() { # prints "instructions D1-misses" of one run
	env "$@" valgrind --tool=cachegrind --cache-sim=yes --cachegrind-out-file=/dev/null "$work/pairs" "$N" 2>&1 >/dev/null |
		awk '/I *refs:/ {gsub(",", "", $4); i=$4} /D1 *misses:/ {gsub(",", "", $4); d=$4} END {print i, d}'
}
read -r ia da < <(count)
mkdir -p "$work/rec"
# The default rate, outside/sites.DefaultRate: the library has none of its
# own, and refuses to record without one.
read -r ib db < <(count MEMPROBE_SITES_DIR="$work/rec" MEMPROBE_SITES_RATE=524288 LD_PRELOAD="$lib")
awk -v n="$N" -v ia="$ia" -v da="$da" -v ib="$ib" -v db="$db" 'BEGIN {
	printf "%d malloc+free pairs on one thread (cachegrind)\n", n
	printf "glibc alone:          %6.1f instructions, %4.2f L1 data misses a pair\n", ia / n, da / n
	printf "with the library:     %6.1f instructions, %4.2f L1 data misses a pair\n", ib / n, db / n
	printf "added by the library: %6.1f instructions (%+.0f %%)\n", (ib - ia) / n, 100 * (ib - ia) / ia
}'
