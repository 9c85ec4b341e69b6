#!/usr/bin/env bash
# tests/gpu/run.sh: vgpu on a real GPU, in one go (about 5 minutes on an H200).
#
#   1. preflight  the CUDA toolkit, and a GPU with its driver (else: "no GPU", exit 3)
#   2. build      a Release build of vgpu (vgpud, vgpu-run, the cuda worker, the
#                 intercept library, the CUDA test programs, the integration
#                 tests) and tests/gpu/bench.cu
#   3. integration  every integration test, with vgpud --backend cuda
#   4. checks     what only a GPU can show: a faulting kernel and a kernel
#                 that never ends each cost their own context (cudaErrorIllegalAddress,
#                 cudaErrorLaunchTimeout from the watchdog), recover after
#                 cudaDeviceReset, and a tenant running alongside never notices
#   5. bench      the same benchmark natively and forwarded from a simulated VM,
#                 side by side with ratios: launch + synchronize, launches/s,
#                 H2D/D2H bandwidth (pageable and pinned, 4 KiB .. 256 MiB), a
#                 compute-bound kernel, cudaMemGetInfo; then two tenants at once
#                 for the fairness run, measured in GPU time (vgpud's ledger)
#
# Writes gpu-run.log and gpu-results.md to $OUT (or <build dir>/gpu-results).
# Needs no network. Exit status: 0 all passed, 1 something failed, 2 usage or
# build error, 3 no GPU here.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${VGPU_GPU_BUILD:-$ROOT/build-gpu}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
DEVICE_NODES=${VGPU_GPU_DEVICE_NODES:-/dev/nvidia[0-9]*}   # tests point these elsewhere
NVIDIA_SMI=${VGPU_NVIDIA_SMI-$(command -v nvidia-smi || true)}
BUDGET_S=${VGPU_GPU_BUDGET_S:-470}   # everything, build included, must end within 8 minutes

do_build=1 build_only=0 do_integration=1 do_checks=1 do_bench=1 quick=0

usage() {
  cat <<'EOF'
usage: tests/gpu/run.sh [options]
  --build-dir DIR      build here (default: build-gpu in the repository; or $VGPU_GPU_BUILD)
  --no-build           use what is already built in the build directory
  --build-only         build, then stop (no GPU needed)
  --quick              shorter benchmark and fairness runs
  --skip-integration   --skip-checks   --skip-bench
  -h, --help           this text
Results: $OUT/gpu-results.md and $OUT/gpu-run.log (default OUT: <build dir>/gpu-results).
Exit status: 0 passed, 1 failed, 2 usage or build error, 3 no GPU.
EOF
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) [[ $# -ge 2 ]] || { usage >&2; exit 2; }; BUILD=$2; shift ;;
    --build-dir=*) BUILD=${1#*=} ;;
    --no-build) do_build=0 ;;
    --build-only) build_only=1 ;;
    --quick) quick=1 ;;
    --skip-integration) do_integration=0 ;;
    --skip-checks) do_checks=0 ;;
    --skip-bench) do_bench=0 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

OUT_DIR=${OUT:-$BUILD/gpu-results}
mkdir -p "$OUT_DIR" || { echo "run.sh: cannot create $OUT_DIR" >&2; exit 2; }
LOG=$OUT_DIR/gpu-run.log
RESULTS=$OUT_DIR/gpu-results.md
: > "$LOG"
exec > >(tee -a "$LOG") 2>&1

START=$SECONDS
failures=()
note() { printf '%s\n' "$*" >> "$RESULTS"; }
say() { printf '[run.sh %3ds] %s\n' $((SECONDS - START)) "$*"; }
fail() { say "FAILED: $*"; failures+=("$*"); }
left() { local l=$((BUDGET_S - (SECONDS - START) - ${1:-0})); echo $((l > 5 ? l : 5)); }
finish() {
  local status=$1
  note ""
  if [[ $status -eq 0 ]]; then note "**Result: all passed** ($((SECONDS - START)) s)"
  else
    note "**Result: failed** ($((SECONDS - START)) s)"
    for f in "${failures[@]}"; do note "- $f"; done
  fi
  say "results: $RESULTS, log: $LOG"
  exit "$status"
}

