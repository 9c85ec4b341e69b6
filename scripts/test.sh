#!/usr/bin/env bash
# Installs dependencies, checks the lock annotations (scripts/thread-safety.sh:
# a clang build of the annotated libraries, about a minute, so that a
# violation fails early), builds the scheduler and policy modules alone
# without the CUDA Toolkit or libvirt and runs their tests
# (scripts/core-build.sh, a few minutes), builds everything, and runs every
# test (unit and integration), then a short run of every fuzzer. This is the
# README's test command and what CI runs. VGPU_FUZZ_SECONDS sets the fuzzers'
# time each (default 20).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/thread-safety.sh
./scripts/core-build.sh
./scripts/build.sh
build=${VGPU_BUILD_DIR:-build}
(cd "$build" && ctest --output-on-failure -j "$(nproc)" "$@")
./scripts/fuzz.sh "${VGPU_FUZZ_SECONDS:-20}"
