#include "vgpu/policy/accounting.h"

#include <algorithm>

namespace vgpu::policy {

Accounting::Accounting(Store* store, UnixClock clock)
    : store_(store), clock_(std::move(clock)), book_([store](const Holder& h, const Window& w) {
        int64_t ns = 0;
        // A ledger that cannot be read counts as nothing spent: the daemon
        // keeps serving, and the error shows in its log through the store.
        if (!store->ledger_sum(h.student, h.vm, w.start, w.end, &ns).ok()) return int64_t{0};
        return ns;
      }) {}

void Accounting::enable_leases(std::function<void()> wake) {
  MutexLock lock(mu_);
  book_.set_leased();
  lease_wake_ = std::move(wake);
}

std::vector<LeaseNeed> Accounting::lease_needs(const LeaseRules& rules, bool all_back) {
  MutexLock lock(mu_);
  return book_.lease_needs(clock_(), rules, all_back);
}

void Accounting::lease_answer(const LeaseNeed& need, const LeaseGrant* grant,
                              const LeaseRules& rules) {
  MutexLock lock(mu_);
  book_.lease_answer(need, grant, clock_(), rules);
}

bool Accounting::load(TenantId tenant, Tenant* t) {
  VmPolicy p;
  if (!store_->vm_policy(tenant, &p).ok()) return false;
  t->policy = p;
  t->quota = p.student_id ? resolve_student_quota(p.student_fields, p.course_fields)
                          : resolve_default_quota(p.default_fields);
  if (p.vm_placement) t->quota.placement = p.vm_placement;  // the VM's own wins
  t->holder = p.student_id ? Holder{p.student_id, 0} : Holder{0, tenant};
  // Periods on the course's wall clock (a name tzdata no longer knows: UTC).
  book_.configure(t->holder, t->quota.gpu_time, clock_(), TimeZone::find_or_utc(p.time_zone));
  // Over budget already (e.g. after a restart): best-effort starts now.
  const BudgetState s = book_.state(t->holder, clock_());
  t->best_effort = t->quota.on_exhaust == OnExhaust::kBestEffort && s.limited && s.left_ns() == 0;
  return true;
}

TenantPlan Accounting::plan_of(const Tenant& t) const {
  TenantPlan p;
  p.tenant = t.policy.tenant;
  if (!t.policy.student_id && t.policy.refuse_unassigned) {
    p.admitted = false;
    p.why = "VM '" + t.policy.vm +
            "' is not bound to a student and this host refuses unassigned VMs (a teacher binds it "
            "with `vgpuctl student add NAME --course C --vm " +
            t.policy.vm + "`)";
  }
  p.memory_cap = t.quota.memory;
  p.weight = t.quota.weight;
  p.course = t.policy.course_id;
  p.course_weight = t.policy.course_fields.weight.value_or(1);
  p.best_effort = t.best_effort;
  p.placement = t.quota.placement;
  return p;
}

bool Accounting::reload(TenantId tenant, Tenant* t) {
  Tenant next;
  if (!load(tenant, &next)) return false;  // keep what it had
  next.outstanding = t->outstanding;
  if (!(next.holder == t->holder) && t->outstanding) {
    // Rebound while a slice runs: give the old holder its reservation back.
    book_.settle(t->holder, t->outstanding, 0, clock_());
    next.outstanding = 0;
  }
  *t = next;
  return true;
}

TenantPlan Accounting::connect(TenantId tenant) {
  MutexLock lock(mu_);
  auto it = tenants_.find(tenant);
  Tenant fresh;
  Tenant& t = it == tenants_.end() ? fresh : it->second;
  if (!(it == tenants_.end() ? load(tenant, &t) : reload(tenant, &t))) {
    TenantPlan p;
    p.tenant = tenant;
    p.admitted = false;
    p.why = "the policy database is unavailable";
    return p;
  }
  if (it == tenants_.end()) tenants_[tenant] = fresh;
  return plan_of(t);
}

std::vector<TenantPlan> Accounting::refresh() {
  MutexLock lock(mu_);
  std::vector<TenantPlan> plans;
  for (auto& [id, t] : tenants_) {
    if (reload(id, &t)) plans.push_back(plan_of(t));
  }
  return plans;
}

TenantPlan Accounting::plan(TenantId tenant) {
  MutexLock lock(mu_);
  auto it = tenants_.find(tenant);
  if (it == tenants_.end()) {
    TenantPlan p;
    p.tenant = tenant;
    return p;
  }
  return plan_of(it->second);
}

Admission Accounting::reserve(TenantId tenant, int64_t want_ns) {
  MutexLock lock(mu_);
  auto it = tenants_.find(tenant);
  if (it == tenants_.end()) return {Admission::Kind::kRun, want_ns, false};
  Tenant& t = it->second;
  const BudgetBook::Reservation r = book_.reserve(t.holder, want_ns, clock_());
  Admission d;
  if (r.granted) {
    d.budget_ns = r.ns;
    t.outstanding += r.ns;
    d.plan_changed = t.best_effort;  // renewed or raised: back in its course
    t.best_effort = false;
    return d;
  }
  if (r.lease_pending) {
    // The budget may have time left on the store: wait for a lease.
    d.kind = Admission::Kind::kWait;
    d.lease_pending = true;
    if (lease_wake_) lease_wake_();
    return d;
  }
  switch (t.quota.on_exhaust) {
    case OnExhaust::kReject:
      d.kind = Admission::Kind::kReject;
      break;
    case OnExhaust::kWait:
      d.kind = Admission::Kind::kWait;
      break;
    case OnExhaust::kBestEffort:
      // Runs on, unreserved; the scheduler puts it behind everyone in budget.
      d.budget_ns = want_ns;
      d.best_effort = true;
      d.plan_changed = !t.best_effort;
      t.best_effort = true;
      break;
  }
  return d;
}

void Accounting::settle(TenantId tenant, int64_t reserved_ns, int64_t used_ns) {
  MutexLock lock(mu_);
  auto it = tenants_.find(tenant);
  if (it == tenants_.end()) return;
  // Only what was reserved from the book goes back (a best-effort slice
  // reserved nothing); the measured time is charged either way.
  Tenant& t = it->second;
  const int64_t back = std::min(t.outstanding, reserved_ns);
  t.outstanding -= back;
  if (book_.settle(t.holder, back, used_ns, clock_()) && lease_wake_) lease_wake_();
}

void Accounting::attribute(std::vector<UsageRecord>* batch) {
  MutexLock lock(mu_);
  for (UsageRecord& r : *batch) {
    auto it = tenants_.find(r.tenant);
    r.student = it == tenants_.end() ? 0 : it->second.policy.student_id;
  }
}

TenantStatus Accounting::status_locked(TenantId id, Tenant& t) {
  TenantStatus s;
  s.tenant = id;
  s.vm = t.policy.vm;
  s.student = t.policy.student;
  s.course = t.policy.course;
  s.quota = t.quota;
  s.budget = book_.state(t.holder, clock_());
  s.best_effort = t.best_effort;
  return s;
}

std::vector<TenantStatus> Accounting::status() {
  MutexLock lock(mu_);
  std::vector<TenantStatus> out;
  for (auto& [id, t] : tenants_) out.push_back(status_locked(id, t));
  return out;
}

TenantStatus Accounting::status_of(TenantId tenant) {
  MutexLock lock(mu_);
  auto it = tenants_.find(tenant);
  if (it == tenants_.end()) return {};
  return status_locked(tenant, it->second);
}

}  // namespace vgpu::policy
