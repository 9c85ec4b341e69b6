// Accounting over a real database: budgets per student, the three exhaustion
// behaviours, live changes, and budgets that survive a restart.
#include <catch2/catch.hpp>

#include "temp_db.h"
#include "vgpu/policy/accounting.h"
#include "vgpu/policy/units.h"

using namespace vgpu;
using namespace vgpu::policy;
using namespace vgpu::policy::test;

namespace {

constexpr int64_t kMs = 1000000;
constexpr int64_t kMonday = 1736121600;

struct World {
  TempDb db;
  std::unique_ptr<Store> s = db.open();
  int64_t now = kMonday + 3600;
  TenantId a1 = 0, a2 = 0, stray = 0;

  World(const char* budget, OnExhaust on_exhaust) {
    REQUIRE(s->create_course(root(), "cs101", "").ok());
    REQUIRE(s->add_student(root(), "alice", "cs101", {"a1", "a2"}).ok());
    set(budget, on_exhaust);
    REQUIRE(s->tenant_for_vm("a1", &a1).ok());
    REQUIRE(s->tenant_for_vm("a2", &a2).ok());
    REQUIRE(s->tenant_for_vm("stray", &stray).ok());
  }
  void set(const char* budget, OnExhaust on_exhaust) {
    QuotaFields f;
    GpuTime g;
    REQUIRE(parse_gpu_time(budget, &g).ok());
    f.gpu_time = g;
    f.on_exhaust = on_exhaust;
    f.memory = 64ull << 20;
    REQUIRE(s->set_quota(root(), {QuotaTarget::Kind::kStudent, "alice"}, f).ok());
  }
  std::unique_ptr<Accounting> accounting() {
    return std::make_unique<Accounting>(s.get(), [this] { return now; });
  }
  // Runs one slice of `ns` on `tenant`, as the dispatcher would.
  static Admission run(Accounting& a, TenantId tenant, int64_t ns) {
    const Admission d = a.reserve(tenant, 2 * kMs);
    if (d.kind == Admission::Kind::kRun)
      a.settle(tenant, d.budget_ns, ns);
    else
      a.settle(tenant, 0, 0);
    return d;
  }
  // Writes usage as the daemon's flusher does.
  void flush(Accounting& a, TenantId tenant, int64_t ns) {
    std::vector<UsageRecord> batch{
        UsageRecord{tenant, now / 3600 * 3600, static_cast<uint64_t>(ns)}};
    a.attribute(&batch);
    REQUIRE(s->record_usage(batch).ok());
  }
};

}  // namespace

TEST_CASE("a student's VMs share one budget; the plan carries the memory cap and course") {
  World w("10ms/day", OnExhaust::kReject);
  auto a = w.accounting();
  const TenantPlan p = a->connect(w.a1);
  CHECK(p.admitted);
  CHECK(p.memory_cap == 64ull << 20);
  CHECK(p.course != 0);
  a->connect(w.a2);
  CHECK(World::run(*a, w.a1, 6 * kMs).kind == Admission::Kind::kRun);
  CHECK(World::run(*a, w.a2, 6 * kMs).kind == Admission::Kind::kRun);  // 4 ms left: one slice
  CHECK(World::run(*a, w.a1, 1).kind == Admission::Kind::kReject);
  CHECK(World::run(*a, w.a2, 1).kind == Admission::Kind::kReject);
  // An unassigned VM runs under the default: unlimited.
  const TenantPlan sp = a->connect(w.stray);
  CHECK(sp.admitted);
  CHECK(sp.course == 0);
  CHECK(World::run(*a, w.stray, 50 * kMs).kind == Admission::Kind::kRun);
}

