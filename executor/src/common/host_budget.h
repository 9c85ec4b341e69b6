// Host memory a backend keeps for a tenant (parsed modules, and the images
// the cuda backend loads again into a fresh worker), bounded per tenant so
// that no guest can exhaust the host's memory by loading modules. Separate
// from the tenant's device-memory cap (TenantLedger).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "vgpu/executor/backend.h"

namespace vgpu::executor::common {

class HostBudget;

// Bytes charged to a tenant for as long as the charge lives (it is kept with
// what it pays for, so every way that thing is dropped gives them back).
class HostCharge {
 public:
  HostCharge() = default;
  HostCharge(HostCharge&& o) noexcept { *this = std::move(o); }
  HostCharge& operator=(HostCharge&& o) noexcept;
  HostCharge(const HostCharge&) = delete;
  HostCharge& operator=(const HostCharge&) = delete;
  ~HostCharge() { reset(); }

  uint64_t bytes() const { return bytes_; }
  void reset();

 private:
  friend class HostBudget;
  std::shared_ptr<HostBudget> budget_;
  TenantId tenant_ = 0;
  uint64_t bytes_ = 0;
};

class HostBudget : public std::enable_shared_from_this<HostBudget> {
 public:
  // A limit of 0 charges nothing and refuses nothing.
  static std::shared_ptr<HostBudget> create(uint64_t per_tenant_limit);

  // Charges `bytes` to `tenant` into *out; false, charging nothing, when that
  // would pass the tenant's limit.
  bool charge(TenantId tenant, uint64_t bytes, HostCharge* out);
  uint64_t used(TenantId tenant) const;
  uint64_t limit() const { return limit_; }

 private:
  friend class HostCharge;
  explicit HostBudget(uint64_t limit) : limit_(limit) {}
  void release(TenantId tenant, uint64_t bytes);

  const uint64_t limit_;
  mutable std::mutex mu_;
  std::unordered_map<TenantId, uint64_t> used_;  // guarded by mu_
};

}  // namespace vgpu::executor::common
