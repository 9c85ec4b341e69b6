#!/usr/bin/env bash
# Builds the scheduler and policy modules and their tests alone
# (-DVGPU_CORE_ONLY=ON), in build-core: they must build where there is no
# CUDA Toolkit, libvirt or nvcc. The CUDA Toolkit is hidden from CMake here
# (a wrong CUDAToolkit_ROOT, no nvcc on PATH), so a dependency on it that
# creeps in fails this. Extra arguments go to ctest (e.g. -R policy); with
# --no-tests it only builds.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${VGPU_CORE_BUILD_DIR:-build-core}
run_tests=1
if [[ "${1:-}" == "--no-tests" ]]; then run_tests=0; shift; fi
PATH=$(echo "$PATH" | tr ':' '\n' | grep -v cuda | paste -sd:) \
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DVGPU_CORE_ONLY=ON \
  -DCUDAToolkit_ROOT=/nonexistent -DCMAKE_CUDA_COMPILER=/nonexistent/nvcc >/dev/null
cmake --build "$build" -j "${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" >/dev/null
echo "core-build: protocol, scheduler and policy and their tests build without CUDA or libvirt"
if (( run_tests )); then ctest --test-dir "$build" --output-on-failure "$@"; fi
