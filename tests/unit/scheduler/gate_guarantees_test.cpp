// The budget hook: a tenant the quota gate holds back is not scheduled, and
// its pending calls get what the gate says (wait, or an error), while the
// others carry on. Simulated, with a gate that has a budget per tenant.
#include <catch2/catch.hpp>

#include "metrics.h"
#include "simulator.h"
#include "vgpu/scheduler/fair_policy.h"

using namespace vgpu;
using namespace vgpu::scheduler;
using namespace vgpu::sched_sim;

namespace {

class RejectCount final : public Observer {
 public:
  uint64_t rejected = 0;
  void on_rejected(TenantId, uint64_t kernels, Nanos) override { rejected += kernels; }
};

}  // namespace

TEST_CASE("a tenant out of budget runs no more than one command past it, then waits or fails") {
  const Grant::Kind when_spent = GENERATE(Grant::Kind::kWait, Grant::Kind::kReject);
  FairPolicy policy{PolicyOptions{}};
  BudgetGate gate(when_spent);
  Simulator sim(&policy, &gate, 5);
  TenantSpec spec;
  const TenantId limited = sim.add(spec);
  const TenantId other = sim.add(spec);
  const Nanos budget = 500 * kMillisecond;
  gate.set_budget(limited, budget);
  ServiceTally got;
  RejectCount rejects;
  sim.observe(&got);
  sim.observe(&rejects);
  sim.run(10 * kSecond);

  CHECK(got.service(limited) >= budget);
  CHECK(got.service(limited) <= budget + sim.longest_kernel());
  CHECK(got.service(other) >= 9 * kSecond);  // the rest of the GPU went to the other
  if (when_spent == Grant::Kind::kReject) {
    CHECK(rejects.rejected > 0);
  } else {
    CHECK(rejects.rejected == 0);
    // Raising the budget lets it run again (the harness re-asks every 100 ms).
    gate.set_budget(limited, budget + kSecond);
    const Nanos before = got.service(limited);
    sim.run(14 * kSecond);
    CHECK(got.service(limited) - before >= kSecond - sim.longest_kernel());
  }
}
