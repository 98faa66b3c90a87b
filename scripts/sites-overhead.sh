#!/usr/bin/env bash
# sites-overhead.sh: what the allocation-site library costs the stress
# program (outside/sites/testdata/stress.c), finer than
# sites-vs-heaptrack.sh's 5 runs: many short runs (N allocations a
# thread), each round every configuration once in a rotating order, the
# library preloaded without the probe (but in probe and watch); for each
# configuration the mean of each round's CPU (user + system) ratio to
# the same round's run alone, ± one standard error, and the median; the
# same of wall time. A machine whose speed drifts moves every
# configuration of a round together; the ratio within the round drops
# most of it. docs/exec.md quotes it.
#   scripts/sites-overhead.sh                  (make build first)
#   ROUNDS=100 N=500000 CONFIGS="default libunwind nosamples" scripts/sites-overhead.sh
# Configurations: default (the default rate, the library's own
# unwinder), libunwind and libgcc (the default rate, those unwinders),
# nosamples (a rate of 10^14: the fast paths alone), rate=BYTES; and
# with the probe watching: probe (bin/probe exec --sites, the default
# rate) and watch (bin/probe exec, no library), whose CPU is the
# program's own (wait4, from the result) and not the probe's: on a
# machine the program keeps busy, what the probe takes of it shows in
# the wall column. watch=PATH is watch with another probe binary (one
# built from main, say), so that a change to the watch is measured before
# and after in the same rounds:
#   git worktree add /tmp/main main && (cd /tmp/main && go build -o /tmp/probe-main ./cmd/probe)
#   ROUNDS=15 N=2500000 CONFIGS="watch watch=/tmp/probe-main" scripts/sites-overhead.sh
# Only the library's configurations need bin/libmemprobe-sites.so.
set -euo pipefail
ROUNDS=${ROUNDS:-80}
N=${N:-500000}   # allocations a thread
T=${T:-4}        # threads
CONFIGS=${CONFIGS:-default libunwind nosamples}
here=$(cd "$(dirname "$0")/.." && pwd)
lib=${LIB:-$here/bin/libmemprobe-sites.so}
[[ $ROUNDS =~ ^[0-9]+$ && $ROUNDS -ge 2 ]] || { echo "sites-overhead: ROUNDS=$ROUNDS: want 2 or more" >&2; exit 2; }
for c in $CONFIGS; do
	case $c in
	probe | watch) ;;
	watch=*) [ -x "${c#watch=}" ] || { echo "sites-overhead: $c: not an executable probe" >&2; exit 2; } ;;
	default | libunwind | libgcc | nosamples | rate=*)
		[ -f "$lib" ] || { echo "sites-overhead: $c: $lib not found: run make build" >&2; exit 2; }
		[[ $c != rate=* || ${c#rate=} =~ ^[1-9][0-9]*$ ]] || { echo "sites-overhead: $c: want rate=BYTES, 1 or more" >&2; exit 2; }
		;;
	*) echo "sites-overhead: unknown configuration $c (default libunwind libgcc nosamples rate=BYTES probe watch watch=PATH)" >&2; exit 2 ;;
	esac
done
probe=$(dirname "$lib")/probe
case " $CONFIGS " in
*" probe "* | *" watch "*) [ -x "$probe" ] || { echo "sites-overhead: $probe not found: run make build" >&2; exit 2; } ;;
esac
work=$(mktemp -d "${TMPDIR:-/tmp}/sites-overhead.XXXXXX")
trap 'rm -rf "$work"' EXIT
gcc -O2 -g -pthread -o "$work/stress" "$here/outside/sites/testdata/stress.c"
# timed FILE CMD...: runs CMD, writes its user, system and wall seconds
# to FILE, to the microsecond (/usr/bin/time's hundredths are 4 % of a
# 0.25 s run).
cat >"$work/timed.c" <<'EOF'
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	pid_t p = fork();
	if (p == 0) {
		execvp(argv[2], argv + 2);
		_exit(127);
	}
	int st;
	struct rusage ru;
	if (p < 0 || wait4(p, &st, 0, &ru) < 0)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &b);
	FILE *f = fopen(argv[1], "w");
	if (f == NULL)
		return 1;
	fprintf(f, "%.6f %.6f %.6f\n", ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6, ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6,
		(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
	return fclose(f) != 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0;
}
EOF
gcc -O2 -o "$work/timed" "$work/timed.c"

# one CONFIG: one run, its CPU and wall seconds appended to $work/CONFIG.
one() {
	local c=$1 rate=524288 unwind= # outside/sites.DefaultRate: the library has no default
	case $c in
	libunwind | libgcc) unwind=$c ;;
	nosamples) rate=100000000000000 ;;
	rate=*) rate=${c#rate=} ;;
	esac
	rm -rf "$work/rec" && mkdir "$work/rec"
	case $c in
	alone)
		"$work/timed" "$work/time" "$work/stress" "$N" "$T" >/dev/null
		;;
	probe | watch | watch=*)
		local sites=() bin=$probe
		[ "$c" = probe ] && sites=(--sites --out-dir "$work/out")
		[[ $c == watch=* ]] && bin=${c#watch=}
		rm -rf "$work/r.json" "$work/out"
		"$bin" exec "${sites[@]}" --json "$work/r.json" -- "$work/stress" "$N" "$T" >/dev/null 2>"$work/err" ||
			{ echo "sites-overhead: $c: $(tail -1 "$work/err")" >&2; exit 1; }
		jq -r '.process | "\(.rusage_user_ms / 1000) \(.rusage_system_ms / 1000) \(.duration_ms / 1000)"' "$work/r.json" >"$work/time"
		;;
	*)
		MEMPROBE_SITES_UNWIND=$unwind MEMPROBE_SITES_DIR="$work/rec" MEMPROBE_SITES_RATE=$rate LD_PRELOAD=$lib \
			"$work/timed" "$work/time" "$work/stress" "$N" "$T" >/dev/null
		;;
	esac
	awk '{printf "%.3f %.3f\n", $1 + $2, $3}' "$work/time" >>"$work/$(key "$c")"
}

# key CONFIG: the file name of a configuration's times (watch=PATH's
# path has slashes).
key() { echo "${1//\//_}"; }

all=(alone $CONFIGS)
k=${#all[@]}
for r in $(seq "$ROUNDS"); do
	# Each configuration takes each place in the order in turn.
	for i in $(seq 0 $((k - 1))); do
		one "${all[$(((i + r) % k))]}"
	done
done

echo "stress.c, $N allocations a thread, $T threads; $ROUNDS rounds; CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores"
echo
echo "| configuration | CPU over alone, mean ± SE | median | wall over alone, mean ± SE | median | CPU (s), mean |"
echo "|---|---:|---:|---:|---:|---:|"
awk '{s += $1} END {printf "| alone | 1 | 1 | 1 | 1 | %.3f |\n", s / NR}' "$work/alone"
# stats: the mean ± SE and the median of a column of ratios.
stats() {
	sort -g | awk '
		{r[NR] = $1; s += $1; ss += $1 * $1}
		END {
			m = s / NR; se = sqrt((ss / NR - m * m) / (NR - 1))
			med = (NR % 2) ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
			printf "%.3f ± %.3f | %.3f", m, se, med
		}'
}
for c in $CONFIGS; do
	f=$work/$(key "$c")
	cpu=$(paste "$work/alone" "$f" | awk '{print $3 / $1}' | stats)
	wall=$(paste "$work/alone" "$f" | awk '{print $4 / $2}' | stats)
	echo "| $c | $cpu | $wall | $(awk '{s += $1} END {printf "%.3f", s / NR}' "$f") |"
done
