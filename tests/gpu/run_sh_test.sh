#!/usr/bin/env bash
# The CPU parts of tests/gpu/run.sh, on a machine without a GPU (CI): options,
# a clear "no GPU" (exit 3, quickly, with a results file) instead of a hang,
# and --build-only over an existing build. Usage: run_sh_test.sh RUN_SH BUILD_DIR
set -u
RUN=$1
BUILD=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failed=0
expect() {  # expect NAME STATUS PATTERN -- COMMAND...
  local name=$1 want=$2 pattern=$3
  shift 4
  local start=$SECONDS out rc
  out=$("$@" 2>&1)
  rc=$?
  if [[ $rc -ne $want ]] || ! grep -q -- "$pattern" <<< "$out"; then
    echo "FAIL $name: exit $rc (want $want), output:"
    echo "$out" | tail -n 20
    failed=1
  else
    echo "ok   $name ($((SECONDS - start)) s)"
  fi
}

expect "--help" 0 "usage: tests/gpu/run.sh" -- "$RUN" --help
expect "an unknown option" 2 "unknown option '--bogus'" -- "$RUN" --bogus
expect "--build-dir without a value" 2 "usage:" -- "$RUN" --build-dir

mkdir -p "$TMP/bin"
printf '#!/bin/sh\nexit 9\n' > "$TMP/bin/nvidia-smi-broken"
chmod +x "$TMP/bin/"*

expect "no device nodes" 3 "no GPU: no NVIDIA device nodes" -- \
  env OUT="$TMP/out1" VGPU_GPU_DEVICE_NODES="/nonexistent/nvidia[0-9]*" VGPU_NVIDIA_SMI= \
  "$RUN" --no-build --build-dir "$BUILD"
grep -q "no GPU" "$TMP/out1/gpu-results.md" || { echo "FAIL no results file saying no GPU"; failed=1; }
[[ -s $TMP/out1/gpu-run.log ]] || { echo "FAIL no log"; failed=1; }

expect "no nvidia-smi" 3 "no GPU: no nvidia-smi" -- \
  env OUT="$TMP/out2" VGPU_GPU_DEVICE_NODES=/dev/null VGPU_NVIDIA_SMI= \
  "$RUN" --no-build --build-dir "$BUILD"
expect "nvidia-smi fails" 3 "no GPU: nvidia-smi lists no GPU" -- \
  env OUT="$TMP/out3" VGPU_GPU_DEVICE_NODES=/dev/null VGPU_NVIDIA_SMI="$TMP/bin/nvidia-smi-broken" \
  "$RUN" --no-build --build-dir "$BUILD"

# What is built already is enough for --build-only --no-build.
expect "--build-only over a build" 0 "built; --build-only" -- \
  env OUT="$TMP/out4" "$RUN" --no-build --build-only --build-dir "$BUILD"
expect "--no-build over nothing" 2 "missing" -- \
  env OUT="$TMP/out5" "$RUN" --no-build --build-only --build-dir "$TMP/empty"

exit $failed
