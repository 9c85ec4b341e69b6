// best-effort: round robin over the tenants that have work, one slice each.
// Weights and groups are ignored: every busy tenant gets the same turns.
#pragma once

#include <list>
#include <unordered_map>

#include "vgpu/scheduler/policy.h"

namespace vgpu::scheduler {

class RoundRobinPolicy final : public SchedulingPolicy {
 public:
  explicit RoundRobinPolicy(Nanos slice) : slice_(slice) {}
  explicit RoundRobinPolicy(const PolicyOptions& options) : slice_(options.slice) {}

  std::string_view name() const override { return "best-effort"; }
  void set_options(const PolicyOptions& options) override { slice_ = options.slice; }
  void add_tenant(TenantId, const TenantParams&, Nanos) override {}
  void remove_tenant(TenantId tenant, Nanos now) override { idle(tenant, now); }
  void update_tenant(TenantId, const TenantParams&, Nanos) override {}
  void runnable(TenantId tenant, Nanos now) override;
  void idle(TenantId tenant, Nanos now) override;
  Decision pick(Nanos now) override;
  void charge(TenantId, Nanos, Nanos) override {}

 private:
  Nanos slice_;
  std::list<TenantId> ring_;  // runnable tenants in turn order
  std::unordered_map<TenantId, std::list<TenantId>::iterator> where_;  // members of ring_
};

}  // namespace vgpu::scheduler
