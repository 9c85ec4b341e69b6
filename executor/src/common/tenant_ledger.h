// Device memory charged per tenant (across its contexts) and for the whole
// device: a reservation fails, charging nothing, if it would pass the tenant's
// cap or the device's size. Shared by the sim and cuda backends.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "vgpu/executor/backend.h"
#include "vgpu/thread_annotations.h"

namespace vgpu::executor::common {

class TenantLedger {
 public:
  explicit TenantLedger(uint64_t device_bytes) : device_bytes_(device_bytes) {}

  bool reserve(TenantId tenant, uint64_t bytes);
  void release(TenantId tenant, uint64_t bytes);
  void set_cap(TenantId tenant, uint64_t bytes);
  TenantMemory get(TenantId tenant) const;
  // What the tenant sees as the device: min(cap, device).
  uint64_t visible_total(TenantId tenant) const;
  // What a reservation could still get now: the tenant's room under its cap,
  // bounded by what is left of the device.
  uint64_t available(TenantId tenant) const;
  // Accounting: every tenant's charge, and the whole device's.
  std::vector<std::pair<TenantId, TenantMemory>> all() const;
  uint64_t device_used() const;

 private:
  const uint64_t device_bytes_;
  mutable Mutex mu_;
  uint64_t device_used_ GUARDED_BY(mu_) = 0;
  std::unordered_map<TenantId, TenantMemory> tenants_ GUARDED_BY(mu_);
};

}  // namespace vgpu::executor::common
