#!/usr/bin/env bash
# Configures and builds vgpu in ./build: a Debug build with AddressSanitizer
# and UBSan, which is what the tests and the demo use. Extra arguments go to
# cmake's configure step (e.g. -DCMAKE_BUILD_TYPE=Release for production).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${VGPU_BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug "$@" >/dev/null
cmake --build "$build" -j "$(nproc)"
