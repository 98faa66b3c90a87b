#!/bin/sh
# gpu-ab.sh: two builds of the probe side by side on one GPU machine, for a
# change whose effect only a GPU shows (docs/phases.md, "On a GPU").
#
#   scripts/gpu-ab.sh BASE HEAD
#
# BASE and HEAD are probe binaries built by `scripts/gpu-check.sh build`
# (copy the first aside before building the second; carry both there).
# Each runs `probe decode --device cuda --decode all --passes 10` at the
# seed's head with probabilities and at GPT-2 small's head without and
# with them, alternating BASE and HEAD, two rounds, and once the
# per-token-prealloc mode at GPT-2 small's vocabulary with C = 96 (where
# a per-token step's time is the softmax's, not the product's). Writes
# ab.txt (every table) and ab-LABEL-SHAPE-ROUND.json under $OUT (else
# ./gpu-ab-out), LABEL being each binary's file name. About 2 minutes on
# an H100. Exit status: 1 if any command failed. GPU_AB_SMALL, GPU_AB_BIG
# and GPU_AB_NARROW (default seed, gpt2-head and 96) let a test run it on
# the stand-in driver at a tiny shape.
set -u
SMALL=${GPU_AB_SMALL:-seed}
BIG=${GPU_AB_BIG:-gpt2-head}
NARROW=${GPU_AB_NARROW:-96}
[ $# -eq 2 ] || { echo "usage: scripts/gpu-ab.sh BASE HEAD (two probe binaries)" >&2; exit 2; }
OUT=${OUT:-./gpu-ab-out}
mkdir -p "$OUT"
L=$OUT/ab.txt
: >"$L"
failed=0
for round in 1 2; do
	for bin in "$1" "$2"; do
		label=$(basename "$bin")
		for shape in "$SMALL --probs=true" "$BIG --probs=false" "$BIG --probs=true"; do
			set -- "$1" "$2" $shape
			name=$label-$3-$(echo "$4" | tr -d '=-')-$round
			echo "== $name" >>"$L"
			timeout 100 "$bin" decode --device cuda --preset "$3" "$4" --decode all --passes 10 \
				--format markdown --json "$OUT/ab-$name.json" >>"$L" 2>&1 || { echo "FAILED $name: exit $?" >>"$L"; failed=1; }
			set -- "$1" "$2"
		done
		if [ "$round" = 1 ]; then
			name=$label-$BIG-dim$NARROW
			echo "== $name" >>"$L"
			timeout 60 "$bin" decode --device cuda --preset "$BIG" --dim "$NARROW" --probs=false --decode per-token-prealloc --passes 10 \
				--format markdown --json "$OUT/ab-$name.json" >>"$L" 2>&1 || { echo "FAILED $name: exit $?" >>"$L"; failed=1; }
		fi
	done
done
grep '^FAILED' "$L" >&2
exit "$failed"
