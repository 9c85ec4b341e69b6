// FairPolicy's handling of events: tenants coming and going, courses, weight
// changes, and the stale or odd calls a dispatcher can make.
#include <catch2/catch.hpp>

#include <map>

#include "vgpu/scheduler/fair_policy.h"

using namespace vgpu::scheduler;

namespace {

// Runs `turns` turns of `each` ns and returns the GPU time per tenant.
std::map<TenantId, Nanos> serve(FairPolicy& p, int turns, Nanos each) {
  std::map<TenantId, Nanos> got;
  for (int i = 0; i < turns; ++i) {
    const Decision d = p.pick(0);
    if (d.kind != Decision::Kind::kRun) break;
    p.charge(d.tenant, each, 0);
    got[d.tenant] += each;
  }
  return got;
}

}  // namespace

TEST_CASE("fair: picks only runnable tenants, with the configured slice") {
  FairPolicy p(PolicyOptions{3 * kMillisecond});
  CHECK(p.name() == "fair");
  p.add_tenant(1, {}, 0);
  p.add_tenant(2, {}, 0);
  CHECK(p.pick(0).kind == Decision::Kind::kIdle);
  p.runnable(2, 0);
  const Decision d = p.pick(0);
  CHECK(d.kind == Decision::Kind::kRun);
  CHECK(d.tenant == 2);
  CHECK(d.slice == 3 * kMillisecond);
  p.set_options(PolicyOptions{kMillisecond});
  CHECK(p.pick(0).slice == kMillisecond);
  p.idle(2, 0);
  CHECK(p.pick(0).kind == Decision::Kind::kIdle);
}

TEST_CASE("fair: courses share by course weight, students by their own") {
  FairPolicy p(PolicyOptions{});
  // Course 1 (weight 3): students of weight 1 and 2. Course 2 (weight 1): one student.
  p.add_tenant(1, {1, 1, 3}, 0);
  p.add_tenant(2, {2, 1, 3}, 0);
  p.add_tenant(3, {1, 2, 1}, 0);
  for (TenantId t : {1u, 2u, 3u}) p.runnable(t, 0);
  auto got = serve(p, 40000, 100 * kMicrosecond);
  const double total = static_cast<double>(got[1] + got[2] + got[3]);
  CHECK(static_cast<double>(got[1]) / total == Approx(0.25).epsilon(0.01));
  CHECK(static_cast<double>(got[2]) / total == Approx(0.50).epsilon(0.01));
  CHECK(static_cast<double>(got[3]) / total == Approx(0.25).epsilon(0.01));
}

TEST_CASE("fair: weight and course changes take effect") {
  FairPolicy p(PolicyOptions{});
  p.add_tenant(1, {1, 0, 1}, 0);
  p.add_tenant(2, {1, 0, 1}, 0);
  p.runnable(1, 0);
  p.runnable(2, 0);
  p.update_tenant(1, {3, 0, 1}, 0);
  auto got = serve(p, 20000, 100 * kMicrosecond);
  CHECK(static_cast<double>(got[1]) / static_cast<double>(got[2]) == Approx(3.0).epsilon(0.02));

  // Tenant 2 moves to a course of its own with three times the weight of
  // group 0, where tenant 1 is now alone.
  p.update_tenant(2, {1, 9, 3}, 0);
  got = serve(p, 20000, 100 * kMicrosecond);
  CHECK(static_cast<double>(got[2]) / static_cast<double>(got[1]) == Approx(3.0).epsilon(0.02));
}

TEST_CASE("fair: removing tenants, even the running one, is safe") {
  FairPolicy p(PolicyOptions{});
  for (TenantId t = 1; t <= 3; ++t) {
    p.add_tenant(t, {1, t, 1}, 0);
    p.runnable(t, 0);
  }
  const Decision d = p.pick(0);
  REQUIRE(d.kind == Decision::Kind::kRun);
  p.remove_tenant(d.tenant, 0);
  p.charge(d.tenant, kMillisecond, 0);  // a late charge for a tenant now gone
  CHECK_FALSE(p.should_yield(d.tenant, 0));
  std::map<TenantId, int> seen;
  for (int i = 0; i < 10; ++i) {
    const Decision n = p.pick(0);
    REQUIRE(n.kind == Decision::Kind::kRun);
    CHECK(n.tenant != d.tenant);
    p.charge(n.tenant, kMillisecond, 0);
    seen[n.tenant]++;
  }
  CHECK(seen.size() == 2);
  for (TenantId t = 1; t <= 3; ++t) p.remove_tenant(t, 0);
  CHECK(p.pick(0).kind == Decision::Kind::kIdle);
}

TEST_CASE("fair: repeated and unknown events are harmless") {
  FairPolicy p(PolicyOptions{});
  p.runnable(42, 0);  // unknown
  p.idle(42, 0);
  p.charge(42, 5, 0);
  p.add_tenant(1, {0, 0, 0}, 0);  // weights below 1 are clamped
  p.add_tenant(1, {2, 0, 1}, 0);  // a second add updates
  p.runnable(1, 0);
  p.runnable(1, 0);
  CHECK(p.pick(0).tenant == 1);
  p.idle(1, 0);
  p.idle(1, 0);
  CHECK(p.pick(0).kind == Decision::Kind::kIdle);
}

TEST_CASE("fair: a tenant that wakes during another's turn ends it once that one has had its part") {
  FairPolicy p(PolicyOptions{});
  p.add_tenant(1, {}, 0);
  p.add_tenant(2, {}, 0);
  p.runnable(1, 0);
  REQUIRE(p.pick(0).tenant == 1);
  p.charge(1, 50 * kMicrosecond, 0);
  CHECK_FALSE(p.should_yield(1, 0));
  p.runnable(2, 0);
  CHECK(p.should_yield(1, 0));
  CHECK_FALSE(p.should_yield(2, 0));  // not the running tenant
  CHECK(p.pick(0).tenant == 2);
}

TEST_CASE("fair: course shares hold while a student comes and goes") {
  // Course 1 has a busy student and one that comes and goes (its lag moves
  // between it and its course as it does); course 2 one busy student.
  FairPolicy p(PolicyOptions{});
  p.add_tenant(1, {1, 1, 1}, 0);
  p.add_tenant(2, {1, 1, 1}, 0);
  p.add_tenant(3, {1, 2, 1}, 0);
  p.runnable(1, 0);
  p.runnable(3, 0);
  std::map<TenantId, Nanos> got;
  for (int round = 0; round < 2000; ++round) {
    p.runnable(2, 0);
    for (int i = 0; i < 6; ++i) {
      const Decision d = p.pick(0);
      p.charge(d.tenant, 700 * kMicrosecond, 0);
      got[d.tenant] += 700 * kMicrosecond;
      if (d.tenant == 2) break;  // runs one turn, then goes idle
    }
    p.idle(2, 0);
  }
  // Course 1 gets half; it is the same whoever of its students used it.
  const double c1 = static_cast<double>(got[1] + got[2]);
  CHECK(c1 / static_cast<double>(got[3]) == Approx(1.0).epsilon(0.02));
}
