// The lease keeper (host/lease_keeper.h) between the accounting and a real
// SQLite store: a tenant waits for a lease, the keeper takes it and says so,
// and a store that refuses leaves the accounting spending what it holds.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <atomic>
#include <filesystem>

#include "vgpu/host/lease_keeper.h"
#include "vgpu/policy/units.h"

using namespace vgpu;
using namespace vgpu::policy;

namespace {

constexpr int64_t kMs = 1000000;

struct World {
  std::string path = "/tmp/vgpu-lease-keeper-" + std::to_string(getpid()) + ".db";
  std::unique_ptr<Store> store, leases;
  int64_t now = 1736121600 + 3600;
  std::unique_ptr<Accounting> acc;
  TenantId vm = 0;
  std::atomic<int> wakes{0}, granted{0};

  World() {
    REQUIRE(open_sqlite_store(path, &store).ok());
    REQUIRE(open_sqlite_store(path, &leases).ok());
    const Actor root{0, "root", Role::kAdmin, 0};
    REQUIRE(store->create_course(root, "cs101", "").ok());
    REQUIRE(store->add_student(root, "alice", "cs101", {"a1"}).ok());
    QuotaFields f;
    GpuTime g;
    REQUIRE(parse_gpu_time("1s/day", &g).ok());
    f.gpu_time = g;
    f.on_exhaust = OnExhaust::kReject;
    REQUIRE(store->set_quota(root, {QuotaTarget::Kind::kStudent, "alice"}, f).ok());
    REQUIRE(store->tenant_for_vm("a1", &vm).ok());
    acc = std::make_unique<Accounting>(store.get(), [this] { return now; });
  }
  ~World() {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  }
};

}  // namespace

TEST_CASE("a tenant waits for a lease; the keeper takes it and the tenant runs", "[lease]") {
  World w;
  host::LeaseKeeper keeper(w.leases.get(), w.acc.get(), "node1", {}, [&] { ++w.granted; });
  w.acc->enable_leases([&] { ++w.wakes; });
  REQUIRE(w.acc->connect(w.vm).admitted);
  const Admission first = w.acc->reserve(w.vm, 2 * kMs);
  CHECK(first.kind == Admission::Kind::kWait);
  CHECK(first.lease_pending);  // not the quota: no exhaustion message
  CHECK(w.wakes == 1);
  keeper.round();
  CHECK(w.granted == 1);
  const Admission run = w.acc->reserve(w.vm, 2 * kMs);
  REQUIRE(run.kind == Admission::Kind::kRun);
  CHECK(run.budget_ns == 2 * kMs);
  w.acc->settle(w.vm, run.budget_ns, 2 * kMs);
  // The lease is the whole budget's share for one host (1 s / 16).
  const TenantStatus s = w.acc->status_of(w.vm);
  CHECK(s.budget.lease_limit_ns == lease_size({}, 1000 * kMs, 1));
  CHECK(s.budget.here_ns == 2 * kMs);
}

TEST_CASE("spending a lease to half wakes the keeper for a renewal", "[lease]") {
  World w;
  host::LeaseKeeper keeper(w.leases.get(), w.acc.get(), "node1", {}, nullptr);
  w.acc->enable_leases([&] { ++w.wakes; });
  REQUIRE(w.acc->connect(w.vm).admitted);
  (void)w.acc->reserve(w.vm, 1);
  keeper.round();
  const int before = w.wakes;
  const int64_t lease = lease_size({}, 1000 * kMs, 1);
  for (int64_t spent = 0; spent < lease / 2 + 2 * kMs; spent += 2 * kMs) {
    const Admission a = w.acc->reserve(w.vm, 2 * kMs);
    REQUIRE(a.kind == Admission::Kind::kRun);
    w.acc->settle(w.vm, a.budget_ns, a.budget_ns);
  }
  CHECK(w.wakes == before + 1);
  keeper.round();  // renewed: the limit moved on
  CHECK(w.acc->status_of(w.vm).budget.lease_limit_ns > lease);
}

TEST_CASE("a store that refuses leases: the tenant spends what it holds, then waits", "[lease]") {
  World w;
  host::LeaseKeeper keeper(w.leases.get(), w.acc.get(), "bad host name", {}, nullptr);
  w.acc->enable_leases([] {});
  REQUIRE(w.acc->connect(w.vm).admitted);
  (void)w.acc->reserve(w.vm, 1);
  keeper.round();  // refused (a bad host name): no lease
  const Admission a = w.acc->reserve(w.vm, 2 * kMs);
  CHECK(a.kind == Admission::Kind::kWait);
  CHECK(a.lease_pending);
}

TEST_CASE("a keeper that stops gives its unspent leases back", "[lease]") {
  World w;
  const int64_t lease = lease_size({}, 1000 * kMs, 1);
  {
    host::LeaseKeeper keeper(w.leases.get(), w.acc.get(), "node1", {}, nullptr);
    w.acc->enable_leases([] {});
    REQUIRE(w.acc->connect(w.vm).admitted);
    (void)w.acc->reserve(w.vm, 1);
    keeper.round();
    const Admission a = w.acc->reserve(w.vm, 2 * kMs);
    REQUIRE(a.kind == Admission::Kind::kRun);
    w.acc->settle(w.vm, a.budget_ns, 2 * kMs);
    keeper.stop();
    CHECK(w.acc->status_of(w.vm).budget.lease_limit_ns == 2 * kMs);  // spent, nothing held
  }
  // Another host sees only what node1 spent as taken.
  LeaseRequest r;
  VmPolicy p;
  REQUIRE(w.store->vm_policy(w.vm, &p).ok());
  r.student = p.student_id;
  r.host = "node2";
  r.window_start = w.acc->status_of(w.vm).budget.window.start;
  r.window_end = w.acc->status_of(w.vm).budget.window.end;
  r.budget_ns = 1000 * kMs;
  r.now = w.now;
  LeaseRules whole;
  whole.budget_share = 1;
  whole.max_lease_ns = 1000 * kMs;
  LeaseGrant g;
  REQUIRE(w.store->lease_budget(r, whole, &g).ok());
  CHECK(g.limit_ns == 1000 * kMs - 2 * kMs);
  CHECK(lease > 2 * kMs);  // so node1 did hold more than it spent
}
