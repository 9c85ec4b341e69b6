#!/usr/bin/env bash
# The main job: installs and builds vgpu (what the demo runs; scripts/test.sh
# builds the tests), starts vgpud (the GPU if this machine
# has one, else the CPU `sim` backend; SQLite on disk) and serves a simulated
# class:
#   1. a teacher sets up course gpu101 with vgpuctl: eight students, each bound
#      to a VM, with GPU-time budgets, memory caps and weights;
#   2. every student's VM runs its CUDA assignment at the same time; frank's
#      budget is too small for his job, so he sees the quota message, and
#      vgpu-smi in his VM shows the budget spent;
#   3. four VMs with weights 1:1:2:4 keep the GPU busy together, and the demo
#      prints each one's share of GPU time next to its entitlement;
#   4. the admin reads the usage report and writes the HTML report.
#
#   VGPU_DEMO_DIR  where the daemon's sockets, log, database and reports go (default: a new temp dir)
#   VGPU_BACKEND   sim, cuda or auto (default auto)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh --demo  # what building needs; scripts/test.sh installs the rest
build=$(pwd)/${VGPU_BUILD_DIR:-build}
# The same Debug build as scripts/build.sh, but only what the demo runs: the
# tests are built by scripts/test.sh.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$build" -j "$(nproc)" --target vgpud vgpuctl vgpu-run vgpu-smi vgpu-sim-worker \
  vgpu-cuda-worker vgpu_cuda vgpu_nvml vgpu_cudart vgpu_cuda_programs vgpu_test_kernels
bin=$build/bin
dir=${VGPU_DEMO_DIR:-$(mktemp -d /tmp/vgpu-demo-XXXXXX)}
mkdir -p "$dir"
ctl=("$bin/vgpuctl" --runtime-dir "$dir")

# The class is simulated VMs, so vgpud follows no libvirt domains (--libvirt none).
"$bin/vgpud" --backend "${VGPU_BACKEND:-auto}" --runtime-dir "$dir" --db "$dir/vgpu.db" \
  --sim-kernels "$build/lib/libvgpu_test_kernels.so" --libvirt none >"$dir/vgpud.log" 2>&1 &
daemon=$!
trap 'kill $daemon 2>/dev/null || true' EXIT
for _ in $(seq 400); do [ -S "$dir/vgpud-admin.sock" ] && break; sleep 0.05; done
[ -S "$dir/vgpud-admin.sock" ] || { cat "$dir/vgpud.log"; echo "demo: vgpud did not start" >&2; exit 1; }
echo "== vgpud is running (runtime dir $dir)"
grep -m1 'serving on' "$dir/vgpud.log" | sed 's/^.*\] /   /'

echo
echo "== 1. The teacher sets up the course"
declare -A assignment=(
  [alice]="saxpy" [bob]="vector_add" [carol]="streams_events" [dave]="struct_param"
  [erin]="constant_memory" [frank]="busy 2000 200" [grace]="busy 500 800" [heidi]="device_query"
)
"${ctl[@]}" course create gpu101
for vm in $(printf '%s\n' "${!assignment[@]}" | sort); do
  "${ctl[@]}" student add "$vm" --course gpu101 --vm "$vm" >/dev/null
done
"${ctl[@]}" quota set --course gpu101 --gpu-time 2h/week --memory 4GiB --on-exhaust reject
"${ctl[@]}" quota set frank --gpu-time 250ms/day   # his job needs 400 ms of GPU time
"${ctl[@]}" quota set carol --weight 2
"${ctl[@]}" quota set dave --weight 4
"${ctl[@]}" quota show

echo
echo "== 2. The class runs its assignments at once"
pids=()
for vm in "${!assignment[@]}"; do
  read -r program args <<<"${assignment[$vm]}"
  "$bin/vgpu-run" --runtime-dir "$dir" --vm "$vm" -- "$bin/programs/$program" $args \
    >"$dir/$vm.out" 2>&1 &
  pids+=("$!:$vm:$program")
done
failed=0
for entry in "${pids[@]}"; do
  IFS=: read -r pid vm program <<<"$entry"
  if wait "$pid"; then
    status=ok
  elif grep -q "GPU-time quota exhausted" "$dir/$vm.out"; then
    status="out of GPU time (expected)"
  else
    status=FAILED
    failed=1
  fi
  printf '   %-6s %-16s %s: %s\n' "$vm" "$program" "$status" "$(tail -n 1 "$dir/$vm.out")"
done
echo "   frank saw: $(grep -m1 'GPU-time quota exhausted' "$dir/frank.out" || echo nothing)"
grep -q "GPU-time quota exhausted" "$dir/frank.out" || failed=1
echo "   and vgpu-smi in frank's VM says:"
"$bin/vgpu-run" --runtime-dir "$dir" --vm frank -- "$bin/vgpu-smi" | sed -n '/GPU-time budget/,$p' |
  sed 's/^/   /' || failed=1

echo
echo "== 3. Weighted sharing: four VMs keep the GPU busy at once (fair policy, 1 ms kernels)"
weights="alice=1 bob=1 carol=2 dave=4"  # as set with vgpuctl above
gpu_ns() {  # "vm|gpu_ns" per VM, as vgpud last flushed its ledger (at most 1 s old)
  sqlite3 "$dir/vgpu.db" "SELECT v.name, COALESCE(SUM(u.gpu_ns), 0) FROM vms v
    LEFT JOIN usage u USING (tenant_id) GROUP BY v.name ORDER BY v.name"
}
busy=()
for pair in $weights; do
  vm=${pair%=*}
  "$bin/vgpu-run" --runtime-dir "$dir" --vm "$vm" -- "$bin/programs/busy" 1000 100000 \
    >"$dir/$vm-busy.out" 2>&1 &
  busy+=("$!")
done
sleep 3; before=$(gpu_ns); sleep 10; after=$(gpu_ns)  # 10 s once all four are running
kill "${busy[@]}" 2>/dev/null || true
wait "${busy[@]}" 2>/dev/null || true
printf '   %-6s %6s %9s %9s\n' vm weight entitled got
join -t'|' <(echo "$before") <(echo "$after") | awk -F'|' -v weights="$weights" '
  BEGIN { n = split(weights, pairs, " ")
          for (i = 1; i <= n; i++) { split(pairs[i], kv, "="); w[kv[1]] = kv[2]; wsum += kv[2] } }
  ($1 in w) { used[$1] = $3 - $2; sum += $3 - $2 }
  END { for (vm in used)
          printf "   %-6s %6d %8.1f%% %8.1f%%\n", vm, w[vm], 100 * w[vm] / wsum, 100 * used[vm] / sum }' |
  sort

kill -TERM $daemon && wait $daemon || true  # the final flush of the ledger
trap - EXIT

echo
echo "== 4. The admin reads the usage report (from the database; the daemon is down)"
"$bin/vgpuctl" --db "$dir/vgpu.db" usage report
"$bin/vgpuctl" --db "$dir/vgpu.db" usage report --html "$dir/report.html" >/dev/null
echo "   HTML report: $dir/report.html"
exit $failed
