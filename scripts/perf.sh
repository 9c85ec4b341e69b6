#!/usr/bin/env bash
# The performance suite of issue 7 (docs/performance.md records the figures):
# a Release build in build-release/, then each benchmark with its baseline
# measured in the same run:
#   1. null-call round trip through vgpud vs a bare shared-memory ping-pong
#      (target <= 2x) and vs an ONC RPC null call over loopback TCP (>= 5x faster);
#   2. asynchronous launches forwarded per second (target >= 1,000,000/s);
#   3. copy bandwidth through the data area vs memcpy (>= 0.8x from 1 MiB up);
#   4. vgpud's CPU while idle with 64 VMs attached (< 1% of a core), and its
#      memory per attached VM;
#   5. the driver path (NVIDIA's runtime over vgpu's libcuda.so.1) against the
#      runtime shim: round trip, launches/s, copies (at most 10% slower);
#   6. the cuda backend against the fake driver's modeled GPU: forwarded
#      launch throughput, GPU busy with four VMs, launch+sync latency.
# Exit status: the number of benchmarks that missed their target.
set -uo pipefail
cd "$(dirname "$0")/.."
build=build-release
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null || exit 100
cmake --build "$build" -j "$(nproc)" --target rtt_bench launch_bench copy_bench idle_bench driver_bench \
  gpu_model_bench \
  >"$build/perf-build.log" 2>&1 || { echo "perf: the build failed: see $build/perf-build.log" >&2; exit 100; }
missed=0
for bench in rtt launch copy idle driver gpu_model; do
  echo "== ${bench}_bench"
  "$build/bin/${bench}_bench" "$@" || missed=$((missed + 1))
  echo
done
exit $missed
