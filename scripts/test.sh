#!/usr/bin/env bash
# Installs dependencies, builds, and runs every test (unit and integration).
# This is the README's test command and what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
build=${VGPU_BUILD_DIR:-build}
cd "$build"
ctest --output-on-failure -j "$(nproc)" "$@"
