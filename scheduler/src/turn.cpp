#include "vgpu/scheduler/turn.h"

#include <algorithm>

namespace vgpu::scheduler {

TurnPlan plan_turn(SchedulingPolicy& policy, QuotaGate& gate, TurnSource& source, Nanos now) {
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

namespace {

// Charges a command that ran over [start, end] on the turn's clock in parts,
// one before each tenant that arrived while it ran (its GPU time spread
// evenly over that interval), so each part is charged with the tenants that
// were waiting for it.
class SplitCharge final : public TurnSource::ArrivalListener {
 public:
  SplitCharge(SchedulingPolicy& policy, TenantId tenant, Nanos gpu, Nanos start, Nanos end)
      : policy_(policy), tenant_(tenant), gpu_(gpu), start_(start), end_(end) {}

  void before_runnable(Nanos at) override {
    if (end_ <= start_ || at <= start_) return;  // arrived before it started: owed none of it
    const auto part = static_cast<Nanos>(static_cast<long double>(gpu_) *
                                         static_cast<long double>(std::min(at, end_) - start_) /
                                         static_cast<long double>(end_ - start_));
    if (part > charged_) {
      policy_.charge(tenant_, part - charged_, at);
      charged_ = part;
    }
  }
  void rest(Nanos now) {
    if (gpu_ > charged_) policy_.charge(tenant_, gpu_ - charged_, now);
  }

 private:
  SchedulingPolicy& policy_;
  const TenantId tenant_;
  const Nanos gpu_, start_, end_;
  Nanos charged_ = 0;
};

}  // namespace

Nanos run_turn(SchedulingPolicy& policy, QuotaGate& gate, TurnSource& source, const Clock& clock,
               const TurnPlan& plan) {
  const TenantId t = plan.tenant;
  Nanos used = 0;
  for (;;) {
    Nanos gpu = 0;
    bool more = false;
    const Nanos start = clock.now();
    if (!source.run_next(t, std::max<Nanos>(plan.budget - used, 0), &gpu, &more)) {
      policy.idle(t, clock.now());
      break;
    }
    used += gpu;
    const Nanos now = clock.now();
    SplitCharge charge(policy, t, gpu, start, now);
    source.after_command(charge);
    charge.rest(now);
    if (!more) {
      policy.idle(t, now);
      // Its next work may have come while it was charged, and been told to a
      // policy that still had it runnable.
      if (source.state(t) == TurnSource::QueueState::kReady) policy.runnable(t, now);
      break;
    }
    if (used >= plan.budget) break;
    if (policy.should_yield(t, now)) break;
  }
  gate.settle(t, plan.budget, used);
  return used;
}

}  // namespace vgpu::scheduler
