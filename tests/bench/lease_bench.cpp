// Lease overhead: the cost of one scheduling decision with its quota check
// (pick a tenant, reserve its slice from the student's budget, settle the
// measured time, charge the policy), with the quotas in a SQLite file and in
// a PostgreSQL database several hosts share. On PostgreSQL budgets are
// leased (policy/lease.h): a background thread takes and renews leases on
// its own connection, so the hot path must cost what it costs on SQLite.
// Prints p50 and p99 per store (per decision, timed in batches of 16) and
// the ratio (target: PostgreSQL <= 1.1x).
//
//   lease_bench [--quick] [--postgres CONNINFO]
//
// The server: --postgres, or the file $VGPU_TEST_POSTGRES names (the ctest
// fixture's); without one, SQLite only, and the run fails.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "postgres_test_server.h"
#include "rng.h"
#include "vgpu/host/lease_keeper.h"
#include "vgpu/policy/accounting.h"
#include "vgpu/policy/store.h"
#include "vgpu/policy/units.h"
#include "vgpu/scheduler/policy_factory.h"

using namespace vgpu;
using Wall = std::chrono::steady_clock;

namespace {

constexpr uint32_t kStudents = 50;
constexpr size_t kBatch = 16;

struct Figures {
  double p50 = 0, p99 = 0;
  size_t lease_waits = 0;  // decisions whose tenant waited for a lease
  size_t renewed = 0;      // students whose lease was renewed while measured
  bool ok = false;
};

int64_t unix_now() { return static_cast<int64_t>(std::time(nullptr)); }

// A course of kStudents students, one VM each, 1 s of GPU time a day each:
// leases of 1 s / 16, taken at the start and renewed during the run.
bool make_class(policy::Store& store, std::vector<policy::TenantId>* tenants) {
  const policy::Actor root{0, "root", policy::Role::kAdmin, 0};
  if (!store.create_course(root, "cs101", "").ok()) return false;
  policy::QuotaFields q;
  policy::GpuTime g;
  if (!policy::parse_gpu_time("1s/day", &g).ok()) return false;
  q.gpu_time = g;
  if (!store.set_quota(root, {policy::QuotaTarget::Kind::kCourse, "cs101"}, q).ok()) return false;
  for (uint32_t i = 0; i < kStudents; ++i) {
    const std::string name = "s" + std::to_string(i);
    if (!store.add_student(root, name, "cs101", {name + "-vm"}).ok()) return false;
    policy::TenantId t = 0;
    if (!store.tenant_for_vm(name + "-vm", &t).ok()) return false;
    tenants->push_back(t);
  }
  return true;
}

Figures measure(policy::Store* store, policy::Store* lease_store, size_t decisions) {
  Figures f;
  std::vector<policy::TenantId> tenants;
  if (!make_class(*store, &tenants)) return f;
  policy::Accounting accounting(store, unix_now);
  std::unique_ptr<host::LeaseKeeper> keeper;
  if (lease_store) {
    keeper = std::make_unique<host::LeaseKeeper>(lease_store, &accounting, "bench-host",
                                                 policy::LeaseRules{}, nullptr);
    accounting.enable_leases([k = keeper.get()] { k->wake(); });
    keeper->start();
  }
  std::unique_ptr<scheduler::SchedulingPolicy> policy;
  if (!scheduler::make_policy("fair", {}, &policy).ok()) return f;
  for (policy::TenantId t : tenants) {
    if (!accounting.connect(t).admitted) return f;
    policy->add_tenant(t, {1, 0, 1}, 0);
    policy->runnable(t, 0);
  }
  sched_sim::Rng rng(7);
  const sched_sim::KernelLengths lengths = sched_sim::KernelLengths::mixed();
  std::vector<scheduler::Nanos> draws(4096);
  // The mixed kernel lengths scaled down 1,000 times: a decision takes about
  // 150 ns here, so the run spends GPU time about as fast as a host with
  // several busy GPUs would (unscaled, it would spend hundreds of GPUs'
  // worth, and renew leases far more often than any host).
  for (auto& d : draws) d = std::max<scheduler::Nanos>(lengths.draw(rng) / 1000, 100);
  scheduler::Nanos now = 0;
  size_t waits = 0;
  std::vector<policy::TenantId> held;
  auto decide = [&](size_t i) {
    scheduler::Decision d = policy->pick(now);
    if (d.kind != scheduler::Decision::Kind::kRun || i % 512 == 0) {
      // As the dispatcher's poke: the tenants held for a lease are asked again.
      for (policy::TenantId t : held) policy->runnable(t, now);
      held.clear();
      if (d.kind != scheduler::Decision::Kind::kRun) d = policy->pick(now);
      if (d.kind != scheduler::Decision::Kind::kRun) return;
    }
    const policy::Admission a = accounting.reserve(d.tenant, d.slice);
    if (a.kind != policy::Admission::Kind::kRun) {
      waits += a.lease_pending;
      policy->idle(d.tenant, now);  // held, as the dispatcher holds it
      held.push_back(d.tenant);
      return;
    }
    const scheduler::Nanos used = std::min<scheduler::Nanos>(draws[i & 4095], a.budget_ns);
    accounting.settle(d.tenant, a.budget_ns, used);
    now += used;
    policy->charge(d.tenant, used, now);
  };
  // Warm up until every tenant holds a lease (on PostgreSQL: one transaction each).
  auto all_leased = [&] {
    for (policy::TenantId t : tenants) {
      if (lease_store && accounting.status_of(t).budget.lease_limit_ns < 0) return false;
    }
    return true;
  };
  const auto warm_until = Wall::now() + std::chrono::seconds(30);
  for (size_t i = 0; i < 20 * kStudents || (!all_leased() && Wall::now() < warm_until); ++i) {
    decide(i);
  }
  waits = 0;
  std::vector<int64_t> limits;
  for (policy::TenantId t : tenants)
    limits.push_back(accounting.status_of(t).budget.lease_limit_ns);
  // Timed in batches of kBatch decisions: a decision is near the clock's
  // resolution here, a batch is not.
  std::vector<double> samples(decisions / kBatch);
  for (size_t n = 0; n < samples.size(); ++n) {
    const auto a = Wall::now();
    for (size_t i = n * kBatch; i < (n + 1) * kBatch; ++i) decide(i);
    const auto b = Wall::now();
    samples[n] =
        static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count()) /
        kBatch;
  }
  if (keeper) keeper->stop();
  for (size_t i = 0; i < tenants.size(); ++i) {
    f.renewed += accounting.status_of(tenants[i]).budget.lease_limit_ns != limits[i];
  }
  std::sort(samples.begin(), samples.end());
  f.p50 = samples[samples.size() / 2];
  f.p99 = samples[samples.size() * 99 / 100];
  f.lease_waits = waits;
  f.ok = true;
  return f;
}

}  // namespace

