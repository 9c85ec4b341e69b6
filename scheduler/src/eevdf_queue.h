// One level of weighted fair queueing in virtual time: EEVDF, "earliest
// eligible virtual deadline first" (Stoica and Abdel-Wahab, 1995; the
// algorithm Linux uses since 6.6). FairPolicy stacks two of these: groups
// (courses) at the top, each group's tenants below.
//
// Virtual time. An entity of weight w that receives s ns of service advances
// its virtual time ve by s/w. V, the queue's virtual time, is the weighted
// average of the active entities' ve. An entity's lag, w·(V − ve), is the
// service it is owed (positive) or has had in advance (negative); the lags of
// the active entities sum to zero, so V is exactly where the ideal fluid
// share (every active entity served at w/W at once) would have put everyone.
//
// Picking. An entity is eligible when its lag is >= 0 (ve <= V). Each turn
// is a request for service; pick takes the eligible entity with the earliest
// virtual deadline vd = ve + request/w. Kernels cannot be preempted, so a turn
// runs until the first command boundary past its slice and may overrun it by
// up to one command: the whole measured time is charged, the lag goes
// negative, and the entity is not eligible again until the others have caught
// up (the overrun is paid back). The request is therefore sized to what a turn
// can really take, slice + the entity's longest command so far: EEVDF bounds
// every lag by the largest request only when requests are honest, and a
// tenant that runs 10 ms kernels but asked for 2 ms would otherwise be picked
// ahead of a heavier tenant that is owed more, again and again.
//
// Leaving and coming back. When an entity goes idle its lag is saved and
// clamped: credit (positive lag) to at most one slice, so an idle tenant does
// not bank service; debt (negative lag) to at most kMaxDebt, so a tenant cannot
// shed an overrun by going idle for a moment. It comes back at that lag.
//
// Waking up during another's turn. A turn normally runs its full slice, which
// keeps switches between tenants rare. But when an entity that woke up during
// the turn is eligible and the running entity has had its fair part (its lag
// is <= 0), should_yield() says so, and the driver ends the turn at the next
// command boundary: an interactive tenant that submits one kernel at a time is
// not held behind a flood of small commands for a whole slice.
//
// Units: virtual times are ns * kScale / weight on a wrapping u64 clock
// (compared by signed difference); lags are ns * kScale. Costs: pick O(log n),
// charge of the running entity O(1), activate/deactivate O(log n).
//
// Entity states:
//   kFree      --add-->              kIdle
//   kIdle      --activate-->         kPending | kEligible   placed at its saved lag
//   kPending   --V reaches ve-->     kEligible              moved at pick
//   kEligible  --V falls below ve--> kPending               a leave moved V back; at pick
//   kEligible  --pick-->             kCurrent               out of both heaps, still in V
//   kCurrent   --finish_turn-->      kPending | kEligible   next request's deadline
//   any active --deactivate-->       kIdle                  lag saved, clamped
//   kIdle      --remove-->           kFree
#pragma once

#include <cstdint>
#include <vector>

#include "slot_heap.h"
#include "vgpu/scheduler/types.h"

namespace vgpu::scheduler::detail {

class EevdfQueue {
 public:
  using Slot = uint32_t;
  static constexpr Slot kNone = UINT32_MAX;
  static constexpr int64_t kScale = 1024;
  static constexpr Nanos kMaxDebt = kSecond;

  explicit EevdfQueue(Nanos slice) { set_slice(slice); }
  void set_slice(Nanos slice);

  Slot add(uint32_t owner, uint32_t weight);  // starts idle, lag 0
  void remove(Slot slot);                     // deactivates it first
  void set_weight(Slot slot, uint32_t weight);  // keeps its lag

  void activate(Slot slot);
  void deactivate(Slot slot);

  // Ends the current turn and starts the next: kNone if nothing is active.
  Slot pick();
  // Ends the current turn (its entity asks for its next slice).
  void finish_turn();
  void charge(Slot slot, Nanos used);
  bool should_yield() const;

  uint32_t owner(Slot slot) const { return entities_[slot].owner; }
  uint32_t weight(Slot slot) const { return entities_[slot].weight; }
  bool active(Slot slot) const { return entities_[slot].state > State::kIdle; }
  size_t active_count() const { return active_count_; }
  int64_t active_weight() const { return weight_sum_; }
  Slot current() const { return current_; }

  // Lag in ns * kScale: positive means owed. For an idle entity, the saved lag.
  int64_t lag(Slot slot) const;
  int64_t lag_ns(Slot slot) const { return lag(slot) / kScale; }
  // An idle entity's saved lag (clamped like any other).
  void set_saved_lag(Slot slot, int64_t lag);
  // Changes an active entity's lag by `delta` (ns * kScale), moving V so the
  // others' lags give up the same amount between them. An entity alone has no
  // lag to change.
  void add_lag(Slot slot, int64_t delta);

 private:
  enum class State : uint8_t { kFree, kIdle, kPending, kEligible, kCurrent };
  struct Entity {
    uint64_t ve = 0;  // virtual eligible time (where its service has brought it)
    uint64_t vd = 0;  // virtual deadline of its current request
    int64_t saved_lag = 0;  // while idle, ns * kScale
    uint64_t remainder = 0;  // of used * kScale / weight, carried so charges are exact
    int64_t longest = 0;     // its longest command so far, ns
    uint32_t weight = 1;
    uint32_t owner = 0;
    State state = State::kFree;
  };

  uint64_t vtime() const;
  void rebase(uint64_t v);
  void enter_sums(const Entity& e);
  void leave_sums(const Entity& e);
  void place(Entity& e, int64_t lag);  // sets ve so its lag, once in the sums, is `lag`
  void enqueue(Slot slot, uint64_t v);  // into pending or eligible by its ve
  void unqueue(Slot slot);             // out of whichever heap holds it
  uint64_t request(const Entity& e) const {
    return static_cast<uint64_t>((request_ + e.longest * kScale) / e.weight);
  }
  int64_t clamp_lag(int64_t lag) const;

  std::vector<Entity> entities_;
  std::vector<Slot> free_;
  SlotHeap pending_;   // active, not yet eligible; keyed by ve
  SlotHeap eligible_;  // keyed by vd
  Slot current_ = kNone;

  // V = base_ + key_sum_ / weight_sum_, with key_sum_ = sum of w * (ve - base_)
  // over active entities. base_ follows V so the sum stays small.
  uint64_t base_ = 0;
  int64_t key_sum_ = 0;
  int64_t weight_sum_ = 0;
  size_t active_count_ = 0;

  // Entities that woke during the current turn: the earliest ve among them.
  bool woken_ = false;
  uint64_t woken_min_ve_ = 0;

  int64_t request_ = 0;     // slice * kScale (plus the entity's longest command)
  int64_t max_credit_ = 0;  // slice * kScale
  int64_t max_debt_ = kMaxDebt * kScale;
};

}  // namespace vgpu::scheduler::detail
