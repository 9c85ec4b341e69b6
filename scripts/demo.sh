#!/usr/bin/env bash
# The main job: installs and builds vgpu, starts vgpud (the GPU if this machine
# has one, else the CPU `sim` backend; SQLite on disk), and serves a class of
# simulated student VMs running CUDA programs at once. Prints each program's
# result and, at the end, the usage ledger per VM.
#
#   VGPU_DEMO_DIR  where the daemon's socket, log and database go (default: a new temp dir)
#   VGPU_BACKEND   sim, cuda or auto (default auto)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
build=$(pwd)/${VGPU_BUILD_DIR:-build}
bin=$build/bin
dir=${VGPU_DEMO_DIR:-$(mktemp -d /tmp/vgpu-demo-XXXXXX)}
mkdir -p "$dir"

"$bin/vgpud" --backend "${VGPU_BACKEND:-auto}" --runtime-dir "$dir" --db "$dir/vgpu.db" \
  --sim-kernels "$build/lib/libvgpu_test_kernels.so" >"$dir/vgpud.log" 2>&1 &
daemon=$!
trap 'kill $daemon 2>/dev/null || true' EXIT
for _ in $(seq 200); do [ -S "$dir/vgpud.sock" ] && break; sleep 0.05; done
[ -S "$dir/vgpud.sock" ] || { cat "$dir/vgpud.log"; echo "demo: vgpud did not start" >&2; exit 1; }
echo "demo: vgpud is running (runtime dir $dir)"
grep -m1 'serving on' "$dir/vgpud.log" | sed 's/^.*\] /  /'

# The class: each student's VM runs its assignment, all at the same time.
declare -A assignment=(
  [alice]="saxpy" [bob]="vector_add" [carol]="streams_events" [dave]="struct_param"
  [erin]="constant_memory" [frank]="busy 2000 200" [grace]="busy 500 800" [heidi]="device_query"
)
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
  if wait "$pid"; then status=ok; else status=FAILED; failed=1; fi
  printf '  %-6s %-16s %s: %s\n' "$vm" "$program" "$status" "$(tail -n 1 "$dir/$vm.out")"
done

kill -TERM $daemon && wait $daemon || true
trap - EXIT
echo
echo "Usage ledger ($dir/vgpu.db):"
sqlite3 -header -column "$dir/vgpu.db" "
  SELECT v.name AS vm, printf('%.1f', sum(u.gpu_ns) / 1e6) AS gpu_ms, sum(u.kernels) AS kernels,
         printf('%.1f', sum(u.bytes_to_device) / 1048576.0) AS to_dev_mib,
         printf('%.1f', sum(u.bytes_from_device) / 1048576.0) AS from_dev_mib,
         printf('%.1f', max(u.peak_memory) / 1048576.0) AS peak_mib
  FROM usage u JOIN vms v USING (tenant_id) GROUP BY v.name ORDER BY v.name;"
exit $failed
