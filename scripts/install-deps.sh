#!/bin/sh
# Installs what the build and tests need beyond Go: OpenBLAS (the fast GEMM
# backend, linked through cgo) and time (/usr/bin/time) from Debian's
# packages. It does nothing when
# the library is already there, and only warns when it cannot install (not
# root, no apt-get): the build then uses the pure-Go gonum backend.
set -eu
here=$(dirname "$0")
# /usr/bin/time (Debian's time): outside checks probe exec's CPU
# time, faults and context switches against time -v (skipped without it).
if [ ! -x /usr/bin/time ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "installing time (/usr/bin/time -v, the reference of probe exec's counters)..." >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -qq time >/dev/null 2>&1 ||
		{ apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq time >/dev/null 2>&1; } ||
		echo "warning: installing time failed; outside's check against /usr/bin/time -v skips" >&2
fi
if [ -n "$("$here/blas-tags.sh")" ]; then
	exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "installing libopenblas-dev (the fast GEMM backend)..." >&2
	export DEBIAN_FRONTEND=noninteractive
	if ! apt-get install -y -qq libopenblas-dev >/dev/null 2>&1; then
		if ! { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq libopenblas-dev >/dev/null 2>&1; }; then
			echo "warning: installing libopenblas-dev failed; building with the pure-Go GEMM fallback (slower)" >&2
		fi
	fi
else
	echo "warning: libopenblas-dev is not installed and cannot be installed here; building with the gonum GEMM backend (slower)" >&2
fi