{
  echo "# vgpu on a GPU: tests/gpu/run.sh"
  echo
  echo "- started: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), host $(hostname)"
  echo "- commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet 2>/dev/null || echo ' (with local changes)')"
} > "$RESULTS"

# --- 1. preflight ------------------------------------------------------------------
say "preflight"
if [[ ! -x $CUDA_HOME/bin/nvcc ]]; then
  note "- no CUDA toolkit at $CUDA_HOME"
  say "no CUDA toolkit at $CUDA_HOME (set CUDA_HOME)"
  exit 2
fi
note "- toolkit: $("$CUDA_HOME/bin/nvcc" --version | tail -n 2 | head -n 1)"
if [[ $build_only -eq 0 ]]; then
  why=""
  # shellcheck disable=SC2206
  nodes=($DEVICE_NODES)
  if [[ ! -e ${nodes[0]:-/nonexistent} ]]; then
    why="no NVIDIA device nodes ($DEVICE_NODES)"
  elif [[ -z $NVIDIA_SMI ]]; then
    why="no nvidia-smi: the NVIDIA driver is not installed"
  elif ! gpus=$(timeout 30 "$NVIDIA_SMI" -L 2>&1) || [[ -z $gpus ]]; then
    why="nvidia-smi lists no GPU: ${gpus:-timed out}"
  fi
  if [[ -n $why ]]; then
    note "- **no GPU**: $why"
    say "no GPU: $why"
    exit 3
  fi
  note "- GPU: $(echo "$gpus" | head -n 1)"
  note "- driver: $(timeout 30 "$NVIDIA_SMI" --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
fi

# --- 2. build ----------------------------------------------------------------------
BENCH=$BUILD/gpu/bench
if [[ $do_build -eq 1 ]]; then
  say "build: $BUILD (Release, $JOBS jobs)"
  if ! timeout "$(left)" cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >> "$LOG.build" 2>&1; then
    tail -n 30 "$LOG.build"; note "- build: cmake configure failed"; say "cmake configure failed"; exit 2
  fi
  targets=(vgpud vgpu-run vgpu-cuda-worker vgpu-sim-worker vgpu_cuda vgpu_nvml vgpu_cudart
           vgpu_cuda_programs vgpu_test_kernels)
  # Every integration test's executable.
  while read -r exe; do targets+=("$(basename "$exe")"); done < <(
    ctest --test-dir "$BUILD" -N -V -L integration 2>/dev/null |
      sed -n 's/.*Test command: \([^ ]*\).*/\1/p' | sort -u)
  if ! timeout "$(left)" cmake --build "$BUILD" -j "$JOBS" --target "${targets[@]}" >> "$LOG.build" 2>&1; then
    tail -n 40 "$LOG.build"; note "- build: failed (see gpu-run.log.build)"; say "build failed"; exit 2
  fi
  mkdir -p "$BUILD/gpu"
  # For the generations labs have (Turing to Hopper) and Hopper's PTX, as the
  # test programs (CMakeLists.txt).
  archs=(-gencode arch=compute_75,code=sm_75 -gencode arch=compute_80,code=sm_80
         -gencode arch=compute_86,code=sm_86 -gencode arch=compute_89,code=sm_89
         -gencode "arch=compute_90,code=[sm_90,compute_90]")
  if ! timeout "$(left)" "$CUDA_HOME/bin/nvcc" -cudart shared -O2 "${archs[@]}" -std=c++17 \
      -o "$BENCH" "$ROOT/tests/gpu/bench.cu" >> "$LOG.build" 2>&1; then
    tail -n 20 "$LOG.build"; note "- build: bench.cu failed"; say "bench.cu failed to build"; exit 2
  fi
  note "- build: Release, $((SECONDS - START)) s after the start"
