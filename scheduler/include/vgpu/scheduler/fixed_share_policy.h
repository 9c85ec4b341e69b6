// fixed-share: every tenant is capped at its share of the GPU, even when the
// GPU would otherwise sit idle (for grading, where a student's program must
// see the same GPU whatever the others do, fairness matters more than
// throughput).
//
// A tenant's share is fixed by who is registered (connected), not by who is
// busy: share = group_weight / (sum of the registered groups' weights)
//             * weight / (sum of the weights of its group's registered tenants).
//
// Mechanism: a virtual clock per tenant (Zhang's VirtualClock, without
// banking). next_start is the earliest time the tenant may start its next
// command; a command that ran `used` ns from `start` moves it to
//   max(next_start, start) + used / share,
// so a tenant that ran u waits u * (1/share - 1) before it runs again, and
// time it spent idle or waiting is never saved up. Each turn runs one command
// (commands that take no GPU time ride along), and among the tenants whose
// next_start has come, the earliest goes first. Hence, for any window of
// length L: service <= share * L + one command, the cap the tests check.
//
// Tenant states:
//   registered, idle    --runnable-->          ready (in the heap, by next_start)
//   ready               --pick, next_start<=now--> running one command
//   running             --charge-->            ready (next_start moved on)
//   ready               --idle-->              registered, idle
#pragma once

#include <memory>
#include <unordered_map>
#include <vector>

#include "vgpu/scheduler/policy.h"

namespace vgpu::scheduler {

namespace detail {
class SlotHeap;
}

class FixedSharePolicy final : public SchedulingPolicy {
 public:
  explicit FixedSharePolicy(const PolicyOptions& options);
  ~FixedSharePolicy() override;

  std::string_view name() const override { return "fixed-share"; }
  void set_options(const PolicyOptions& options) override { options_ = options; }

  void add_tenant(TenantId tenant, const TenantParams& params, Nanos now) override;
  void remove_tenant(TenantId tenant, Nanos now) override;
  void update_tenant(TenantId tenant, const TenantParams& params, Nanos now) override;
  void runnable(TenantId tenant, Nanos now) override;
  void idle(TenantId tenant, Nanos now) override;
  Decision pick(Nanos now) override;
  void charge(TenantId tenant, Nanos gpu_time, Nanos now) override;

  // The tenant's current share of the GPU, in [0, 1].
  double share(TenantId tenant) const;

 private:
  struct Tenant {
    TenantId id = 0;
    uint32_t weight = 1;
    uint32_t group = 0;
    uint32_t slot = 0;
    bool runnable = false;
    Nanos next_start = 0;
  };
  struct Group {
    uint32_t weight = 1;
    uint64_t member_weights = 0;
    size_t tenants = 0;
  };

  void enter(Tenant& t, const TenantParams& params);
  void leave(Tenant& t);
  double share_of(const Tenant& t) const;

  PolicyOptions options_;
  std::unordered_map<TenantId, Tenant> tenants_;
  std::unordered_map<uint32_t, Group> groups_;
  uint64_t group_weights_ = 0;  // sum over registered groups
  std::vector<Tenant*> by_slot_;
  std::vector<uint32_t> free_slots_;
  std::unique_ptr<detail::SlotHeap> ready_;  // runnable tenants by next_start
};

}  // namespace vgpu::scheduler
