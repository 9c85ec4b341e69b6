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
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>

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
};

class BudgetBook {
 public:
  // GPU ns the ledger holds for `holder` within `window`.
  using LedgerSum = std::function<int64_t(const Holder& holder, const Window& window)>;
  explicit BudgetBook(LedgerSum ledger) : ledger_(std::move(ledger)) {}

  // Sets or changes a holder's budget, its windows on the wall clock of `tz`
  // (its course's time zone). A new holder, or one whose window changes
  // (a new period or zone), reads its spent time from the ledger (plus, on a
  // change, what was charged in memory and not yet written).
  void configure(const Holder& h, const GpuTime& g, int64_t now, const TimeZone& tz = {});
  bool known(const Holder& h) const { return accounts_.count(h.key()) != 0; }

  struct Reservation {
    bool granted = false;  // false: the budget is spent (or the range is closed)
    int64_t ns = 0;        // granted time, at most `want`
  };
  // Renews the window first if it has ended.
  Reservation reserve(const Holder& h, int64_t want_ns, int64_t now);
  // Returns a reservation and charges the measured time.
  void settle(const Holder& h, int64_t reserved_ns, int64_t used_ns, int64_t now);
  // Where a holder stands (renewing its window first if it has ended).
  BudgetState state(const Holder& h, int64_t now);

 private:
  struct Account {
    GpuTime gpu_time;
    TimeZone zone;
    Window window;
    int64_t spent = 0;
    int64_t reserved = 0;
  };
  Account& renewed(const Holder& h, int64_t now);

  LedgerSum ledger_;
  std::unordered_map<uint64_t, Account> accounts_;
};

}  // namespace vgpu::policy
