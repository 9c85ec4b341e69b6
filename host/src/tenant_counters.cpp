#include "vgpu/host/tenant_counters.h"

namespace vgpu::host {

void TenantCounters::opened(scheduler::TenantId tenant, const std::string& vm) {
  count_up(tenant, vm, &TenantCount::channels);
}

void TenantCounters::closed(scheduler::TenantId tenant) {
  count_down(tenant, &TenantCount::channels);
}

void TenantCounters::waits(scheduler::TenantId tenant, const std::string& vm) {
  count_up(tenant, vm, &TenantCount::waiting);
}

void TenantCounters::waited(scheduler::TenantId tenant) {
  count_down(tenant, &TenantCount::waiting);
}

void TenantCounters::count_up(scheduler::TenantId tenant, const std::string& vm,
                              uint64_t TenantCount::*open) {
  std::lock_guard lock(mu_);
  TenantCount& t = tenants_[tenant];
  t.vm = vm;
  t.*open += 1;
}

void TenantCounters::count_down(scheduler::TenantId tenant, uint64_t TenantCount::*open) {
  std::lock_guard lock(mu_);
  auto it = tenants_.find(tenant);
  if (it == tenants_.end()) return;
  if (it->second.*open > 0) it->second.*open -= 1;
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

}  // namespace vgpu::host
