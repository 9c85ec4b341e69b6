// A scheduling policy: pure logic that decides which tenant's queue runs next
// and for how long. It consumes events and answers questions; it owns no
// threads, no file descriptors, and is called from one thread only (the
// dispatcher, or a simulation harness with a simulated clock).
//
// Events, in the order a driver sends them (see turn.h for the protocol the
// dispatcher and the simulator share):
//   add_tenant / update_tenant / remove_tenant   a VM joins, changes, leaves
//   runnable / idle                              its queue became non-empty / empty
//   pick                                         a turn (one slice) starts
//   charge                                       a command of the running tenant
//                                                completed, with its measured time
//   should_yield                                 between two commands of a turn
#pragma once

#include <optional>

#include <cstdint>
#include <string_view>

#include "vgpu/scheduler/types.h"

namespace vgpu::scheduler {

// What the policy knows of a tenant. Two levels: a group (a course) has a
// weight among groups, and its tenants (students' VMs) share the group's part
// by their own weights. Group 0 is the default group of ungrouped tenants.
// Weights are clamped to [1, kMaxWeight]. Tenants of one group should carry
// the same group_weight; if they disagree, the latest add/update wins.
struct TenantParams {
  uint32_t weight = 1;        // relative share within its group (>= 1)
  uint32_t group = 0;         // course id; 0: none
  uint32_t group_weight = 1;  // the group's relative share among groups (>= 1)
};

inline constexpr uint32_t kMaxWeight = 1'000'000;

// Parameters the operator pins on one tenant over those it has otherwise
// (vgpud's config file pins VM weights this way while the quota store
// supplies the rest; host::QuotaControl merges the two). Unset fields pass
// through.
struct ParamsOverride {
  std::optional<uint32_t> weight;
  std::optional<uint32_t> group;
  std::optional<uint32_t> group_weight;

  bool empty() const { return !weight && !group && !group_weight; }
  TenantParams apply(TenantParams p) const {
    if (weight) p.weight = *weight;
    if (group) p.group = *group;
    if (group_weight) p.group_weight = *group_weight;
    return p;
  }
  bool operator==(const ParamsOverride&) const = default;
};


// Settings every policy understands; a policy ignores what does not apply.
struct PolicyOptions {
  Nanos slice = 2 * kMillisecond;  // the longest a turn runs before the next pick
};

inline constexpr Nanos kMinSlice = 500 * kMicrosecond;
inline constexpr Nanos kMaxSlice = 50 * kMillisecond;

struct Decision {
  enum class Kind {
    kRun,        // run `tenant` for up to `slice`
    kIdle,       // nothing is runnable
    kWaitUntil,  // work is pending but may not run before `until` (e.g. a cap)
  };
  Kind kind = Kind::kIdle;
  TenantId tenant = 0;
  Nanos slice = 0;  // turn budget: the turn ends at the first command boundary past it
  Nanos until = 0;
};

// How the dispatcher picks the tenant whose turn is next (fair share, fixed share, round robin).
// Not to be confused with vgpu::policy (policy/), which keeps quotas, budgets and the ledger.
class SchedulingPolicy {
 public:
  virtual ~SchedulingPolicy() = default;
  virtual std::string_view name() const = 0;
  // Takes effect from the next pick; what the policy learned is kept.
  virtual void set_options(const PolicyOptions& options) = 0;

  virtual void add_tenant(TenantId tenant, const TenantParams& params, Nanos now) = 0;
  virtual void remove_tenant(TenantId tenant, Nanos now) = 0;
  virtual void update_tenant(TenantId tenant, const TenantParams& params, Nanos now) = 0;

  // The tenant's queue went from empty to non-empty, or back.
  virtual void runnable(TenantId tenant, Nanos now) = 0;
  virtual void idle(TenantId tenant, Nanos now) = 0;

  // Which runnable tenant goes next. Ends the previous turn.
  virtual Decision pick(Nanos now) = 0;
  // A command of `tenant` completed, taking `gpu_time` of measured device time.
  virtual void charge(TenantId tenant, Nanos gpu_time, Nanos now) = 0;
  // Asked between two commands of `running`'s turn: should the turn end now,
  // before its budget is spent, because another tenant has a better claim?
  virtual bool should_yield(TenantId running, Nanos now) {
    (void)running;
    (void)now;
    return false;
  }
};

}  // namespace vgpu::scheduler
