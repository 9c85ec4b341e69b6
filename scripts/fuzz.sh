#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each over its
# committed seed corpus for SECONDS (default 20). A crash, leak or sanitizer
# report fails the run and leaves the input under <build>/fuzz-artifacts/.
#   scripts/fuzz.sh            short run (what the test command does)
#   scripts/fuzz.sh 3600       a long run
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
build=${VGPU_FUZZ_BUILD_DIR:-build-fuzz}
CC=clang CXX=clang++ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DVGPU_FUZZ=ON \
  -DVGPU_BUILD_CUDA_PROGRAMS=OFF >/dev/null
cmake --build "$build" --target fuzzers -j "$(nproc)" >/dev/null
mkdir -p "$build/fuzz-artifacts"
status=0
for target in fatbin ring calls ptx admin config; do
  work=$(mktemp -d)
  cp -r "tests/fuzz/corpus/$target/." "$work/"
  echo "fuzz: $target for ${seconds}s over $(ls "$work" | wc -l) seeds"
  if ! "$build/bin/fuzz_$target" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 \
      -artifact_prefix="$build/fuzz-artifacts/$target-" -print_final_stats=1 "$work" \
      >"$build/fuzz-$target.log" 2>&1; then
    echo "fuzz: $target FAILED (see $build/fuzz-$target.log):"
    grep -E 'ERROR|SUMMARY|Test unit written' "$build/fuzz-$target.log" | head -n 5
    status=1
  else
    grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' "$build/fuzz-$target.log" |
      sed "s/^/  /"
  fi
  rm -rf "$work"
done
exit $status
