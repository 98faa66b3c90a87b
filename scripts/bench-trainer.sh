#!/bin/sh
# Benchmarks the trainer on the seed preset at 1, 2 and 63 threads and
# prints one table: threads, tokens/s, GFLOPS, peak RSS, the analytical
# floor, allocations per step. Builds bin/probe first if it is missing.
#
# Environment (all optional):
#   PROBE    the binary to run (default bin/probe, built with -tags openblas
#            when scripts/blas-tags.sh finds OpenBLAS)
#   THREADS  the thread counts (default "1 2 63")
#   STEPS    steps per run (default 10; tokens/s is over the steps after the first)
#   DATA     the corpus (default synthetic:24MB)
#   LABEL    a first column naming the binary, for side-by-side tables
#   TORCH=0  skip the PyTorch anchor even where /usr/bin/python3 has torch
#
# OPENBLAS_CORETYPE is left as the machine sets it. The machine is shared:
# repeat a run before trusting a difference.
set -eu
cd "$(dirname "$0")/.."
PROBE=${PROBE:-bin/probe}
THREADS=${THREADS:-1 2 63}
STEPS=${STEPS:-10}
DATA=${DATA:-synthetic:24MB}
LABEL=${LABEL:-}

if [ ! -x "$PROBE" ]; then
	tags=$(sh scripts/blas-tags.sh)
	echo "building $PROBE (tags: ${tags:-none})" >&2
	go build ${tags:+-tags "$tags"} -o "$PROBE" ./cmd/probe
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/benchtable" ./scripts/benchtable

files=""
for n in $THREADS; do
	"$PROBE" train --preset seed --threads "$n" --data "$DATA" --steps "$STEPS" --json "$tmp/t$n.json" 2>"$tmp/t$n.log" ||
		{ cat "$tmp/t$n.log" >&2; exit 1; }
	files="$files $tmp/t$n.json"
done
echo "seed preset, $DATA, $STEPS steps; OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
"$tmp/benchtable" -label "$LABEL" $files

# The PyTorch anchor, side by side, where this machine has it (optional).
anchor=../shared/anchors/torch_seed_model.py
if [ "${TORCH:-1}" != 0 ] && [ -f "$anchor" ] && /usr/bin/python3 -c 'import torch' 2>/dev/null; then
	# The anchor's README: the OpenMP OpenBLAS build, unpacked (not
	# installed) under ~/obomp, keeps its threads from fighting torch's.
	omp=${TORCH_OPENBLAS_DIR:-$HOME/obomp/usr/lib/x86_64-linux-gnu/openblas-openmp}
	[ -d "$omp" ] && export LD_LIBRARY_PATH="$omp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	for n in $THREADS; do
		[ "$n" -le "$(nproc)" ] || continue
		/usr/bin/python3 "$anchor" --threads "$n" --warmup 2 --steps "$STEPS" 2>/dev/null | grep '^RESULT' ||
			echo "torch anchor at $n threads failed (skipped)"
	done
else
	echo "torch anchor: skipped (no torch in /usr/bin/python3, or TORCH=0)"
fi
