// A simulated GPU shared by simulated tenants, driving a real SchedulingPolicy and
// QuotaGate through the same turn protocol the dispatcher uses (turn.h), on
// a simulated clock. Kernels are non-preemptible and take the length drawn
// for them; nothing else takes time. Deterministic for a given seed: each
// tenant draws its kernels from its own random stream, so what a tenant runs
// does not depend on the order the policy serves tenants in.
#pragma once

#include <cstdint>
#include <limits>
#include <queue>
#include <vector>

#include "rng.h"
#include "vgpu/scheduler/policy.h"
#include "vgpu/scheduler/quota_gate.h"
#include "vgpu/scheduler/turn.h"

namespace vgpu::sched_sim {

using scheduler::TenantId;
using scheduler::TenantParams;

inline constexpr Nanos kNever = std::numeric_limits<Nanos>::max();

// How a tenant submits work.
struct Arrivals {
  enum class Kind {
    kAlwaysBusy,   // its queue never empties
    kBursts,       // `burst` kernels every `period`
    kSynchronous,  // `burst` kernels (at least one) at a time; the next ones
                   // `think` after the last of them completes (a program that
                   // launches a few kernels and synchronizes)
    kNone,         // connected, never submits anything
  };
  Kind kind = Kind::kAlwaysBusy;
  uint32_t burst = 0;
  Nanos period = 0;
  Nanos think = 0;

  static Arrivals always_busy() { return {}; }
  static Arrivals bursts(uint32_t n, Nanos every) { return {Kind::kBursts, n, every, 0}; }
  static Arrivals synchronous(Nanos think) { return {Kind::kSynchronous, 1, 0, think}; }
  static Arrivals closed_loop(uint32_t n, Nanos think) {
    return {Kind::kSynchronous, n, 0, think};
  }
  static Arrivals none() { return {Kind::kNone, 0, 0, 0}; }
};

struct TenantSpec {
  TenantParams params;
  KernelLengths kernels = KernelLengths::mixed();
  Arrivals arrivals;
  Nanos join_at = 0;
  Nanos leave_at = kNever;
};

// What the simulation reports as it goes. A tenant is active while it has a
// kernel queued or running.
class Observer {
 public:
  virtual ~Observer() = default;
  virtual void on_join(TenantId, const TenantParams&, Nanos) {}
  virtual void on_leave(TenantId, Nanos) {}
  virtual void on_active(TenantId, Nanos) {}
  virtual void on_idle(TenantId, Nanos) {}
  virtual void on_kernel(TenantId, Nanos /*start*/, Nanos /*length*/) {}
  virtual void on_rejected(TenantId, uint64_t /*kernels*/, Nanos) {}
  virtual void on_end(Nanos) {}
};

class Simulator final : private scheduler::TurnSource {
 public:
  Simulator(scheduler::SchedulingPolicy* policy, scheduler::QuotaGate* gate, uint64_t seed);

  TenantId add(const TenantSpec& spec);  // ids 1, 2, ...
  void observe(Observer* o) { observers_.push_back(o); }
  // Runs until `until` (the last turn may end a little later). Resumable.
  void run(Nanos until);
  // Tells the observers the run is over.
  void finish();

  Nanos now() const { return clock_.t; }
  uint64_t turns() const { return turns_; }
  uint64_t kernels() const { return kernels_; }
  Nanos longest_kernel() const { return longest_; }
  Nanos busy_time() const { return busy_; }

 private:
  struct SimClock final : scheduler::Clock {
    Nanos t = 0;
    Nanos now() const override { return t; }
  };
  struct Tenant {
    TenantSpec spec;
    Rng rng{0};
    bool present = false;
    bool gone = false;
    bool stopped = false;  // its work was rejected: it submits no more
    uint64_t queued = 0;  // kernels queued (always-busy: never reaches 0)
  };
  enum class EventKind { kJoin, kLeave, kArrive };
  struct Event {
    Nanos at;
    uint64_t seq;
    TenantId tenant;
    EventKind kind;
    bool operator>(const Event& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };

  // scheduler::TurnSource
  QueueState state(TenantId tenant) override;
  bool run_next(TenantId tenant, Nanos budget, Nanos* gpu_time, bool* more) override;
  void after_command(ArrivalListener& arrivals) override { process_events(&arrivals); }

  void schedule(Nanos at, TenantId tenant, EventKind kind);
  // Processes the events due by now, in time order; `arrivals` (while a
  // command's time is charged) hears the time of each first.
  void process_events(ArrivalListener* arrivals = nullptr);
  void arrive(Tenant& t, TenantId id, uint64_t n, Nanos at);
  void poke_held();
  void reject(TenantId tenant);
  Nanos next_event() const { return events_.empty() ? kNever : events_.top().at; }

  scheduler::SchedulingPolicy* const policy_;
  scheduler::QuotaGate* const gate_;
  const uint64_t seed_;
  SimClock clock_;
  std::vector<Tenant> tenants_;  // index = id - 1
  std::vector<Observer*> observers_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  uint64_t seq_ = 0;
  std::vector<TenantId> held_;  // tenants the gate told to wait
  Nanos next_poke_ = 0;
  uint64_t turns_ = 0, kernels_ = 0;
  Nanos longest_ = 0, busy_ = 0;
};

// A gate with a budget per tenant, for tests: once a tenant's budget is
// spent it answers `when_spent` (wait, or reject with kNotPermitted).
class BudgetGate final : public scheduler::QuotaGate {
 public:
  explicit BudgetGate(scheduler::Grant::Kind when_spent) : when_spent_(when_spent) {}
  void set_budget(TenantId tenant, Nanos budget);
  Nanos used(TenantId tenant) const;
  scheduler::Grant reserve(TenantId tenant, Nanos want) override;
  void settle(TenantId tenant, Nanos reserved, Nanos used) override;

 private:
  struct Account {
    bool limited = false;
    Nanos budget = 0;
    Nanos used = 0;
  };
  std::vector<Account> accounts_;  // by tenant id
  scheduler::Grant::Kind when_spent_;
};

}  // namespace vgpu::sched_sim
