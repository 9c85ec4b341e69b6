// FixedSharePolicy's events: shares follow who is registered, a tenant runs
// one command a turn, and waits out its share between commands.
#include <catch2/catch.hpp>

#include "vgpu/scheduler/fixed_share_policy.h"

using namespace vgpu::scheduler;

TEST_CASE("fixed-share: shares come from registered tenants, busy or not") {
  FixedSharePolicy p(PolicyOptions{});
  CHECK(p.name() == "fixed-share");
  p.add_tenant(1, {1, 0, 1}, 0);
  CHECK(p.share(1) == Approx(1.0));
  p.add_tenant(2, {3, 0, 1}, 0);
  CHECK(p.share(1) == Approx(0.25));
  CHECK(p.share(2) == Approx(0.75));
  p.add_tenant(3, {1, 7, 1}, 0);  // a course of its own, same weight as group 0
  CHECK(p.share(3) == Approx(0.5));
  CHECK(p.share(2) == Approx(0.375));
  p.update_tenant(3, {1, 7, 3}, 0);
  CHECK(p.share(3) == Approx(0.75));
  p.remove_tenant(3, 0);
  CHECK(p.share(1) == Approx(0.25));
  CHECK(p.share(99) == 0.0);
}

TEST_CASE("fixed-share: a tenant waits out its share after each command") {
  FixedSharePolicy p(PolicyOptions{});
  p.add_tenant(1, {1, 0, 1}, 0);
  p.add_tenant(2, {1, 0, 1}, 0);  // registered, never busy
  p.runnable(1, 0);
  Decision d = p.pick(0);
  REQUIRE(d.kind == Decision::Kind::kRun);
  CHECK(d.slice == 1);  // one command
  p.charge(1, kMillisecond, kMillisecond);
  // Half the GPU: after 1 ms of work it may start again at 2 ms.
  d = p.pick(kMillisecond);
  REQUIRE(d.kind == Decision::Kind::kWaitUntil);
  CHECK(d.until == 2 * kMillisecond);
  CHECK(p.pick(2 * kMillisecond).kind == Decision::Kind::kRun);
  // Idle time is not saved up: after a long pause it still waits per command.
  p.idle(1, 2 * kMillisecond);
  CHECK(p.pick(10 * kMillisecond).kind == Decision::Kind::kIdle);
  p.runnable(1, 100 * kMillisecond);
  REQUIRE(p.pick(100 * kMillisecond).kind == Decision::Kind::kRun);
  p.charge(1, kMillisecond, 101 * kMillisecond);
  d = p.pick(101 * kMillisecond);
  REQUIRE(d.kind == Decision::Kind::kWaitUntil);
  CHECK(d.until == 102 * kMillisecond);
}

TEST_CASE("fixed-share: the tenant that has waited longest goes first") {
  FixedSharePolicy p(PolicyOptions{});
  for (TenantId t = 1; t <= 3; ++t) {
    p.add_tenant(t, {}, 0);
    p.runnable(t, 0);
  }
  std::vector<TenantId> order;
  Nanos now = 0;
  for (int i = 0; i < 6; ++i) {
    const Decision d = p.pick(now);
    REQUIRE(d.kind == Decision::Kind::kRun);
    order.push_back(d.tenant);
    now += kMillisecond;
    p.charge(d.tenant, kMillisecond, now);
  }
  CHECK(order == std::vector<TenantId>{1, 2, 3, 1, 2, 3});
}
