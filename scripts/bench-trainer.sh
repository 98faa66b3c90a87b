#!/bin/sh
# Benchmarks the trainer on the seed preset at 1, 2 and 63 threads and
# prints one table: GEMM backend, threads, tokens/s, GFLOPS, peak RSS, the
# analytical floor, allocations per step. In the same run, where it can, it
# measures the machine's sgemm ceiling (BenchmarkSgemmParallel/openblas:
# one 512³ and one 1024³ product per core at once, -cpu = the largest
# thread count up to nproc) and runs the PyTorch anchor
# (../shared/anchors/torch_seed_model.py) at the same thread counts, and
# ends with a summary: median tokens/s and GFLOPS per backend and thread
# count, PyTorch's tokens/s and the ratio, and the step's GFLOPS as a share
# of the ceiling. Builds bin/probe first if it is missing.
#
# Environment (all optional):
#   PROBE    the binary to run (default bin/probe, built with -tags openblas
#            when scripts/blas-tags.sh finds OpenBLAS)
#   THREADS  the thread counts (default "1 2 63")
#   GEMMS    the --gemm backends to compare (default "auto"; for example
#            "avx512 avx2 openblas")
#   REPS     repetitions (default 1); the configurations, and the anchor,
#            are interleaved within each repetition, and the summary takes
#            medians over them
#   STEPS    steps per run (default 10; tokens/s is over the steps after the first)
#   DATA     the corpus (default synthetic:24MB)
#   LABEL    a first column naming the binary, for side-by-side tables
#   TORCH=0  skip the PyTorch anchor even where /usr/bin/python3 has torch
#   CEILING=0 skip the sgemm ceiling
#
# OPENBLAS_CORETYPE is left as the machine sets it. The machine is shared:
# repeat a run (REPS) before trusting a difference.
set -eu
cd "$(dirname "$0")/.."
PROBE=${PROBE:-bin/probe}
THREADS=${THREADS:-1 2 63}
GEMMS=${GEMMS:-auto}
REPS=${REPS:-1}
STEPS=${STEPS:-10}
DATA=${DATA:-synthetic:24MB}
LABEL=${LABEL:-}

tags=$(sh scripts/blas-tags.sh)
if [ ! -x "$PROBE" ]; then
	echo "building $PROBE (tags: ${tags:-none})" >&2
	go build ${tags:+-tags "$tags"} -o "$PROBE" ./cmd/probe
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/benchtable" ./scripts/benchtable

# The PyTorch anchor, side by side, where this machine has it (optional:
# nothing here depends on it).
anchor=../shared/anchors/torch_seed_model.py
torch=0
if [ "${TORCH:-1}" != 0 ] && [ -f "$anchor" ] && /usr/bin/python3 -c 'import torch' 2>/dev/null; then
	torch=1
fi
runtorch() { # threads: one anchor run, its RESULT line appended to $tmp/torch.txt
	# The anchor's README: the OpenMP OpenBLAS build, unpacked (not
	# installed) under ~/obomp, keeps its threads from fighting torch's.
	omp=${TORCH_OPENBLAS_DIR:-$HOME/obomp/usr/lib/x86_64-linux-gnu/openblas-openmp}
	lp=${LD_LIBRARY_PATH:-}
	[ -d "$omp" ] && lp="$omp${lp:+:$lp}"
	LD_LIBRARY_PATH="$lp" /usr/bin/python3 "$anchor" --threads "$1" --warmup 2 --steps "$STEPS" 2>/dev/null | grep '^RESULT' >>"$tmp/torch.txt" ||
		echo "torch anchor at $1 threads failed (skipped)"
}

# The sgemm ceiling: OpenBLAS, single-threaded per call as the trainer
# calls it, one product per core at once.
ceiling=""
if [ "${CEILING:-1}" != 0 ] && [ "$tags" = openblas ]; then
	cpus=1
	for n in $THREADS; do [ "$n" -le "$(nproc)" ] && [ "$n" -gt "$cpus" ] && cpus=$n; done
	go test -c -tags openblas -o "$tmp/gemm.test" ./trainer/gemm
	"$tmp/gemm.test" -test.run '^$' -test.bench 'BenchmarkSgemmParallel/openblas/' -test.benchtime 1s -test.count 3 -test.cpu "$cpus" >"$tmp/ceiling.txt"
	grep '^Benchmark' "$tmp/ceiling.txt"
	ceiling=$(awk '/^Benchmark/ { for (i = 3; i < NF; i++) if ($(i+1) == "GFLOPS" && $i > max) max = $i } END { print max }' "$tmp/ceiling.txt")
	echo "sgemm ceiling at $cpus threads (the best of 3 runs each of 512³ and 1024³): $ceiling GFLOPS"
else
	echo "sgemm ceiling: skipped (no OpenBLAS build, or CEILING=0)"
fi

files=""
for r in $(seq "$REPS"); do
	for n in $THREADS; do
		for g in $GEMMS; do
			out="$tmp/t$n-$g-$r.json"
			"$PROBE" train --preset seed --threads "$n" --gemm "$g" --data "$DATA" --steps "$STEPS" --json "$out" 2>"$tmp/log" ||
				{ cat "$tmp/log" >&2; exit 1; }
			files="$files $out"
		done
		if [ "$torch" = 1 ] && [ "$n" -le "$(nproc)" ]; then
			runtorch "$n"
		fi
	done
done
echo "seed preset, $DATA, $STEPS steps, $REPS repetition(s); OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores"
"$tmp/benchtable" -label "$LABEL" $files

if [ "$torch" = 1 ]; then
	cat "$tmp/torch.txt"
else
	echo "torch anchor: skipped (no torch in /usr/bin/python3, or TORCH=0)"
fi

# The summary: medians per backend and thread count, against the anchor and
# the ceiling.
"$tmp/benchtable" -format csv $files | awk -F, -v ceiling="$ceiling" -v torchfile="$tmp/torch.txt" '
function median(list,   a, n, i, j, t) {
	n = split(list, a, " ")
	for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
	return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
}
BEGIN {
	while ((getline line < torchfile) > 0) {
		split(line, f, " "); th = ""; tps = ""
		for (i in f) { split(f[i], kv, "="); if (kv[1] == "threads") th = kv[2]; if (kv[1] == "tokens_per_s") tps = kv[2] }
		if (th != "") torch[th] = torch[th] " " tps
	}
}
NR > 1 { key = $1 " " $2; if (!(key in tok)) order[++nk] = key; tok[key] = tok[key] " " $4; gf[key] = gf[key] " " $5 }
END {
	printf "%-10s %7s %10s %8s %12s %10s %14s\n", "gemm", "threads", "tokens/s", "GFLOPS", "torch tok/s", "vs torch", "% of ceiling"
	for (i = 1; i <= nk; i++) {
		split(order[i], k, " ")
		t = median(tok[order[i]]); g = median(gf[order[i]])
		tt = (k[2] in torch) ? median(torch[k[2]]) : ""
		printf "%-10s %7s %10.0f %8.1f %12s %10s %14s\n", k[1], k[2], t, g, tt == "" ? "-" : sprintf("%.0f", tt),
			tt == "" ? "-" : sprintf("%.2fx", t / tt), ceiling == "" ? "-" : sprintf("%.0f %%", 100 * g / ceiling)
	}
}'
