#!/bin/sh
# Prints the build tags for the fastest GEMM backend this machine can link:
# "openblas" when the OpenBLAS headers and library are installed (Debian:
# libopenblas-dev), nothing otherwise (the build then falls back to gonum).
# It compiles and links a one-line C program, so it answers for the compiler
# cgo will use, not for a guess at file paths.
set -eu
CC=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '#include <cblas.h>\nint main(void){ return (int)cblas_sdot(0, 0, 1, 0, 1); }\n' >"$tmp/t.c"
if [ "${CGO_ENABLED:-1}" != 0 ] && $CC "$tmp/t.c" -o "$tmp/t" -lopenblas >/dev/null 2>&1; then
	echo openblas
fi
