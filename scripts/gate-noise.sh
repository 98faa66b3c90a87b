#!/usr/bin/env bash
# gate-noise.sh measures probe diff's --fail-on gate against noise and
# against real changes (docs/run.md, "What the gate establishes"):
#
#   1. PAIRS pairs of same-build reports, each report
#      `probe run --quick --plan threads --count COUNT`, gated with the
#      README's gate (peak_rss_bytes:+5%) and a tokens/s gate
#      (tokens_per_sec:-10%): every failure is a false alarm;
#   2. copies of one report with every peak RSS scaled by 1.2 and 1.5
#      (each repetition's, the parent's, the summary's: python3 rewrites
#      the JSON), gated against the other report of its pair;
#   3. a real regression between two builds: a copy of the tree whose
#      trainer keeps an 8 MiB buffer it writes (a forgotten scratch buffer:
#      +8 MiB of peak RSS in every phase, past 5 % only where the phase's
#      peak is under 160 MiB, P6's ~30 MiB above all), run once at COUNT,
#      gated against the first pair's base.
#
# It prints a table: what was compared, the gate, how many diffs ran and
# how many failed (exit 1), and how many printed an undecided breach.
# Reports are kept in DIR and reused by a rerun (delete DIR to start
# again), so that the diff can be re-measured after a change to probe diff
# without the runs. Needs go, python3 (for the scaled copies only) and
# about a minute a report on a loaded 2-core machine.
#
# Usage: scripts/gate-noise.sh [DIR]   (PAIRS=10 COUNT=3 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-/tmp/gate-noise}
PAIRS=${PAIRS:-10}
COUNT=${COUNT:-3}
TAGS=${TAGS:-$(./scripts/blas-tags.sh 2>/dev/null || true)}
mkdir -p "$DIR"

# bin/probe diffs; the runs use a copy of it in DIR, so that rebuilding
# bin/probe (a change to probe diff) does not change the reports' build.
go build -buildvcs=auto -tags "$TAGS" -o bin/probe ./cmd/probe
[ -x "$DIR/probe-same" ] || cp bin/probe "$DIR/probe-same"

run() { # BINARY OUT
	[ -s "$2" ] && return 0
	"$1" run --quick --plan threads --count "$COUNT" --out "${2%.json}.tmp.json" --force >/dev/null 2>"${2%.json}.log"
	mv "${2%.json}.tmp.json" "$2"
}

for i in $(seq 1 "$PAIRS"); do
	run "$DIR/probe-same" "$DIR/same-$i-a.json"
	run "$DIR/probe-same" "$DIR/same-$i-b.json"
done

# The regressed build: the same tree, its trainer writing an 8 MiB buffer
# that it keeps for the whole run.
if [ ! -x "$DIR/probe-regressed" ]; then
	src=$(mktemp -d)
	git ls-files -z | xargs -0 cp --parents -t "$src"
	python3 - "$src/trainer/trainer.go" <<'EOF'
import sys
p = sys.argv[1]
s = open(p).read()
old = "\tt.layout = layoutOf(cfg, path)\n"
assert old in s, "trainer.go: no layoutOf line to plant before"
s = s.replace(old, "\tt.plantedHeap = make([]byte, 8<<20)\n\tfor i := range t.plantedHeap {\n\t\tt.plantedHeap[i] = 1\n\t}\n" + old, 1)
open(p, "w").write(s)
EOF
	(cd "$src" && go build -tags "$TAGS" -o "$DIR/probe-regressed" ./cmd/probe)
	rm -rf "$src"
fi
run "$DIR/probe-regressed" "$DIR/regressed.json"

for f in 1.2 1.5; do
	python3 - "$DIR/same-1-a.json" "$f" >"$DIR/scaled-$f.json" <<'EOF'
import json, sys
src, f = sys.argv[1], float(sys.argv[2])
def num(v):
    return type(v)(round(v * f)) if isinstance(v, (int, float)) else v
def scale(x):
    if isinstance(x, dict):
        if x.get("name") == "peak_rss_bytes":  # a summary's metric
            return {k: ([num(e) for e in v] if k == "values" else num(v) if k in ("median", "min", "max", "ci_low", "ci_high") else v) for k, v in x.items()}
        return {k: (num(v) if k == "peak_rss_bytes" else scale(v)) for k, v in x.items()}
    if isinstance(x, list):
        return [scale(v) for v in x]
    return x
json.dump(scale(json.load(open(src))), sys.stdout)
EOF
done

# gate BASE HEAD LIMIT: 0 passed, 1 failed (a regression or unchecked
# line), 2 passed with an undecided line; an error (a file probe diff
# cannot read) stops the script.
gate() {
	local rc=0 err
	err=$(bin/probe diff "$1" "$2" --fail-on "$3" 2>&1 >/dev/null) || rc=$?
	if [ $rc = 0 ] && grep -q '^undecided:' <<<"$err"; then return 2; fi
	if [ $rc = 0 ] || { [ $rc = 1 ] && grep -q '^\(regression\|unchecked\):' <<<"$err"; }; then return $rc; fi
	echo "probe diff $1 $2 --fail-on $3: exit $rc: $err" >&2
	exit 1
}

printf '%-34s %-26s %5s %9s %10s\n' compared gate diffs failures undecided
for g in 'peak_rss_bytes:+5%' 'tokens_per_sec:-10%'; do
	fail=0 und=0
	for i in $(seq 1 "$PAIRS"); do
		rc=0
		gate "$DIR/same-$i-a.json" "$DIR/same-$i-b.json" "$g" || rc=$?
		[ $rc = 1 ] && fail=$((fail + 1))
		[ $rc = 2 ] && und=$((und + 1))
	done
	printf '%-34s %-26s %5d %9d %10d\n' "same build, count $COUNT (pairs)" "$g" "$PAIRS" "$fail" "$und"
done
for h in scaled-1.2 scaled-1.5 regressed; do
	rc=0
	base=$DIR/same-1-a.json
	case $h in scaled-*) base=$DIR/same-1-b.json ;; esac
	gate "$base" "$DIR/$h.json" 'peak_rss_bytes:+5%' || rc=$?
	printf '%-34s %-26s %5d %9d %10d\n' "$h vs ${base##*/}" 'peak_rss_bytes:+5%' 1 $((rc == 1)) $((rc == 2))
done
