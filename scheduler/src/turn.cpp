#include "vgpu/scheduler/turn.h"

#include <algorithm>

namespace vgpu::scheduler {

TurnPlan plan_turn(Policy& policy, QuotaGate& gate, TurnSource& source, Nanos now) {
  const Decision d = policy.pick(now);
  if (d.kind == Decision::Kind::kIdle) return {};
  if (d.kind == Decision::Kind::kWaitUntil) {
    return {TurnPlan::Kind::kWaitUntil, 0, 0, d.until, Status::kSuccess};
  }
  switch (source.state(d.tenant)) {
    case TurnSource::QueueState::kGone:
      policy.remove_tenant(d.tenant, now);
      return {TurnPlan::Kind::kRetry, d.tenant, 0, 0, Status::kSuccess};
    case TurnSource::QueueState::kEmpty:
      policy.idle(d.tenant, now);
      return {TurnPlan::Kind::kRetry, d.tenant, 0, 0, Status::kSuccess};
    case TurnSource::QueueState::kReady:
      break;
  }
  const Grant grant = gate.reserve(d.tenant, d.slice);
  switch (grant.kind) {
    case Grant::Kind::kWait:
      gate.settle(d.tenant, 0, 0);
      policy.idle(d.tenant, now);
      return {TurnPlan::Kind::kHeld, d.tenant, 0, 0, Status::kSuccess};
    case Grant::Kind::kReject:
      gate.settle(d.tenant, 0, 0);
      policy.idle(d.tenant, now);
      return {TurnPlan::Kind::kRejected, d.tenant, 0, 0, grant.error};
    case Grant::Kind::kRun:
      break;
  }
  return {TurnPlan::Kind::kRun, d.tenant, std::min(d.slice, grant.budget), 0, Status::kSuccess};
}

Nanos run_turn(Policy& policy, QuotaGate& gate, TurnSource& source, const Clock& clock,
               const TurnPlan& plan) {
  const TenantId t = plan.tenant;
  Nanos used = 0;
  for (;;) {
    Nanos gpu = 0;
    bool more = false;
    if (!source.run_next(t, std::max<Nanos>(plan.budget - used, 0), &gpu, &more)) {
      policy.idle(t, clock.now());
      break;
    }
    used += gpu;
    const Nanos now = clock.now();
    policy.charge(t, gpu, now);
    if (!more) {
      policy.idle(t, now);
      break;
    }
    if (used >= plan.budget) break;
    source.between_commands();
    if (policy.should_yield(t, clock.now())) break;
  }
  gate.settle(t, plan.budget, used);
  return used;
}

}  // namespace vgpu::scheduler
