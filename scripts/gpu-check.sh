#!/bin/sh
# gpu-check.sh: the cuda device on a real GPU (docs/phases.md, decode plan).
#
#   scripts/gpu-check.sh build   here, with Go: builds bin/probe-gpu for the
#                                GPU machine (linux/amd64, pure-Go GEMM, no
#                                OpenBLAS; cgo only for the dlopen of the
#                                driver, cuBLAS and NVML, so it links libc alone)
#   scripts/gpu-check.sh run     there, from the repository root: checks the
#                                PTX with ptxas when the toolkit has it, then
#                                runs probe decode --device cuda --decode all
#                                --check cpu at the seed's head and GPT-2
#                                small's (preset gpt2-head), writing the
#                                tables, JSON and a summary under $OUT (else
#                                ./gpu-out); where PyTorch sees the GPU, also
#                                probe exec of a PyTorch loop (NVML's view)
#   scripts/gpu-check.sh bench   there, after run: the measurements the
#                                GPU tables of docs/phases.md quote (more
#                                passes, fresh processes, pinned against
#                                staged copies, a per-token step's parts)
#   scripts/gpu-check.sh         both: build when Go is here, then run
#
# The GPU machine has the NVIDIA driver, CUDA 13 libraries and PyTorch but
# no Go: carry bin/probe-gpu there (the device tool's `carry`). The run
# half needs no network and finishes in well under 5 minutes: the three
# probe commands have limits of 80, 130 and 80 s (290 s together; a
# healthy run takes a fraction of that: the cpu check of the per-token
# modes at V 50257 is the slowest part). Exit status: 0 when every command
# and every check against the cpu device passed; otherwise the first
# failure's.
#
# Tests run the run half on internal/fakecuda (cmd/probe/gpucheck_test.go)
# with PROBE_BIN (the binary; default bin/probe-gpu), GPU_CHECK_PRESETS
# (default "seed gpt2-head") and GPU_CHECK_NOPROBS_PRESET (default
# gpt2-head) set to something a stand-in driver decodes in seconds.
set -eu
cd "$(dirname "$0")/.."
BIN=${PROBE_BIN:-bin/probe-gpu}
PRESETS=${GPU_CHECK_PRESETS:-seed gpt2-head}
NOPROBS=${GPU_CHECK_NOPROBS_PRESET:-gpt2-head}

build() {
	mkdir -p bin
	CGO_ENABLED=1 GOOS=linux GOARCH=amd64 go build -trimpath -buildvcs=auto -o "$BIN" ./cmd/probe
	echo "built $BIN ($(du -h "$BIN" | cut -f1)); needs:" >&2
	if command -v ldd >/dev/null 2>&1; then ldd "$BIN" | sed 's/^/  /' >&2 || true; fi
	if command -v objdump >/dev/null 2>&1; then
		echo "  newest glibc symbol version: $(objdump -T "$BIN" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)" >&2
	fi
}

# find_cublas sets MEMPROBE_LIBCUBLAS to a cuBLAS the loader can open when
# the default names are not on its path (a toolkit in /usr/local/cuda, or
# the one a PyTorch wheel carries), and puts its directory on
# LD_LIBRARY_PATH for its own dependency, cuBLASLt.
find_cublas() {
	[ -n "${MEMPROBE_LIBCUBLAS:-}" ] && return 0
	if ldconfig -p 2>/dev/null | grep -q 'libcublas\.so\.1[1-3] '; then return 0; fi
	for f in $(find /usr/local/cuda*/lib64 /usr/local/cuda*/targets/*/lib /usr/lib/x86_64-linux-gnu \
		/usr/local/lib/python3*/dist-packages /usr/local/lib/python3*/site-packages \
		/usr/lib/python3/dist-packages /opt /root/.local -name 'libcublas.so.1[1-3]' 2>/dev/null | sort -r); do
		MEMPROBE_LIBCUBLAS=$f
		LD_LIBRARY_PATH=$(dirname "$f")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
		export MEMPROBE_LIBCUBLAS LD_LIBRARY_PATH
		return 0
	done
	return 0
}

