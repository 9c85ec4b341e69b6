#include "simulator.h"

#include <algorithm>

namespace vgpu::sched_sim {

using scheduler::Grant;
using scheduler::TurnPlan;

namespace {
// How often tenants the gate holds back are asked about again (the
// dispatcher does the same every 100 ms when it has nothing else to do).
constexpr Nanos kPokeEvery = 100 * scheduler::kMillisecond;
}  // namespace

Simulator::Simulator(scheduler::SchedulingPolicy* policy, scheduler::QuotaGate* gate, uint64_t seed)
    : policy_(policy), gate_(gate), seed_(seed) {}

TenantId Simulator::add(const TenantSpec& spec) {
  Tenant t;
  t.spec = spec;
  const auto id = static_cast<TenantId>(tenants_.size() + 1);
  t.rng = Rng(seed_ * 0x9e3779b97f4a7c15ull + id);
  tenants_.push_back(std::move(t));
  schedule(spec.join_at, id, EventKind::kJoin);
  if (spec.leave_at != kNever) schedule(spec.leave_at, id, EventKind::kLeave);
  return id;
}

void Simulator::schedule(Nanos at, TenantId tenant, EventKind kind) {
  events_.push({at, seq_++, tenant, kind});
}

void Simulator::arrive(Tenant& t, TenantId id, uint64_t n, Nanos at) {
  if (n == 0) return;
  const bool was_empty = t.queued == 0;
  t.queued += n;
  if (!was_empty) return;
  // Active from when its work came, though it is seen after the command that
  // was running then: it waited for the rest of that command.
  for (Observer* o : observers_) o->on_active(id, at);
  if (std::find(held_.begin(), held_.end(), id) == held_.end()) policy_->runnable(id, clock_.t);
}

void Simulator::process_events(ArrivalListener* arrivals) {
  while (!events_.empty() && events_.top().at <= clock_.t) {
    const Event e = events_.top();
    events_.pop();
    if (arrivals && e.kind == EventKind::kArrive) arrivals->before_runnable(e.at);
    Tenant& t = tenants_[e.tenant - 1];
    if (t.gone) continue;
    const Arrivals& a = t.spec.arrivals;
    switch (e.kind) {
      case EventKind::kJoin:
        t.present = true;
        policy_->add_tenant(e.tenant, t.spec.params, clock_.t);
        for (Observer* o : observers_) o->on_join(e.tenant, t.spec.params, clock_.t);
        if (a.kind == Arrivals::Kind::kBursts) {
          schedule(clock_.t, e.tenant, EventKind::kArrive);
        } else if (a.kind != Arrivals::Kind::kNone) {
          arrive(t, e.tenant, std::max<uint32_t>(a.burst, 1), e.at);
        }
        break;
      case EventKind::kArrive:
        if (t.stopped) break;
        if (a.kind == Arrivals::Kind::kBursts) {
          arrive(t, e.tenant, a.burst, e.at);
          schedule(clock_.t + a.period, e.tenant, EventKind::kArrive);
        } else {
          arrive(t, e.tenant, std::max<uint32_t>(a.burst, 1), e.at);
        }
        break;
      case EventKind::kLeave:
        if (t.queued > 0) {
          for (Observer* o : observers_) o->on_idle(e.tenant, clock_.t);
        }
        t.queued = 0;
        t.gone = true;
        held_.erase(std::remove(held_.begin(), held_.end(), e.tenant), held_.end());
        policy_->remove_tenant(e.tenant, clock_.t);
        for (Observer* o : observers_) o->on_leave(e.tenant, clock_.t);
        break;
    }
  }
}

scheduler::TurnSource::QueueState Simulator::state(TenantId tenant) {
  const Tenant& t = tenants_[tenant - 1];
  if (!t.present || t.gone) return QueueState::kGone;
  return t.queued == 0 ? QueueState::kEmpty : QueueState::kReady;
}

bool Simulator::run_next(TenantId tenant, Nanos /*budget: one command at a time*/,
                         Nanos* gpu_time, bool* more) {
  Tenant& t = tenants_[tenant - 1];
  if (t.queued == 0) return false;
  const Nanos length = t.spec.kernels.draw(t.rng);
  for (Observer* o : observers_) o->on_kernel(tenant, clock_.t, length);
  clock_.t += length;
  busy_ += length;
  ++kernels_;
  longest_ = std::max(longest_, length);
  if (t.spec.arrivals.kind != Arrivals::Kind::kAlwaysBusy) --t.queued;
  *gpu_time = length;
  *more = t.queued > 0;
  if (!*more) {
    for (Observer* o : observers_) o->on_idle(tenant, clock_.t);
    if (t.spec.arrivals.kind == Arrivals::Kind::kSynchronous) {
      schedule(clock_.t + t.spec.arrivals.think, tenant, EventKind::kArrive);
    }
  }
  return true;
}

void Simulator::reject(TenantId tenant) {
  Tenant& t = tenants_[tenant - 1];
  held_.erase(std::remove(held_.begin(), held_.end(), tenant), held_.end());
  if (t.queued == 0) return;
  // Its pending calls fail; a program that gets errors stops submitting.
  for (Observer* o : observers_) o->on_rejected(tenant, t.queued, clock_.t);
  for (Observer* o : observers_) o->on_idle(tenant, clock_.t);
  t.queued = 0;
  t.stopped = true;
  policy_->idle(tenant, clock_.t);
}

void Simulator::poke_held() {
  if (held_.empty() || clock_.t < next_poke_) return;
  next_poke_ = clock_.t + kPokeEvery;
  const std::vector<TenantId> held = held_;
  for (TenantId id : held) {
    const Grant g = gate_->reserve(id, 0);
    gate_->settle(id, 0, 0);
    if (g.kind == Grant::Kind::kWait) continue;
    if (g.kind == Grant::Kind::kReject) {
      reject(id);
      continue;
    }
    held_.erase(std::remove(held_.begin(), held_.end(), id), held_.end());
    if (tenants_[id - 1].queued > 0) policy_->runnable(id, clock_.t);
  }
}

void Simulator::run(Nanos until) {
  while (clock_.t < until) {
    process_events();
    poke_held();
    const TurnPlan plan = plan_turn(*policy_, *gate_, *this, clock_.t);
    Nanos next = kNever;
    switch (plan.kind) {
      case TurnPlan::Kind::kRun:
        ++turns_;
        run_turn(*policy_, *gate_, *this, clock_, plan);
        continue;
      case TurnPlan::Kind::kRetry:
        continue;
      case TurnPlan::Kind::kHeld:
        if (held_.empty()) next_poke_ = clock_.t + kPokeEvery;
        held_.push_back(plan.tenant);
        continue;
      case TurnPlan::Kind::kRejected:
        reject(plan.tenant);
        continue;
      case TurnPlan::Kind::kWaitUntil:
        next = plan.until;
        break;
      case TurnPlan::Kind::kIdle:
        break;
    }
    // Nothing runs now: move the clock to the next thing that can change that.
    next = std::min(next, next_event());
    if (!held_.empty()) next = std::min(next, next_poke_);
    clock_.t = std::max(clock_.t + 1, std::min(next, until));
  }
}

void Simulator::finish() {
  for (Observer* o : observers_) o->on_end(clock_.t);
}

void BudgetGate::set_budget(TenantId tenant, Nanos budget) {
  if (accounts_.size() <= tenant) accounts_.resize(tenant + 1);
  accounts_[tenant].limited = true;
  accounts_[tenant].budget = budget;
}

Nanos BudgetGate::used(TenantId tenant) const {
  return tenant < accounts_.size() ? accounts_[tenant].used : 0;
}

Grant BudgetGate::reserve(TenantId tenant, Nanos want) {
  if (tenant >= accounts_.size() || !accounts_[tenant].limited) {
    return {Grant::Kind::kRun, want, Status::kSuccess};
  }
  const Account& a = accounts_[tenant];
  const Nanos left = a.budget - a.used;
  if (left <= 0) {
    return {when_spent_, 0,
            when_spent_ == Grant::Kind::kReject ? Status::kNotPermitted : Status::kSuccess};
  }
  return {Grant::Kind::kRun, std::min(want, left), Status::kSuccess};
}

void BudgetGate::settle(TenantId tenant, Nanos, Nanos used) {
  if (tenant >= accounts_.size()) accounts_.resize(tenant + 1);
  accounts_[tenant].used += used;
}

}  // namespace vgpu::sched_sim
