#include "common/tenant_ledger.h"

#include <algorithm>

namespace vgpu::executor::common {

bool TenantLedger::reserve(TenantId tenant, uint64_t bytes) {
  MutexLock lock(mu_);
  TenantMemory& t = tenants_[tenant];
  const uint64_t limit = t.cap == 0 ? device_bytes_ : std::min(t.cap, device_bytes_);
  if (bytes > limit || t.used > limit - bytes) return false;
  if (bytes > device_bytes_ - device_used_) return false;
  t.used += bytes;
  t.peak = std::max(t.peak, t.used);
  device_used_ += bytes;
  return true;
}

void TenantLedger::release(TenantId tenant, uint64_t bytes) {
  MutexLock lock(mu_);
  TenantMemory& t = tenants_[tenant];
  t.used -= std::min(t.used, bytes);
  device_used_ -= std::min(device_used_, bytes);
}

void TenantLedger::set_cap(TenantId tenant, uint64_t bytes) {
  MutexLock lock(mu_);
  tenants_[tenant].cap = bytes;
}

TenantMemory TenantLedger::get(TenantId tenant) const {
  MutexLock lock(mu_);
  auto it = tenants_.find(tenant);
  return it == tenants_.end() ? TenantMemory{} : it->second;
}

uint64_t TenantLedger::visible_total(TenantId tenant) const {
  MutexLock lock(mu_);
  auto it = tenants_.find(tenant);
  const uint64_t cap = it == tenants_.end() ? 0 : it->second.cap;
  return cap == 0 ? device_bytes_ : std::min(cap, device_bytes_);
}

uint64_t TenantLedger::available(TenantId tenant) const {
  MutexLock lock(mu_);
  auto it = tenants_.find(tenant);
  const TenantMemory t = it == tenants_.end() ? TenantMemory{} : it->second;
  const uint64_t limit = t.cap == 0 ? device_bytes_ : std::min(t.cap, device_bytes_);
  const uint64_t room = limit > t.used ? limit - t.used : 0;
  return std::min(room, device_bytes_ - std::min(device_used_, device_bytes_));
}

std::vector<std::pair<TenantId, TenantMemory>> TenantLedger::all() const {
  MutexLock lock(mu_);
  return {tenants_.begin(), tenants_.end()};
}

uint64_t TenantLedger::device_used() const {
  MutexLock lock(mu_);
  return device_used_;
}

}  // namespace vgpu::executor::common
