#!/usr/bin/env bash
# sites-scale.sh: probe exec --sites --sites-rate 1 against heaptrack on the
# stress program (outside/sites/testdata/stress.c, 4 threads) at growing
# numbers of allocations (issue 43, section 2). For each count it prints
# one markdown row per tool:
#   - records: the probe's record files (their largest total while the
#     program ran), heaptrack's trace (zstd);
#   - peak RSS: the probe's own (VmHWM, read until it exits: the reading
#     of the records is in it, the program's memory is not); heaptrack's
#     recorder (its whole tree, /usr/bin/time -v) and heaptrack_print;
#   - wall: program start to the report printed (the probe), recording
#     alone and printing (heaptrack).
#
#   scripts/sites-scale.sh                 (make build first; 10 M and 100 M)
#   COUNTS="10000000" scripts/sites-scale.sh
set -euo pipefail

COUNTS=${COUNTS:-10000000 100000000} # allocations in all
THREADS=${THREADS:-4}
PROBE=${PROBE:-bin/probe}
HEAPTRACK=${HEAPTRACK:-1} # 0: the probe only
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/sites-scale.XXXXXX")
trap 'rm -rf "$work"' EXIT

for tool in heaptrack heaptrack_print gcc /usr/bin/time; do
	command -v "$tool" >/dev/null || { echo "sites-scale: $tool not found (apt-get install heaptrack time)" >&2; exit 2; }
done
[ -x "$PROBE" ] || { echo "sites-scale: $PROBE not found: run make build" >&2; exit 2; }
gcc -O2 -g -pthread -o "$work/stress" "$here/outside/sites/testdata/stress.c"

mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
now() { date +%s.%N; }

# probe N: one run under the probe at rate 1; prints records bytes, the
# probe's VmHWM in kB, wall seconds.
probe() {
	local per=$(($1 / THREADS)) tmp="$work/tmp" rec=0 hwm=0 t0 t1 pid s h
	rm -rf "$tmp" && mkdir -p "$tmp"
	t0=$(now)
	TMPDIR=$tmp "$PROBE" exec --sites --sites-rate 1 --out-dir "$work/out" --json "$work/r.json" -- "$work/stress" "$per" "$THREADS" >"$work/probe.out" 2>"$work/probe.err" &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		s=$(du -sb "$tmp" 2>/dev/null | cut -f1) || s=0
		[ "${s:-0}" -gt "$rec" ] && rec=$s
		h=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null) || h=0
		[ "${h:-0}" -gt "$hwm" ] && hwm=$h
		sleep 0.1
	done
	wait "$pid" || { echo "sites-scale: the probe failed:" >&2; cat "$work/probe.err" >&2; exit 1; }
	t1=$(now)
	echo "$rec $hwm $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')"
}

# timev FILE CMD...: runs CMD under /usr/bin/time -v into FILE; prints its
# wall seconds and max RSS in kB.
timev() {
	local f=$1
	shift
	/usr/bin/time -v -o "$f" "$@" >/dev/null 2>&1
	awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); w = 0; for (i = 1; i <= n; i++) w = w * 60 + p[i] }
		/Maximum resident set size/ { r = $2 } END { printf "%.1f %d\n", w, r }' "$f"
}

echo "| allocations | tool | records | peak RSS reading | wall (start to report) |"
echo "|---|---|---|---|---|"
for n in $COUNTS; do
	read -r rec hwm wall < <(probe "$n")
	echo "| $n | probe --sites-rate 1 | $(mib "$rec") | $(mib $((hwm * 1024))) | $wall s |"
	grep -i "peak\|warn" "$work/probe.err" | head -3 >&2 || true
	[ "$HEAPTRACK" = 1 ] || continue
	per=$((n / THREADS))
	rm -f "$work"/ht.*
	read -r rw rr < <(timev "$work/time.ht" heaptrack -o "$work/ht" "$work/stress" "$per" "$THREADS")
	trace=$(ls "$work"/ht.*zst "$work"/ht.*gz 2>/dev/null | head -1 || true)
	read -r pw pr < <(timev "$work/time.htp" heaptrack_print "$trace")
	echo "| $n | heaptrack | $(mib "$(stat -c %s "$trace")") | recorder $(mib $((rr * 1024))), print $(mib $((pr * 1024))) | record $rw s + print $pw s |"
done
