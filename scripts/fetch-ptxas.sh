#!/bin/sh
# fetch-ptxas.sh DIR: puts NVIDIA's PTX assembler at DIR/ptxas and prints
# its path, for trainer/device/kernels' TestPTXAssembles (which reads
# $MEMPROBE_PTXAS). No GPU, driver or CUDA install is needed or made: ptxas
# is one program linked only against libc, and Debian ships it in
# nvidia-cuda-toolkit (non-free, CUDA 11.8 in bookworm). The package is
# downloaded, not installed, with a private apt source list and state
# directory, so the machine's apt configuration is left as it was; only
# ptxas is kept (the .deb is 84 MB, fetched once per DIR).
#
# CUDA 11.8's ptxas assembles PTX ISA up to 7.8 for sm_35 to sm_90 (H100,
# H200): enough for the kernels' ISA 6.3 / sm_75 module and for the GPUs
# this project is lent.
set -eu
dir=${1:?usage: fetch-ptxas.sh DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
if [ -x "$dir/ptxas" ]; then
	echo "$dir/ptxas"
	exit 0
fi
command -v apt-get >/dev/null 2>&1 || { echo "fetch-ptxas: no apt-get on this machine" >&2; exit 1; }
command -v dpkg-deb >/dev/null 2>&1 || { echo "fetch-ptxas: no dpkg-deb on this machine" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/deb" "$work/x"
suite=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-bookworm}")
echo "deb http://deb.debian.org/debian ${suite:-bookworm} non-free" >"$work/sources.list"
set -- -qq -o Dir::Etc::SourceList="$work/sources.list" -o Dir::Etc::SourceParts=/nonexistent \
	-o Dir::State::Lists="$work/lists" -o Dir::Cache="$work/cache" \
	-o APT::Sandbox::User="$(id -un)"
apt-get "$@" update >&2
(cd "$work/deb" && apt-get "$@" download nvidia-cuda-toolkit >&2)
dpkg-deb -x "$work"/deb/nvidia-cuda-toolkit_*.deb "$work/x"
[ -x "$work/x/usr/bin/ptxas" ] || { echo "fetch-ptxas: nvidia-cuda-toolkit has no usr/bin/ptxas" >&2; exit 1; }
cp "$work/x/usr/bin/ptxas" "$dir/ptxas.tmp"
mv "$dir/ptxas.tmp" "$dir/ptxas"
"$dir/ptxas" --version >&2
echo "$dir/ptxas"