fi
for f in "$BUILD/bin/vgpud" "$BUILD/bin/vgpu-run" "$BUILD/bin/vgpu-cuda-worker" "$BENCH"; do
  [[ -x $f ]] || { say "missing $f (build first)"; note "- missing $f"; exit 2; }
done
if [[ $build_only -eq 1 ]]; then
  say "built; --build-only: stopping here"
  finish 0
fi

# --- helpers: a daemon and programs run as simulated VMs -----------------------------
DAEMON_PID=""
RT=""
start_vgpud() {  # start_vgpud NAME [ENV=VALUE...]
  RT=$(mktemp -d "/tmp/vgpu-gpu-$1-XXXXXX")
  shift
  # A 1 GiB data area: bench.cu's 256 MiB pinned buffer lives in it.
  env "$@" "$BUILD/bin/vgpud" --backend cuda --runtime-dir "$RT" --db "$RT/vgpu.db" \
    --data-area-mib 1024 --libvirt none > "$RT/vgpud.log" 2>&1 &
  DAEMON_PID=$!
  for _ in $(seq 1 300); do
    [[ -S $RT/vgpud.sock ]] && return 0
    kill -0 "$DAEMON_PID" 2>/dev/null || break
    sleep 0.1
  done
  cat "$RT/vgpud.log"
  return 1
}
stop_vgpud() {
  [[ -n $DAEMON_PID ]] || return 0
  kill -TERM "$DAEMON_PID" 2>/dev/null
  for _ in $(seq 1 150); do kill -0 "$DAEMON_PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$DAEMON_PID" 2>/dev/null
  wait "$DAEMON_PID" 2>/dev/null
  DAEMON_PID=""
  cp "$RT/vgpud.log" "$OUT_DIR/vgpud-$(basename "$RT").log" 2>/dev/null
}
trap 'stop_vgpud' EXIT
vm() {  # vm NAME TIMEOUT PROGRAM [ARGS...]: runs as simulated VM NAME
  local name=$1 limit=$2
  shift 2
  timeout "$limit" "$BUILD/bin/vgpu-run" --runtime-dir "$RT" --vm "$name" -- "$@"
}
native() {  # native TIMEOUT PROGRAM [ARGS...]: the real CUDA runtime
  local limit=$1
  shift
  LD_LIBRARY_PATH=$CUDA_HOME/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} timeout "$limit" "$@"
}
value() { sed -n "s/^RESULT $1 //p" "$2" | tail -n 1; }

# --- 3. integration tests -------------------------------------------------------------
if [[ $do_integration -eq 1 ]]; then
  say "integration tests with --backend cuda"
  note ""
  note "## Integration tests (vgpud --backend cuda)"
  note ""
  ilog=$OUT_DIR/integration.log
  # Whatever they take, the checks and the benchmark keep 150 s.
  VGPU_TEST_BACKEND=cuda timeout "$(left 150)" ctest --test-dir "$BUILD" -L integration \
    --output-on-failure --timeout 300 > "$ilog" 2>&1
  rc=$?
  grep -E "tests passed|Test +#|\*\*\*" "$ilog" | sed 's/^/    /' >> "$RESULTS"
  tail -n 15 "$ilog"
  if [[ $rc -ne 0 ]]; then
    fail "integration tests (see integration.log; error_paths runs with --sim and expects the sim plug-in's answers)"
  fi
fi