run() {
	OUT=${OUT:-./gpu-out}
	mkdir -p "$OUT"
	[ -x "$BIN" ] || { echo "gpu-check: $BIN is missing: run scripts/gpu-check.sh build where Go is, and carry it here" >&2; exit 2; }
	started=$(date +%s)
	S=$OUT/summary.txt
	: >"$S"
	say() { echo "$*" | tee -a "$S"; }
	say "== gpu-check $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n)"
	if command -v nvidia-smi >/dev/null 2>&1; then
		nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv 2>&1 | tee -a "$S"
	else
		say "nvidia-smi: not found"
	fi
	find_cublas
	say "MEMPROBE_LIBCUBLAS=${MEMPROBE_LIBCUBLAS:-(default names)}"
	PTXAS=$(command -v ptxas || ls /usr/local/cuda*/bin/ptxas 2>/dev/null | head -1 || true)
	if [ -n "$PTXAS" ]; then
		say "ptxas ($PTXAS) on trainer/device/kernels/softmax_sample.ptx for sm_90:"
		if "$PTXAS" -arch=sm_90 -v trainer/device/kernels/softmax_sample.ptx -o "$OUT/softmax_sample.sm_90.cubin" >>"$S" 2>&1; then
			say "  ptxas: ok"
		else
			say "  ptxas: FAILED (see above)"
		fi
	else
		say "ptxas: not found (the driver JIT-compiles the PTX at load time anyway)"
	fi
	status=0
	for preset in $PRESETS; do
		limit=80
		[ "$preset" = gpt2-head ] && limit=130
		say "== probe decode --device cuda --decode all --preset $preset --check cpu"
		if timeout "$limit" "$BIN" decode --device cuda --decode all --preset "$preset" --check cpu --passes 3 \
			--json "$OUT/decode-$preset.json" --format markdown >"$OUT/decode-$preset.md" 2>"$OUT/decode-$preset.err"; then
			say "  ok"
		else
			rc=$?
			say "  FAILED: exit $rc"
			[ "$status" = 0 ] && status=$rc
		fi
		cat "$OUT/decode-$preset.err" "$OUT/decode-$preset.md" | tee -a "$S"
	done
	# Without the probabilities (tokens and losses only): the copy back
	# shrinks from V floats per position to two.
	say "== probe decode --device cuda --decode all --preset $NOPROBS --probs=false"
	if timeout 80 "$BIN" decode --device cuda --decode all --preset "$NOPROBS" --probs=false --passes 3 \
		--json "$OUT/decode-$NOPROBS-noprobs.json" --format markdown >"$OUT/decode-$NOPROBS-noprobs.md" 2>"$OUT/decode-$NOPROBS-noprobs.err"; then
		say "  ok"
	else
		rc=$?
		say "  FAILED: exit $rc"
		[ "$status" = 0 ] && status=$rc
	fi
	cat "$OUT/decode-$NOPROBS-noprobs.err" "$OUT/decode-$NOPROBS-noprobs.md" | tee -a "$S"
	# The outside view of a GPU program (probe exec's NVML section): a
	# PyTorch loop that syncs the host on every step, where PyTorch and a
	# GPU are. Informational: it does not change the exit status.
	# It runs only in what is left of the 5 minutes.
	left=$((280 - $(date +%s) + started))
	if [ "$left" -ge 40 ] && timeout 20 python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
		say "== probe exec -- python3 (a PyTorch step loop with a host sync per step)"
		timeout $((left - 20)) "$BIN" exec --json "$OUT/exec-torch.json" -- python3 -c '
import time, torch
x = torch.randn(2048, 2048, device="cuda")
t = time.time()
while time.time() - t < 4:
    y = x @ x
    y.sum().item()
' >"$OUT/exec-torch.txt" 2>&1 || say "  probe exec: exit $?"
		grep -A3 "GPU (NVML)" "$OUT/exec-torch.txt" | tee -a "$S" || true
		grep "^- .*GPU" "$OUT/exec-torch.txt" | tee -a "$S" || true
	fi
	say "== gpu-check: exit $status"
	exit "$status"
}

# bench measures what docs/phases.md's GPU tables quote, after run: the
# four modes with more passes in 3 fresh processes each (--runs 3) at
# the seed's head and at GPT-2 small's without probabilities; the
# probabilities' copy back through pinned staging against page-locked
# buffers the decoder owns (--pinned-host), interleaved, two rounds; and
# where a per-token step's device time goes at V 50257, by shrinking C
# (the product's share) to 96. Writes bench-*.json and bench.txt under
# $OUT; about 3 minutes on an H100. Exit status: the first failure's.
# GPU_CHECK_BENCH_SMALL, _BIG and _DIMS (default seed, gpt2-head, "96
# 768") let a test run it on the stand-in driver at a tiny shape.
bench() {
	OUT=${OUT:-./gpu-out}
	mkdir -p "$OUT"
	[ -x "$BIN" ] || { echo "gpu-check: $BIN is missing" >&2; exit 2; }
	find_cublas
	B=$OUT/bench.txt
	: >"$B"
	SMALL=${GPU_CHECK_BENCH_SMALL:-seed}
	BIG=${GPU_CHECK_BENCH_BIG:-gpt2-head}
	DIMS=${GPU_CHECK_BENCH_DIMS:-96 768}
	status=0
	one() { # one NAME ARGS...: a probe decode on cuda, its tables to bench.txt
		name=$1
		shift
		echo "== bench $name: probe decode --device cuda $*" | tee -a "$B"
		if timeout 120 "$BIN" decode --device cuda --format markdown --json "$OUT/bench-$name.json" "$@" >>"$B" 2>&1; then
			:
		else
			rc=$?
			echo "  FAILED: exit $rc" | tee -a "$B"
			[ "$status" = 0 ] && status=$rc
		fi
	}
	one small-runs --preset "$SMALL" --decode all --passes 10 --runs 3
	one big-noprobs-runs --preset "$BIG" --decode all --passes 10 --runs 3 --probs=false
	for round in 1 2; do
		for pinned in false true; do
			one "big-pinned-$pinned-$round" --preset "$BIG" --decode all --passes 10 --pinned-host=$pinned
		done
	done
	for dim in $DIMS; do
		for mode in per-token-prealloc batch; do
			one "big-dim$dim-$mode" --preset "$BIG" --dim "$dim" --decode $mode --passes 10 --probs=false
		done
	done
	echo "== bench: exit $status" | tee -a "$B"
	return "$status"
}

case "${1:-}" in
build) build ;;
run) run ;;
bench) bench ;;
"")
	if command -v go >/dev/null 2>&1; then build; fi
	run
	;;
*)
	echo "usage: scripts/gpu-check.sh [build|run|bench]" >&2
	exit 2
	;;
esac
