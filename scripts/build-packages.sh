#!/usr/bin/env bash
# Builds vgpu's Debian packages: vgpu-host, vgpu-guest and vgpu-dkms
# (cmake/VgpuPackaging.cmake), checked with lintian.
#
#   scripts/build-packages.sh [--build-dir DIR] [--out DIR] [--reuse] [--compression xz|gzip]
#
# By default a Release build of its own (build-packages/, no tests), the
# packages in DIR/packages. --reuse packages an existing build as it is (the
# tests package their Debug build this way; packages for machines come from
# a Release build). --compression gzip is four times faster than Debian's
# xz (the tests use it). Exits 1 when a step fails or lintian reports an error or
# a warning.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-packages out= reuse= compression=xz
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --reuse) reuse=1; shift ;;
    --compression) compression=$2; shift 2 ;;
    -h | --help) awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0"; exit 0 ;;
    *) echo "build-packages: unknown argument $1" >&2; exit 2 ;;
  esac
done
out=${out:-$build/packages}
for tool in cpack dpkg-deb dpkg-shlibdeps lintian; do
  command -v "$tool" >/dev/null ||
    { echo "build-packages: $tool is missing (scripts/install-deps.sh)" >&2; exit 1; }
done

if [ -z "$reuse" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DVGPU_BUILD_TESTS=OFF \
    -DVGPU_BUILD_CUDA_PROGRAMS=OFF >/dev/null
  cmake --build "$build" -j "$(nproc)"
fi
[ -f "$build/CPackConfig.cmake" ] || { echo "build-packages: $build is not a configured build" >&2; exit 1; }

mkdir -p "$out"
rm -f "$out"/vgpu-*.deb
(cd "$build" && cpack -G DEB -B "$(realpath "$out")" -D CPACK_DEBIAN_COMPRESSION_TYPE="$compression" >"$(realpath "$out")/cpack.log" 2>&1) ||
  { cat "$out/cpack.log" >&2; echo "build-packages: cpack failed" >&2; exit 1; }
rm -rf "$out/_CPack_Packages"

# Errors and warnings fail; lintian's informational notes (I:, P:) do not.
status=0
for deb in "$out"/vgpu-*.deb; do
  report=$(lintian --fail-on error,warning "$deb" 2>&1) || status=1
  [ -n "$report" ] && printf '%s\n' "$report"
  echo "build-packages: $deb"
done
[ $status -eq 0 ] || { echo "build-packages: lintian reports errors or warnings (above)" >&2; exit 1; }