# --- 4. GPU checks: faults and the watchdog ------------------------------------------------
if [[ $do_checks -eq 1 ]]; then
  say "checks: faults, the watchdog, a bystander"
  note ""
  note "## Faults and the watchdog (watchdog 3 s)"
  note ""
  if start_vgpud checks VGPU_CUDA_WATCHDOG_MS=3000; then
    vm bystander 120 "$BENCH" fair 12 > "$OUT_DIR/check-bystander.txt" 2>&1 &
    bystander=$!
    sleep 1
    for check in fault hang; do
      if vm "$check" 60 "$BENCH" "$check" > "$OUT_DIR/check-$check.txt" 2>&1 &&
          grep -q "^PASS bench" "$OUT_DIR/check-$check.txt"; then
        note "- $check: passed ($(grep '^ok' "$OUT_DIR/check-$check.txt" | sed 's/^ok *//' | paste -sd ';'))"
      else
        fail "check $check: $(tail -n 1 "$OUT_DIR/check-$check.txt")"
        note "- $check: **failed**: $(tail -n 1 "$OUT_DIR/check-$check.txt")"
      fi
    done
    if vm generic 60 "$BUILD/bin/programs/error_paths" > "$OUT_DIR/check-error-paths.txt" 2>&1; then
      note "- error_paths (no --sim): passed"
    else
      fail "error_paths on the GPU: $(tail -n 1 "$OUT_DIR/check-error-paths.txt")"
    fi
    if wait "$bystander" && grep -q "^PASS bench" "$OUT_DIR/check-bystander.txt"; then
      note "- a tenant running alongside: passed, $(value fair_kernels "$OUT_DIR/check-bystander.txt") kernels, no error"
    else
      fail "the bystander tenant was disturbed: $(tail -n 1 "$OUT_DIR/check-bystander.txt")"
    fi
    grep -q "ran past the 3000 ms watchdog" "$RT/vgpud.log" ||
      fail "vgpud's log does not name the watchdog"
    grep -E "watchdog|unusable|reset into" "$RT/vgpud.log" | sed 's/^/    /' >> "$RESULTS"
    stop_vgpud
  else
    fail "vgpud --backend cuda did not start"
  fi
fi

