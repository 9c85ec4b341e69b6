#!/usr/bin/env bash
# Builds a Release build in build-release/ and runs the scheduling benchmarks,
# printing figures and ratios (docs/scheduling.md records them):
#   1. decision cost (pick + charge) at 10 .. 10,000 tenants, per policy;
#   2. the simulated guarantees (fairness, shares, lag, caps) at full size;
#   3. end to end: 8 VMs with weights 1:1:2:4 (x2) for 20 s through vgpud,
#      under fair, and under best-effort for contrast;
#   4. placement: 512 VMs on 8 GPUs, shares per GPU and decision cost
#      against one GPU;
#   5. lease overhead: decision cost with the quota check on a SQLite store
#      and on a PostgreSQL store with leased budgets (a throwaway server,
#      scripts/pg-test-cluster.sh; skipped without PostgreSQL installed).
#
#   VGPU_BENCH_SECONDS  length of the end-to-end window (default 20)
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-release
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "$(nproc)" --target policy_bench share_bench scheduler_guarantees_test \
  placement_bench lease_bench
bin=$build/bin
seconds=${VGPU_BENCH_SECONDS:-20}

echo "== 1. Decision cost"
"$bin/policy_bench"
echo
echo "== 2. Guarantees in simulation (deterministic seeds)"
# Each guarantee test reports its measured figure as a Catch warning.
"$bin/scheduler_guarantees_test" -r compact 2>&1 | sed -n "s/.*warning: .*'\(.*\)'\$/  \1/p" || true
echo
echo "== 3. End to end, fair"
status=0
"$bin/share_bench" --seconds "$seconds" --policy fair || status=$?
echo
echo "== 3b. End to end, best-effort (round robin ignores weights; for contrast)"
"$bin/share_bench" --seconds "$seconds" --policy best-effort || true
echo
echo "== 4. Placement on 8 GPUs"
"$bin/placement_bench" || status=$?
echo
echo "== 5. Lease overhead"
if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  pg=$(mktemp -d)
  scripts/pg-test-cluster.sh start "$pg/server.conn" >/dev/null
  "$bin/lease_bench" --postgres "$(head -1 "$pg/server.conn")" || status=$?
  scripts/pg-test-cluster.sh stop "$pg/server.conn" >/dev/null
  rm -rf "$pg"
else
  echo "  skipped: PostgreSQL is not installed (scripts/install-deps.sh installs it)"
fi
exit $status
