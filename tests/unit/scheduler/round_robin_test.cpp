#include <catch2/catch.hpp>

#include "vgpu/scheduler/round_robin.h"

using namespace vgpu::scheduler;

TEST_CASE("best-effort takes runnable tenants in turn") {
  RoundRobinPolicy p(2 * kMillisecond);
  CHECK(p.pick(0).kind == Decision::Kind::kIdle);
  p.runnable(1, 0);
  p.runnable(2, 0);
  p.runnable(3, 0);
  p.runnable(2, 0);  // already runnable: no second turn
  std::vector<TenantId> order;
  for (int i = 0; i < 6; ++i) {
    const Decision d = p.pick(0);
    REQUIRE(d.kind == Decision::Kind::kRun);
    CHECK(d.slice == 2 * kMillisecond);
    order.push_back(d.tenant);
  }
  CHECK(order == std::vector<TenantId>{1, 2, 3, 1, 2, 3});
  p.idle(2, 0);
  CHECK(p.pick(0).tenant == 1);
  CHECK(p.pick(0).tenant == 3);
  p.remove_tenant(1, 0);
  p.remove_tenant(3, 0);
  CHECK(p.pick(0).kind == Decision::Kind::kIdle);
}
