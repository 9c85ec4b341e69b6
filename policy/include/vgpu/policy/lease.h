// Budget leases: how several hosts that share one store spend one student's
// GPU-time budget without asking the database before each slice.
//
// A lease is the amount of a budget window a host may spend in that window
// (its `limit`, counted from the window's start, on that host alone). A host
// takes one in a single transaction that sees every host's leases and ledger
// rows, and never gets more than what is left once the other hosts' leases
// are counted; it spends it in memory (BudgetBook), renews it when half is
// spent, and returns the unspent rest when the student's VMs go idle. A lease
// not renewed within its time to live (the host died, or lost the database)
// expires: the store counts that host's spending as what it last reported.
//
// The worst case: a host cut off from the database spends the rest of its
// lease, and the store, its lease expired, gives that part to another host.
// So a budget is overrun by at most the sum over hosts of one lease each
// (lease_overrun_bound), plus one slice per host (a kernel is not cut short).
// docs/scale-out.md section 7 has the numbers.
#pragma once

#include <cstdint>
#include <string>

#include "vgpu/policy/records.h"

namespace vgpu::policy {

struct LeaseRules {
  int64_t ttl_s = 30;                     // a lease not renewed for this long expires
  int64_t idle_return_s = 5;              // a holder idle this long gives its unspent lease back
  int64_t retry_s = 1;                    // after a failed or empty answer, ask again after this
  int64_t max_lease_ns = 60'000'000'000;  // one minute of GPU time
  int64_t min_lease_ns = 10'000'000;      // 10 ms: fewer transactions on tiny budgets
  int64_t budget_share = 16;              // a lease is at most 1/(share x hosts) of the budget
  // Hosts that reported within this long count as sharing the budget.
  int64_t live_host_s = 60;
};

// The size of one lease of `budget_ns` when `hosts` hosts share the store:
// budget / (share x hosts), between the rules' minimum and maximum (and never
// more than the budget).
int64_t lease_size(const LeaseRules& rules, int64_t budget_ns, int64_t hosts);

// The most a budget can be overrun through leases (slices aside): one lease
// per host.
inline int64_t lease_overrun_bound(const LeaseRules& rules, int64_t budget_ns, int64_t hosts) {
  return hosts * lease_size(rules, budget_ns, hosts);
}

// A host asks for (or gives back) a lease of one holder's budget window.
struct LeaseRequest {
  uint32_t student = 0;  // nonzero: the student's budget
  TenantId vm = 0;       // the VM's budget when student == 0
  std::string host;
  int64_t window_start = 0, window_end = 0;  // unix seconds
  int64_t budget_ns = 0;
  int64_t used_ns = 0;     // what this host has spent in the window
  bool give_back = false;  // return the unspent rest instead of taking more
  int64_t now = 0;         // unix seconds
};

struct LeaseGrant {
  int64_t limit_ns = 0;    // this host may spend up to this in the window
  int64_t used_ns = 0;     // this host's spending as the store counts it (>= the request's)
  int64_t spent_ns = 0;    // every host's spending as the store knows it
  int64_t expires_at = 0;  // unix seconds
  // Every host's spending has reached the budget: nothing will come back
  // (as opposed to a budget held by other hosts' leases, returned when
  // their VMs go idle or when the leases expire).
  bool exhausted = false;
};

}  // namespace vgpu::policy
