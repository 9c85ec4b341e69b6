#!/usr/bin/env bash
# vgpu's libcudart.so.13 must export every symbol the toolkit's runtime does,
# under the same SONAME and version node, and the committed export list must
# match the installed toolkit (regenerate it with scripts/gen-cudart-exports.sh).
set -euo pipefail
ours=$1
list=$2
cuda=${CUDA_HOME:-/usr/local/cuda}
toolkit=$(ls "$cuda"/lib64/libcudart.so.13* | head -n 1)
fail=0

names() { nm -D --defined-only "$1" | awk '$2 ~ /^[TW]$/ {print $3}' | sed 's/@.*//' | sort -u; }

soname=$(readelf -d "$ours" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libcudart.so.13" ] || { echo "FAIL: SONAME is '$soname'"; fail=1; }

missing=$(comm -13 <(names "$ours") <(grep -v '^#' "$list" | sort -u))
[ -z "$missing" ] || { echo "FAIL: not exported:"; echo "$missing" | head -20; fail=1; }

stale=$(comm -3 <(names "$toolkit") <(grep -v '^#' "$list" | sort -u))
[ -z "$stale" ] || { echo "FAIL: cudart_exports.txt differs from $toolkit:"; echo "$stale" | head -20; fail=1; }

unversioned=$(objdump -T "$ours" | awk '/ DF .text/ && $0 !~ /libcudart\.so\.13/' | head -5)
[ -z "$unversioned" ] || { echo "FAIL: exports without the libcudart.so.13 version:"; echo "$unversioned"; fail=1; }

leaked=$(names "$ours" | grep -v -E '^(cuda|__cuda)' | head -5 || true)
[ -z "$leaked" ] || { echo "FAIL: vgpu internals exported:"; echo "$leaked"; fail=1; }

[ $fail -eq 0 ] && echo "PASS: $(names "$ours" | wc -l) exports, SONAME and version node match the toolkit"
exit $fail
