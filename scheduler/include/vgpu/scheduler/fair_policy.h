// fair (the default): weighted fair share in virtual time, two levels.
//
// Groups (courses) share the GPU by their group_weight; inside a group its
// tenants share the group's part by their weight. Each level is an EEVDF
// queue (scheduler/src/eevdf_queue.h explains the algorithm): the eligible
// entity with the earliest virtual deadline runs next, charged its measured
// GPU time divided by its weight. Ungrouped tenants all sit in group 0, so
// with no courses the top level holds one group and the policy is flat.
//
// A tenant that goes idle takes its whole lag with it (its lag inside its
// group plus its part of the group's lag), so a student who comes and goes
// while its course is ahead does not leave the course's debt to the others.
//
// Guarantees (tests/unit/scheduler/fair_guarantees_test.cpp measures them;
// docs/scheduling.md has the figures): shares converge to the weights at both
// levels; an overrun is paid back; a tenant that went idle comes back with at
// most one slice of credit; a tenant that wakes up is not kept waiting behind
// a flood of small commands for a whole slice; lag against the ideal share
// stays within one slice plus one longest command per level.
//
// Costs: pick O(log n) at each level; charge of the running tenant O(1).
#pragma once

#include <memory>
#include <unordered_map>
#include <vector>

#include "vgpu/scheduler/policy.h"

namespace vgpu::scheduler {

namespace detail {
class EevdfQueue;
}

class FairPolicy final : public SchedulingPolicy {
 public:
  explicit FairPolicy(const PolicyOptions& options);
  ~FairPolicy() override;

  std::string_view name() const override { return "fair"; }
  void set_options(const PolicyOptions& options) override;

  void add_tenant(TenantId tenant, const TenantParams& params, Nanos now) override;
  void remove_tenant(TenantId tenant, Nanos now) override;
  void update_tenant(TenantId tenant, const TenantParams& params, Nanos now) override;
  void runnable(TenantId tenant, Nanos now) override;
  void idle(TenantId tenant, Nanos now) override;
  Decision pick(Nanos now) override;
  void charge(TenantId tenant, Nanos gpu_time, Nanos now) override;
  bool should_yield(TenantId running, Nanos now) override;

  // The tenant's lag within its group, in ns (positive: service owed).
  int64_t lag(TenantId tenant) const;

 private:
  struct Group;
  struct Tenant {
    TenantId id = 0;
    TenantParams params;
    Group* group = nullptr;
    uint32_t slot = 0;  // in group->members
    bool runnable = false;
  };

  Tenant* find(TenantId id);
  Group* join_group(Tenant* t);   // finds or creates t->params.group; assigns t->slot
  void leave_group(Tenant* t);    // t must be idle; frees the group when empty
  int64_t other_groups_part(const Group& g, int64_t lag) const;

  PolicyOptions options_;
  std::unique_ptr<detail::EevdfQueue> top_;  // groups
  std::unordered_map<uint32_t, std::unique_ptr<Group>> groups_;  // by group id
  std::vector<Group*> group_by_slot_;        // top_ slot -> group
  std::unordered_map<TenantId, Tenant> tenants_;  // node-stable: Tenant* stays valid
  Tenant* current_ = nullptr;  // picked last, until the next pick or its idle
};

}  // namespace vgpu::scheduler
