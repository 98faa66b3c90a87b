#!/usr/bin/env bash
# sites-overhead.sh: what the allocation-site library costs the stress
# program (probe/sites/testdata/stress.c), finer than
# sites-vs-heaptrack.sh's 5 runs: many short runs (N allocations a
# thread), each round every configuration once in a rotating order, the
# library preloaded without the probe; for each configuration the mean
# of each round's CPU (user + system) ratio to the same round's run
# alone, ± one standard error, and the median. A machine whose speed
# drifts moves every configuration of a round together; the ratio
# within the round drops most of it. docs/exec.md quotes it.
#   scripts/sites-overhead.sh                  (make build first)
#   ROUNDS=100 N=500000 CONFIGS="default libunwind nosamples" scripts/sites-overhead.sh
# Configurations: default (the default rate, the library's own
# unwinder), libunwind and libgcc (the default rate, those unwinders),
# nosamples (a rate of 10^14: the fast paths alone), rate=BYTES.
set -euo pipefail
ROUNDS=${ROUNDS:-80}
N=${N:-500000}   # allocations a thread
T=${T:-4}        # threads
CONFIGS=${CONFIGS:-default libunwind nosamples}
here=$(cd "$(dirname "$0")/.." && pwd)
lib=${LIB:-$here/bin/libmemprobe-sites.so}
[ -f "$lib" ] || { echo "sites-overhead: $lib not found: run make build" >&2; exit 2; }
[[ $ROUNDS =~ ^[0-9]+$ && $ROUNDS -ge 2 ]] || { echo "sites-overhead: ROUNDS=$ROUNDS: want 2 or more" >&2; exit 2; }
for c in $CONFIGS; do
	case $c in
	default | libunwind | libgcc | nosamples) ;;
	rate=*) [[ ${c#rate=} =~ ^[1-9][0-9]*$ ]] || { echo "sites-overhead: $c: want rate=BYTES, 1 or more" >&2; exit 2; } ;;
	*) echo "sites-overhead: unknown configuration $c (default libunwind libgcc nosamples rate=BYTES)" >&2; exit 2 ;;
	esac
done
work=$(mktemp -d "${TMPDIR:-/tmp}/sites-overhead.XXXXXX")
trap 'rm -rf "$work"' EXIT
gcc -O2 -g -pthread -o "$work/stress" "$here/probe/sites/testdata/stress.c"

# one CONFIG: one run, its CPU seconds appended to $work/CONFIG.
one() {
	local c=$1 rate=524288 unwind=
	case $c in
	libunwind | libgcc) unwind=$c ;;
	nosamples) rate=100000000000000 ;;
	rate=*) rate=${c#rate=} ;;
	esac
	rm -rf "$work/rec" && mkdir "$work/rec"
	if [ "$c" = alone ]; then
		/usr/bin/time -f "%U %S" -o "$work/time" "$work/stress" "$N" "$T" >/dev/null
	else
		MEMPROBE_SITES_UNWIND=$unwind MEMPROBE_SITES_DIR="$work/rec" MEMPROBE_SITES_RATE=$rate LD_PRELOAD=$lib \
			/usr/bin/time -f "%U %S" -o "$work/time" "$work/stress" "$N" "$T" >/dev/null
	fi
	awk '{printf "%.3f\n", $1 + $2}' "$work/time" >>"$work/$c"
}

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
echo "| configuration | CPU over alone, mean ± SE | median | CPU (s), mean |"
echo "|---|---:|---:|---:|"
awk '{s += $1} END {printf "| alone | 1 | 1 | %.3f |\n", s / NR}' "$work/alone"
for c in $CONFIGS; do
	paste "$work/alone" "$work/$c" | awk '{print $2 / $1, $2}' | sort -g | awk -v c="$c" '
		{r[NR] = $1; s += $1; ss += $1 * $1; t += $2}
		END {
			m = s / NR; se = sqrt((ss / NR - m * m) / (NR - 1))
			med = (NR % 2) ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
			printf "| %s | %.3f ± %.3f | %.3f | %.3f |\n", c, m, se, med, t / NR
		}'
done
