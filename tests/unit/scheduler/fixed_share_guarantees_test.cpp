// fixed-share's guarantee, measured in simulation: in any window, a tenant's
// GPU time exceeds share * window by at most one kernel, even when it is the
// only tenant with work. WindowCap checks every window (the worst one starts
// at a kernel's start and ends at a kernel's end, and it checks all of those).
#include <catch2/catch.hpp>

#include "metrics.h"
#include "simulator.h"
#include "vgpu/scheduler/fixed_share_policy.h"

using namespace vgpu;
using namespace vgpu::scheduler;
using namespace vgpu::sched_sim;

namespace {

struct Run {
  FixedSharePolicy policy{PolicyOptions{}};
  UnlimitedGate gate;
  Simulator sim{&policy, &gate, 99};
  std::vector<TenantParams> params;

  TenantId add(TenantParams p, Arrivals arrivals, KernelLengths kernels = KernelLengths::mixed()) {
    TenantSpec s;
    s.params = p;
    s.arrivals = arrivals;
    s.kernels = kernels;
    params.push_back(p);
    return sim.add(s);
  }
};

}  // namespace

TEST_CASE("fixed-share: a tenant alone on the GPU gets no more than its share") {
  Run r;
  const TenantId busy = r.add({1, 0, 1}, Arrivals::always_busy());
  for (int i = 0; i < 3; ++i) r.add({1, 0, 1}, Arrivals::none());  // connected, idle
  const std::vector<double> shares = entitled_shares(r.params);
  WindowCap cap(shares);
  ServiceTally got;
  r.sim.observe(&cap);
  r.sim.observe(&got);
  r.sim.run(60 * kSecond);
  const double achieved = static_cast<double>(got.service(busy)) / static_cast<double>(r.sim.now());
  CHECK(cap.worst_excess(busy) <= static_cast<double>(r.sim.longest_kernel()));
  CHECK(achieved <= 0.25 + 1e-3);
  CHECK(achieved >= 0.24);  // and it does get its share
  WARN("fixed-share, alone among 4: share " << achieved * 100 << "%, worst window excess "
       << cap.worst_excess(busy) / 1e6 << " ms (bound " << static_cast<double>(r.sim.longest_kernel()) / 1e6
       << " ms)");
}

TEST_CASE("fixed-share: busy tenants with weights and courses stay under their shares") {
  Run r;
  for (uint32_t w : {1u, 2u, 4u, 8u}) r.add({w, 1, 3}, Arrivals::always_busy());
  r.add({1, 2, 1}, Arrivals::always_busy(), KernelLengths::fixed(10 * kMillisecond));
  r.add({1, 2, 1}, Arrivals::always_busy(), KernelLengths::fixed(5 * kMicrosecond));
  r.add({2, 2, 1}, Arrivals::bursts(50, 200 * kMillisecond));
  const std::vector<double> shares = entitled_shares(r.params);
  WindowCap cap(shares);
  ServiceTally got;
  r.sim.observe(&cap);
  r.sim.observe(&got);
  r.sim.run(60 * kSecond);
  for (TenantId t = 1; t <= shares.size(); ++t) {
    INFO("tenant " << t << " share " << shares[t - 1] << " excess " << cap.worst_excess(t));
    CHECK(cap.worst_excess(t) <= static_cast<double>(r.sim.longest_kernel()));
  }
  WARN("fixed-share, 7 tenants in 2 courses: worst window excess " << cap.worst_excess() / 1e6
       << " ms; GPU busy " << static_cast<double>(r.sim.busy_time()) / static_cast<double>(r.sim.now()) * 100
       << "%");
}
