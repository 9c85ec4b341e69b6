#!/usr/bin/env bash
# Builds the libraries whose locking is annotated (cmake/VgpuThreadSafety.cmake)
# with clang's thread-safety analysis, warnings as errors: touching what a
# mutex guards without it, or calling a function that REQUIRES a lock without
# holding it, fails. Only those libraries (and what they link), in build-tsa,
# without sanitizers: cheap enough to run before the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${VGPU_TSA_BUILD_DIR:-build-tsa}
CC=clang CXX=clang++ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DVGPU_SANITIZE=OFF \
  -DVGPU_THREAD_SAFETY=ON -DVGPU_BUILD_TESTS=OFF -DVGPU_BUILD_CUDA_PROGRAMS=OFF >/dev/null
log="$build/thread-safety.log"
if ! cmake --build "$build" --target thread-safety -j "${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
    >"$log" 2>&1; then
  grep -v '^\[' "$log" >&2 || true
  echo "thread-safety: FAILED (the full output is in $log)" >&2
  exit 1
fi
echo "thread-safety: the annotated libraries build clean under -Wthread-safety"