TEST_CASE("wait holds until the quota is raised; renewal brings the budget back") {
  World w("4ms/day", OnExhaust::kWait);
  auto a = w.accounting();
  a->connect(w.a1);
  World::run(*a, w.a1, 4 * kMs);
  CHECK(World::run(*a, w.a1, 1).kind == Admission::Kind::kWait);
  w.set("10ms/day", OnExhaust::kWait);
  a->refresh();
  CHECK(World::run(*a, w.a1, 1).kind == Admission::Kind::kRun);
  w.set("1ms/day", OnExhaust::kWait);
  a->refresh();
  CHECK(World::run(*a, w.a1, 1).kind == Admission::Kind::kWait);
  w.now = kMonday + 86400;  // Tuesday
  CHECK(World::run(*a, w.a1, 1).kind == Admission::Kind::kRun);
}

TEST_CASE("best-effort keeps running and says when the plan changes") {
  World w("2ms/day", OnExhaust::kBestEffort);
  auto a = w.accounting();
  CHECK_FALSE(a->connect(w.a1).best_effort);
  Admission d = World::run(*a, w.a1, 3 * kMs);
  CHECK_FALSE(d.plan_changed);
  d = World::run(*a, w.a1, 3 * kMs);
  CHECK(d.kind == Admission::Kind::kRun);
  CHECK(d.plan_changed);
  CHECK(a->plan(w.a1).best_effort);
  d = World::run(*a, w.a1, 3 * kMs);
  CHECK_FALSE(d.plan_changed);
  w.now += 86400;
  d = World::run(*a, w.a1, 1);
  CHECK(d.plan_changed);
  CHECK_FALSE(a->plan(w.a1).best_effort);
}

TEST_CASE("after a restart the budget is read back from the ledger") {
  World w("10ms/day", OnExhaust::kReject);
  {
    auto a = w.accounting();
    a->connect(w.a1);
    World::run(*a, w.a1, 8 * kMs);
    w.flush(*a, w.a1, 8 * kMs);     // the batch that made it to disk
    World::run(*a, w.a1, 1 * kMs);  // charged in memory, then the daemon dies
  }
  auto again = w.accounting();
  again->connect(w.a2);  // the same student, through the other VM
  const auto status = again->status();
  REQUIRE(status.size() == 1);
  CHECK(status[0].budget.spent_ns == 8 * kMs);
  CHECK(World::run(*again, w.a2, 2 * kMs).kind == Admission::Kind::kRun);
  CHECK(World::run(*again, w.a2, 1).kind == Admission::Kind::kReject);
}

TEST_CASE("usage is attributed to the student the VM is bound to now") {
  World w("1h/day", OnExhaust::kReject);
  auto a = w.accounting();
  a->connect(w.a1);
  a->connect(w.stray);
  std::vector<UsageRecord> batch{UsageRecord{w.a1}, UsageRecord{w.stray}, UsageRecord{999}};
  a->attribute(&batch);
  CHECK(batch[0].student != 0);
  CHECK(batch[1].student == 0);
  CHECK(batch[2].student == 0);
  REQUIRE(w.s->unbind_vm(root(), "a1").ok());
  a->refresh();
  a->attribute(&batch);
  CHECK(batch[0].student == 0);
}

TEST_CASE("an admin can make unassigned VMs refused") {
  World w("1h/day", OnExhaust::kReject);
  REQUIRE(w.s->set_refuse_unassigned(root(), true).ok());
  auto a = w.accounting();
  const TenantPlan p = a->connect(w.stray);
  CHECK_FALSE(p.admitted);
  CHECK_THAT(p.why, Catch::Contains("not bound to a student"));
  CHECK(a->connect(w.a1).admitted);
}

TEST_CASE("a VM's own placement is its plan's, over its student's quota") {
  World w("1h/day", OnExhaust::kReject);
  QuotaFields pack;
  pack.placement = Placement::kPack;
  REQUIRE(w.s->set_quota(root(), {QuotaTarget::Kind::kStudent, "alice"}, pack).ok());
  REQUIRE(w.s->set_vm_placement(root(), "a2", Placement::kSpread).ok());
  auto acc = w.accounting();
  CHECK(acc->connect(w.a1).placement == std::optional<Placement>(Placement::kPack));
  CHECK(acc->connect(w.a2).placement == std::optional<Placement>(Placement::kSpread));
}
