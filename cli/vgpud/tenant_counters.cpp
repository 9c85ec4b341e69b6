#include "tenant_counters.h"

namespace vgpu::daemon {

void TenantCounters::opened(scheduler::TenantId tenant, const std::string& vm) {
  std::lock_guard lock(mu_);
  TenantCount& t = tenants_[tenant];
  t.vm = vm;
  t.channels++;
}

void TenantCounters::closed(scheduler::TenantId tenant) {
  std::lock_guard lock(mu_);
  auto it = tenants_.find(tenant);
  if (it == tenants_.end()) return;
  if (it->second.channels > 0) it->second.channels--;
  forget_if_idle(it);
}

void TenantCounters::waits(scheduler::TenantId tenant, const std::string& vm) {
  std::lock_guard lock(mu_);
  TenantCount& t = tenants_[tenant];
  t.vm = vm;
  t.waiting++;
}

void TenantCounters::waited(scheduler::TenantId tenant) {
  std::lock_guard lock(mu_);
  auto it = tenants_.find(tenant);
  if (it == tenants_.end()) return;
  if (it->second.waiting > 0) it->second.waiting--;
  forget_if_idle(it);
}

void TenantCounters::forget_if_idle(std::map<scheduler::TenantId, TenantCount>::iterator it) {
  const TenantCount& t = it->second;
  if (t.channels == 0 && t.waiting == 0 && t.violations() == 0 && t.work_failed == 0 &&
      t.backpressure == 0) {
    tenants_.erase(it);
  }
}

void TenantCounters::bump(scheduler::TenantId tenant, uint64_t TenantCount::*field) {
  std::lock_guard lock(mu_);
  tenants_[tenant].*field += 1;
  totals_.*field += 1;
}

std::map<scheduler::TenantId, TenantCount> TenantCounters::snapshot() const {
  std::lock_guard lock(mu_);
  return tenants_;
}

TenantCount TenantCounters::totals() const {
  std::lock_guard lock(mu_);
  return totals_;
}

}  // namespace vgpu::daemon
