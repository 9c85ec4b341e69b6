// GPU-time budgets in memory: what each budget holder has spent in its
// current window, what is reserved for running slices, and when the window
// renews. Pure logic: the caller passes the time and a way to read the ledger.
//
// Reserve before a slice, settle with the measured time after: a holder never
// gets a reservation past its budget, and overshoots it by at most what one
// slice ran past its reservation (kernels cannot be preempted).
//
// Spent time comes from the ledger when a holder is first seen (so a daemon
// restarted after a crash keeps the budgets) and is charged in memory after
// that; the ledger is written in batches elsewhere. Not thread-safe: the
// owner serialises calls.
//
// Leased (a store shared by several hosts, lease.h): a limited holder also
// spends only from its lease, the part of the window's budget this host may
// spend. lease_needs() says which leases to take, renew or give back, and
// lease_answer() applies what the store granted; reserve() never waits on
// the store. Without a lease a reservation is refused with `lease_pending`.
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "vgpu/policy/lease.h"
#include "vgpu/policy/quota.h"

namespace vgpu::policy {

// Whose budget: a student (shared by all their VMs) or an unassigned VM.
struct Holder {
  uint32_t student = 0;  // nonzero: the student's budget
  uint32_t vm = 0;       // the VM's tenant id when student == 0
  uint64_t key() const { return student ? student : (uint64_t{1} << 32) | vm; }
  bool operator==(const Holder&) const = default;
};

struct BudgetState {
  bool limited = false;
  int64_t budget_ns = 0;
  int64_t spent_ns =
      0;  // in the current window (unlimited holders: per week), settled slices included
  int64_t reserved_ns = 0;  // held by running slices
  Window window;
  bool open = true;         // false outside a range's days
  int64_t left_ns() const;  // what may still be reserved (0 when closed)
  // Leased: this host's lease (-1: none) and its spending in the window.
  int64_t lease_limit_ns = -1;
  int64_t here_ns = 0;
};

// A lease to ask the store for (BudgetBook::lease_needs).
struct LeaseNeed {
  Holder holder;
  LeaseRequest request;  // all but `host`
};

class BudgetBook {
 public:
  // GPU ns the ledger holds for `holder` within `window`.
  using LedgerSum = std::function<int64_t(const Holder& holder, const Window& window)>;
  explicit BudgetBook(LedgerSum ledger, bool leased = false)
      : ledger_(std::move(ledger)), leased_(leased) {}
  // Leased from now on (before the first configure()).
  void set_leased() { leased_ = true; }

  // Sets or changes a holder's budget, its windows on the wall clock of `tz`
  // (its course's time zone). A new holder, or one whose window changes
  // (a new period or zone), reads its spent time from the ledger (plus, on a
  // change, what was charged in memory and not yet written).
  void configure(const Holder& h, const GpuTime& g, int64_t now, const TimeZone& tz = {});
  bool known(const Holder& h) const { return accounts_.count(h.key()) != 0; }

  struct Reservation {
    bool granted = false;  // false: the budget is spent (or the range is closed)
    int64_t ns = 0;        // granted time, at most `want`
    // Not granted because this host holds no lease with time left, while the
    // budget may still have some: wait for lease_answer(), do not apply the
    // quota's on-exhaust.
    bool lease_pending = false;
  };
  // Renews the window first if it has ended.
  Reservation reserve(const Holder& h, int64_t want_ns, int64_t now);
  // Returns a reservation and charges the measured time. True when this
  // left a lease half spent (leased): time to renew it, not at the next tick.
  bool settle(const Holder& h, int64_t reserved_ns, int64_t used_ns, int64_t now);
  // Where a holder stands (renewing its window first if it has ended).
  BudgetState state(const Holder& h, int64_t now);

  // Leased: the leases to take (a holder that wants time and has none left),
  // renew (half spent, or half its time to live gone while in use) or give
  // back (idle, with some unspent), each marked as asked until answered. A
  // lease given back stops serving at once, before the store hears of it.
  // `all_back` (the daemon stops): every unspent lease is given back.
  std::vector<LeaseNeed> lease_needs(int64_t now, const LeaseRules& rules, bool all_back = false);
  // The store's answer to a need (`grant` null: no answer, ask again after
  // the rules' retry time).
  void lease_answer(const LeaseNeed& need, const LeaseGrant* grant, int64_t now,
                    const LeaseRules& rules);

 private:
  struct Account {
    Holder holder;
    GpuTime gpu_time;
    TimeZone zone;
    Window window;
    int64_t spent = 0;
    int64_t reserved = 0;
    // Leased only:
    int64_t here = 0;         // this host's spending in the window
    int64_t limit = -1;       // the lease (-1: none)
    int64_t granted = 0;      // the last grant's size (renewal at half of it)
    int64_t renew_at = 0;     // unix seconds: renew by then if in use
    int64_t next_ask = 0;     // unix seconds: not before (after a failure)
    int64_t last_wanted = 0;  // unix seconds: the last reservation
    bool wants = false;       // a reservation found no lease since the last answer
    bool asked = false;       // a need is out
    bool exhausted = false;   // the store said the whole budget is spent
  };
  // The leased part of reserve(): what the lease still allows.
  int64_t lease_left(const Account& a) const;
  // A window change drops the lease of the old one.
  static void new_window(Account& a);
  Account& renewed(const Holder& h, int64_t now);

  LedgerSum ledger_;
  bool leased_;
  std::unordered_map<uint64_t, Account> accounts_;
};

}  // namespace vgpu::policy
