// Accounting: the quotas of the VMs the daemon serves, and their GPU-time
// budgets, kept in memory and backed by the store.
//
// A VM connects: its binding (student, course) and quota levels are read from
// the store, the holder of its budget (its student, or the VM itself when
// unassigned) is loaded with what the ledger says it spent in the current
// window, and the daemon gets the plan to apply (memory cap, weights, or a
// refusal). Before each slice the scheduler reserves time; after it, it
// settles what ran. After an admin change the daemon calls refresh() and
// applies the new plans at once.
//
// With a store shared by several hosts, budgets are leased (lease.h): the
// owner runs lease_needs()/lease_answer() against the store off the hot path.
//
// Usage batches pass through attribute() on their way to the ledger so that
// each VM's usage is charged to the student it is bound to.
//
// Thread-safe.
#pragma once

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "vgpu/policy/budget_book.h"
#include "vgpu/policy/store.h"
#include "vgpu/thread_annotations.h"

namespace vgpu::policy {

// Seconds since the epoch; injected so tests can move time.
using UnixClock = std::function<int64_t()>;

// What the daemon applies to a connected VM.
struct TenantPlan {
  TenantId tenant = 0;
  bool admitted = true;
  std::string why;          // when refused
  uint64_t memory_cap = 0;  // 0: none
  uint32_t weight = 1;      // within its course
  uint32_t course = 0;      // 0: unassigned
  uint32_t course_weight = 1;
  bool best_effort = false;  // over budget with on-exhaust best-effort
  std::optional<Placement> placement;  // which GPU it goes to; none: the host's policy
  bool operator==(const TenantPlan&) const = default;
};

// Whether a tenant's next turn may run (with the budget it gets), must wait for its window, or
// is refused; what reserve() answers. (The scheduler's Decision is which tenant runs next.)
struct Admission {
  enum class Kind { kRun, kWait, kReject };
  Kind kind = Kind::kRun;
  int64_t budget_ns = 0;
  bool plan_changed = false;  // best-effort began or ended: re-apply plan()
  bool best_effort = false;   // runs past its budget, in the best-effort group
  // kWait for a lease, not for the budget: no quota message, ask again soon.
  bool lease_pending = false;
};

struct TenantStatus {
  TenantId tenant = 0;
  std::string vm, student, course;
  Quota quota;
  BudgetState budget;
  bool best_effort = false;
};

class Accounting {
 public:
  Accounting(Store* store, UnixClock clock);

  // Leased budgets: call before the first connect(). `wake` is called
  // (under this class's lock: it must not call back) when a reservation
  // found no lease, so the owner asks the store at once.
  void enable_leases(std::function<void()> wake) EXCLUDES(mu_);
  std::vector<LeaseNeed> lease_needs(const LeaseRules& rules, bool all_back = false) EXCLUDES(mu_);
  void lease_answer(const LeaseNeed& need, const LeaseGrant* grant, const LeaseRules& rules)
      EXCLUDES(mu_);

  TenantPlan connect(TenantId tenant) EXCLUDES(mu_);
  // Re-reads every known VM's binding and quota; returns the plans of all of them.
  std::vector<TenantPlan> refresh() EXCLUDES(mu_);
  TenantPlan plan(TenantId tenant) EXCLUDES(mu_);

  Admission reserve(TenantId tenant, int64_t want_ns) EXCLUDES(mu_);
  void settle(TenantId tenant, int64_t reserved_ns, int64_t used_ns) EXCLUDES(mu_);

  // Fills in each record's student from the VM's current binding.
  void attribute(std::vector<UsageRecord>* batch) EXCLUDES(mu_);
  std::vector<TenantStatus> status() EXCLUDES(mu_);
  TenantStatus status_of(TenantId tenant) EXCLUDES(mu_);

 private:
  struct Tenant {
    VmPolicy policy;
    Quota quota;
    Holder holder;
    bool best_effort = false;
    int64_t outstanding = 0;  // reserved from the book by slices not yet settled
  };
  // Reads the tenant's policy and configures its budget.
  bool load(TenantId tenant, Tenant* t) REQUIRES(mu_);
  // load() into the known tenant, keeping its outstanding reservation.
  bool reload(TenantId tenant, Tenant* t) REQUIRES(mu_);
  TenantStatus status_locked(TenantId id, Tenant& t) REQUIRES(mu_);
  TenantPlan plan_of(const Tenant& t) const;

  Store* const store_;
  const UnixClock clock_;
  Mutex mu_;
  BudgetBook book_ GUARDED_BY(mu_);
  std::function<void()> lease_wake_ GUARDED_BY(mu_);
  std::unordered_map<TenantId, Tenant> tenants_ GUARDED_BY(mu_);
};

}  // namespace vgpu::policy