# --- 5. benchmark -------------------------------------------------------------------------
if [[ $do_bench -eq 1 ]]; then
  say "benchmark: native, then forwarded"
  runs=("latency 2000" "launches 20000" "bandwidth" "compute 5" "meminfo")
  fair_s=10
  if [[ $quick -eq 1 ]]; then
    runs=("latency 500" "launches 5000" "bandwidth" "compute 3" "meminfo")
    fair_s=4
  fi
  # The same kernels both ways: iteration counts calibrated natively once.
  compute_iters=$(native 60 "$BENCH" calibrate 200 | sed -n 's/^RESULT iterations //p')
  fair_iters=$(native 60 "$BENCH" calibrate 2 | sed -n 's/^RESULT iterations //p')
  export VGPU_BENCH_FMA_ITERATIONS=${compute_iters:-0} VGPU_BENCH_FAIR_ITERATIONS=${fair_iters:-0}
  say "compute kernel: ${compute_iters:-?} iterations (~200 ms), fairness kernel: ${fair_iters:-?} (~2 ms)"
  : > "$OUT_DIR/bench-native.txt"
  : > "$OUT_DIR/bench-vgpu.txt"
  for r in "${runs[@]}"; do
    # shellcheck disable=SC2086
    native 120 "$BENCH" $r >> "$OUT_DIR/bench-native.txt" 2>&1 ||
      fail "native bench $r: $(tail -n 1 "$OUT_DIR/bench-native.txt")"
  done
  if start_vgpud bench; then
    for r in "${runs[@]}"; do
      # shellcheck disable=SC2086
      vm bench 180 "$BENCH" $r >> "$OUT_DIR/bench-vgpu.txt" 2>&1 ||
        fail "forwarded bench $r: $(tail -n 1 "$OUT_DIR/bench-vgpu.txt")"
    done
    stop_vgpud
  else
    fail "vgpud --backend cuda did not start for the benchmark"
  fi
  note ""
  note "## Native and forwarded, side by side"
  note ""
  note "| metric | native | vgpu | vgpu / native |"
  note "| --- | ---: | ---: | ---: |"
  cat "$OUT_DIR/bench-native.txt" "$OUT_DIR/bench-vgpu.txt" |
    sed -n 's/^RESULT \([^ ]*\) .*/\1/p' | awk '!seen[$0]++' | while read -r m; do
    n=$(value "$m" "$OUT_DIR/bench-native.txt")
    v=$(value "$m" "$OUT_DIR/bench-vgpu.txt")
    ratio=$(awk -v n="$n" -v v="$v" 'BEGIN { if (n != "" && n > 0 && v != "") printf "%.3f", v / n; else print "-" }')
    note "| $m | ${n:--} | ${v:--} | $ratio |"
  done
  total_native=$(value mem_total_MiB "$OUT_DIR/bench-native.txt")
  total_vgpu=$(value mem_total_MiB "$OUT_DIR/bench-vgpu.txt")
  if [[ -n $total_vgpu && -n $total_native ]] &&
      awk -v a="$total_vgpu" -v b="$total_native" 'BEGIN { exit !(a < b) }'; then
    note ""
    note "cudaMemGetInfo in the VM reports the tenant's share ($total_vgpu MiB), not the card ($total_native MiB)."
  else
    fail "cudaMemGetInfo in the VM reports ${total_vgpu:-nothing}, the card has ${total_native:-?} MiB"
  fi

  say "fairness: two tenants for ${fair_s} s each, natively and through vgpu"
  native $((fair_s + 60)) "$BENCH" fair "$fair_s" > "$OUT_DIR/fair-native-a.txt" 2>&1 &
  na=$!
  native $((fair_s + 60)) "$BENCH" fair "$fair_s" > "$OUT_DIR/fair-native-b.txt" 2>&1 &
  nb=$!
  wait $na $nb
  note ""
  note "## Fairness: two tenants, the same ~2 ms kernels, ${fair_s} s"
  note ""
  note "- natively (two processes, the driver's time slicing): $(value fair_kernels "$OUT_DIR/fair-native-a.txt") and $(value fair_kernels "$OUT_DIR/fair-native-b.txt") kernels"
  if start_vgpud fair; then
    vm fair-a $((fair_s + 60)) "$BENCH" fair "$fair_s" > "$OUT_DIR/fair-vgpu-a.txt" 2>&1 &
    va=$!
    vm fair-b $((fair_s + 60)) "$BENCH" fair "$fair_s" > "$OUT_DIR/fair-vgpu-b.txt" 2>&1 &
    vb=$!
    wait $va $vb
    db=$RT/vgpu.db
    stop_vgpud  # flushes the usage ledger
    query="SELECT v.name, SUM(u.gpu_ns), SUM(u.kernels) FROM usage u JOIN vms v USING (tenant_id)
           WHERE v.name IN ('fair-a','fair-b') GROUP BY v.name ORDER BY v.name;"
    if command -v sqlite3 > /dev/null; then
      rows=$(sqlite3 -separator ' ' "$db" "$query")
    else
      rows=$(python3 -c 'import sqlite3,sys; [print(*r) for r in sqlite3.connect(sys.argv[1]).execute(sys.argv[2])]' "$db" "$query" 2>&1)
    fi
    note "- through vgpu, GPU time from vgpud's ledger (name, gpu ns, kernels):"
    echo "$rows" | sed 's/^/    /' >> "$RESULTS"
    echo "$rows" | awk '
      { n[NR] = $1; t[NR] = $2 }
      END {
        if (NR != 2 || t[1] + t[2] == 0) { print "- fairness: no usage recorded" > "/dev/stderr"; exit 1 }
        s = t[1] + t[2]; j = s * s / (2 * (t[1] * t[1] + t[2] * t[2]))
        printf "- shares of GPU time: %s %.3f, %s %.3f; Jain index %.4f\n", n[1], t[1] / s, n[2], t[2] / s, j
      }' >> "$RESULTS" || fail "fairness: no usage in vgpud's ledger"
  else
    fail "vgpud --backend cuda did not start for the fairness run"
  fi
fi

if [[ ${#failures[@]} -eq 0 ]]; then finish 0; else finish 1; fi
