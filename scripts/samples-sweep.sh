#!/usr/bin/env bash
# Runs a tree of CUDA sample programs (NVIDIA's cuda-samples layout: one
# folder per program, Common/ beside Samples/) through vgpu on the sim
# backend, to find the CUDA calls and driver features they need that vgpu
# refuses or gets wrong. Each program is built with plain nvcc (the static
# runtime, as students build), gets a plug-in whose kernels do nothing (so it
# runs past its launches; its own result checks then fail, which is expected),
# and runs through vgpu-run on a fresh vgpud. A kernel that only shows up at
# run time (loaded from a file, or by a library) is added and the program run
# again.
#
#   scripts/samples-sweep.sh CUDA_SAMPLES_DIR [OUT_DIR]     (default OUT_DIR /tmp/vgpu-sweep)
#   scripts/samples-sweep.sh --each-file DIR [OUT_DIR]
#
# --each-file: every .cu file under DIR is a program of its own (course
# material, books: docs/compatibility.md), laid out as a samples tree in
# OUT_DIR/tree with the headers beside it and the folders beside its folder
# (so that "../common/common.h" resolves).
#
# Prints one line per program: built or not, its exit status, and every line
# where vgpu refused something ("not supported by vgpu", "unknown to vgpu");
# logs in OUT_DIR/logs. A diagnostic, not a test: the sample tree is not part
# of this repository.
#
# VGPU_SWEEP_INTERPRET=1: no no-op plug-in; every kernel runs from its PTX
# (the sim's interpreter), so a program's own result checks mean something,
# and each kernel the interpreter cannot run is listed with why.
set -uo pipefail
usage="usage: samples-sweep.sh CUDA_SAMPLES_DIR [OUT_DIR] | --each-file DIR [OUT_DIR]"
if [ "${1:-}" = "--each-file" ]; then
  src=$(cd "${2:?$usage}" && pwd) || exit 2
  out=${3:-/tmp/vgpu-sweep}
  mkdir -p "$out" && out=$(cd "$out" && pwd)  # programs run from their own folders
  samples=$out/tree
  rm -rf "$samples" && mkdir -p "$samples/Samples" "$samples/Common"
  while IFS= read -r f; do
    rel=$(dirname "${f#"$src"/}")
    # Spaces in names (course folders have them) become underscores.
    group=$( [ "$rel" = . ] && echo top || echo "$rel" | tr '/ ' '__')
    d=$samples/Samples/$group/$group-$(basename "$f" .cu | tr ' ' '_')
    mkdir -p "$d" && cp "$f" "$d/$(basename "$f" | tr ' ' '_')"
    cp "$(dirname "$f")"/*.h "$(dirname "$f")"/*.cuh "$d/" 2>/dev/null
    for sibling in "$(dirname "$(dirname "$f")")"/*/; do
      ln -sfn "$sibling" "$samples/Samples/$group/$(basename "$sibling")"
    done
  done < <(find "$src" -name '*.cu' | sort)
else
  samples=${1:?$usage}
  out=${2:-/tmp/vgpu-sweep}
  mkdir -p "$out" && out=$(cd "$out" && pwd)
fi
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${VGPU_BIN:-$root/build/bin}
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
mkdir -p "$out"/{bin,plug,logs}

build() {  # build DIR NAME: the program and its no-op plug-in
  local dir=$1 name=$2 libs="-lcuda" srcs
  srcs=$(cd "$dir" && ls *.cu *.cpp 2>/dev/null | sed "s|^|$dir/|")
  grep -qs "omp_\|pragma omp" $srcs && libs="$libs -Xcompiler -fopenmp"
  grep -qs "curand" $srcs && libs="$libs -lcurand"
  grep -qs "cusparse\|cusolver" $srcs && libs="$libs -lcusolver -lcusparse -lcublas"
  grep -qs "cufft" $srcs && libs="$libs -lcufft"
  grep -qs "nvrtc" $srcs && libs="$libs -lnvrtc"
  grep -qs "cublas" $srcs && libs="$libs -lcublas"
  grep -qs "nvml" $srcs && libs="$libs -lnvidia-ml"
  grep -qs "nvtx" $srcs && libs="$libs -ldl"
  "$nvcc" -w -I"$samples/Common" -o "$out/bin/$name" $srcs $libs >"$out/logs/$name.build" 2>&1 || return 1
  # Kernel names: the mangled names in the program, and those a run found.
  local syms
  syms=$( (strings -n 4 "$out/bin/$name" | grep -E '^_Z[A-Za-z0-9_]+$'; cat "$out/plug/$name.extra" 2>/dev/null) | sort -u)
  {
    echo '#include "vgpu/sim_kernel.h"'
    for s in $syms; do
      echo "__attribute__((visibility(\"default\"))) int vgpu_sim_$s(struct vgpu_sim_launch* l) { (void)l; return 0; }"
    done
  } >"$out/plug/$name.c"
  cc -shared -fPIC -I"$root/executor/include" -o "$out/plug/$name.so" "$out/plug/$name.c"
}

run() {  # run DIR NAME: prints the exit status; kernels it missed go to NAME.extra
  local dir=$1 name=$2 rd pid rc
  # Short: a socket's path must fit sun_path (108 bytes), and names can be long.
  rd=$(mktemp -d /tmp/vgpu-sweep-rt.XXXXXX)
  local plugin=(--sim-kernels "$out/plug/$name.so")
  [ "${VGPU_SWEEP_INTERPRET:-0}" = 1 ] && plugin=()
  "$bin/vgpud" --backend sim --runtime-dir "$rd" --db "$rd/vgpu.db" "${plugin[@]}" \
    >"$rd/vgpud.log" 2>&1 &
  pid=$!
  for _ in $(seq 200); do [ -S "$rd/vgpud.sock" ] && break; sleep 0.05; done
  (cd "$dir" && timeout 120 "$bin/vgpu-run" --runtime-dir "$rd" --vm sweep -- "$out/bin/$name" \
    >"$out/logs/$name.run" 2>&1 </dev/null)
  rc=$?
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  grep -o "no CPU implementation of kernel [^ :]*" "$rd/vgpud.log" | awk '{print $NF}' | sort -u \
    >"$out/plug/$name.missing"
  mv "$rd/vgpud.log" "$out/logs/$name.vgpud"
  rm -rf "$rd"
  echo $rc
}

for dir in "$samples"/Samples/*/*/; do
  dir=${dir%/}; name=$(basename "$dir")
  [ -L "$dir" ] && continue  # a folder beside a program's (--each-file), not a program
  if ! build "$dir" "$name"; then echo "$name: not built (see $out/logs/$name.build)"; continue; fi
  rc=$(run "$dir" "$name")
  if [ -s "$out/plug/$name.missing" ] && [ "${VGPU_SWEEP_INTERPRET:-0}" != 1 ]; then  # kernels only a run shows: once more with them
    cat "$out/plug/$name.missing" >>"$out/plug/$name.extra"
    build "$dir" "$name" && rc=$(run "$dir" "$name")
  fi
  refused=$(grep -h "not supported by vgpu\|unknown to vgpu\|interpreter cannot run" "$out/logs/$name.run" |
            sort -u | tr '\n' ' ')
  echo "$name: exit $rc${refused:+; refused: $refused}"
done
