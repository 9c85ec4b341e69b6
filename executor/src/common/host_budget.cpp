#include "common/host_budget.h"

namespace vgpu::executor::common {

HostCharge& HostCharge::operator=(HostCharge&& o) noexcept {
  if (this != &o) {
    reset();
    budget_ = std::move(o.budget_);
    tenant_ = o.tenant_;
    bytes_ = o.bytes_;
    o.bytes_ = 0;
  }
  return *this;
}

void HostCharge::reset() {
  if (budget_ && bytes_ > 0) budget_->release(tenant_, bytes_);
  budget_.reset();
  bytes_ = 0;
}

std::shared_ptr<HostBudget> HostBudget::create(uint64_t per_tenant_limit) {
  return std::shared_ptr<HostBudget>(new HostBudget(per_tenant_limit));
}

bool HostBudget::charge(TenantId tenant, uint64_t bytes, HostCharge* out) {
  out->reset();
  if (limit_ == 0) return true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    uint64_t& used = used_[tenant];
    if (bytes > limit_ || used > limit_ - bytes) return false;
    used += bytes;
  }
  out->budget_ = shared_from_this();
  out->tenant_ = tenant;
  out->bytes_ = bytes;
  return true;
}

uint64_t HostBudget::used(TenantId tenant) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = used_.find(tenant);
  return it == used_.end() ? 0 : it->second;
}

void HostBudget::release(TenantId tenant, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = used_.find(tenant);
  if (it == used_.end()) return;
  it->second -= std::min(it->second, bytes);
  if (it->second == 0) used_.erase(it);
}

}  // namespace vgpu::executor::common