// Medians over the rounds of each store's p50 and p99.
Figures median(std::vector<Figures> runs) {
  Figures m;
  m.ok = !runs.empty();
  for (const Figures& f : runs) m.ok = m.ok && f.ok;
  if (!m.ok) return m;
  auto mid = [&](auto field) {
    std::vector<double> v;
    for (const Figures& f : runs) v.push_back(f.*field);
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  m.p50 = mid(&Figures::p50);
  m.p99 = mid(&Figures::p99);
  for (const Figures& f : runs) m.lease_waits += f.lease_waits;
  for (const Figures& f : runs) m.renewed += f.renewed;
  m.lease_waits /= runs.size();
  m.renewed /= runs.size();
  return m;
}

int main(int argc, char** argv) {
  bool quick = false;
  std::string server = test::postgres_server();
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    if (std::strcmp(argv[i], "--postgres") == 0 && i + 1 < argc) server = argv[++i];
  }
  const size_t decisions = quick ? 20000 : 2000000;
  const int rounds = quick ? 1 : 3;
  std::printf(
      "Decision cost with the quota check (pick, reserve, settle, charge), %u students "
      "with 1s/day budgets, %zu decisions; the stores take turns, %d rounds each "
      "(medians)\n\n",
      kStudents, decisions, rounds);
  if (server.empty()) {
    std::printf("no PostgreSQL server (--postgres or $VGPU_TEST_POSTGRES): nothing to compare\n");
    return 1;
  }
  std::vector<Figures> lite_runs, shared_runs;
  for (int round = 0; round < rounds; ++round) {
    const std::string path = "/tmp/vgpu-lease-bench-" + std::to_string(getpid()) + ".db";
    {
      std::unique_ptr<policy::Store> sqlite;
      if (!policy::open_sqlite_store(path, &sqlite).ok()) return 1;
      lite_runs.push_back(measure(sqlite.get(), nullptr, decisions));
    }
    for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
    test::PostgresTestDb db(server);
    std::unique_ptr<policy::Store> pg, pg_leases;
    if (!db.error().empty() || !policy::open_postgres_store(db.conninfo(), &pg).ok() ||
        !policy::open_postgres_store(db.conninfo(), &pg_leases).ok()) {
      std::printf("cannot open the PostgreSQL database: %s\n", db.error().c_str());
      return 1;
    }
    shared_runs.push_back(measure(pg.get(), pg_leases.get(), decisions));
  }
  const Figures lite = median(lite_runs), shared = median(shared_runs);
  if (!lite.ok || !shared.ok) {
    std::printf("a run failed to set up its class\n");
    return 1;
  }
  std::printf("%-34s %10s %10s %12s\n", "store", "p50 ns", "p99 ns", "lease waits");
  std::printf("%-34s %10.0f %10.0f %12s\n", "SQLite (budgets in memory)", lite.p50, lite.p99, "-");
  std::printf("%-34s %10.0f %10.0f %12zu\n", "PostgreSQL (budgets leased)", shared.p50, shared.p99,
              shared.lease_waits);
  std::printf(
      "(PostgreSQL: %zu of %u students' leases renewed during a measured run, on "
      "average)\n",
      shared.renewed, kStudents);
  const double ratio = shared.p50 / std::max(lite.p50, 1.0);
  std::printf("\nPostgreSQL / SQLite p50 = %.2fx (target <= 1.1x); p99 %.2fx\n", ratio,
              shared.p99 / std::max(lite.p99, 1.0));
  if (!quick) std::printf("%s\n", ratio <= 1.1 ? "target met" : "target missed");
  return 0;
}
