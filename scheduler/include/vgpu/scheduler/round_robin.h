// best-effort: round robin over the tenants that have work, one slice each.
#pragma once

#include <deque>
#include <unordered_set>

#include "vgpu/scheduler/policy.h"

namespace vgpu::scheduler {

class RoundRobinPolicy final : public Policy {
 public:
  explicit RoundRobinPolicy(Nanos slice) : slice_(slice) {}

  std::string_view name() const override { return "best-effort"; }
  void add_tenant(TenantId, const TenantParams&, Nanos) override {}
  void remove_tenant(TenantId tenant, Nanos now) override { idle(tenant, now); }
  void update_tenant(TenantId, const TenantParams&, Nanos) override {}
  void runnable(TenantId tenant, Nanos now) override;
  void idle(TenantId tenant, Nanos now) override;
  Decision pick(Nanos now) override;
  void charge(TenantId, Nanos, Nanos) override {}

 private:
  Nanos slice_;
  std::deque<TenantId> ring_;              // runnable tenants in turn order
  std::unordered_set<TenantId> runnable_;  // members of ring_
};

}  // namespace vgpu::scheduler
