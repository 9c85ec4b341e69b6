// One turn (one slice of one tenant): the protocol the dispatcher and the
// simulation harness share, so that what the simulation measures is what the
// daemon runs.
//
//   plan_turn  asks the policy who goes next, checks that tenant still has
//              work, and asks the quota gate how much it may use.
//   run_turn   runs that tenant's queue in order, charging each command's
//              measured time to the policy, until the budget is spent, the
//              queue is empty, or the policy says another tenant should go
//              now; then settles with the gate. A tenant that became runnable
//              while a command ran is owed its share of the rest of that
//              command: the command is charged in parts, split at each
//              arrival. (A program that synchronizes after a few kernels is
//              idle only for its round trip; charged whole before it came
//              back, the neighbour's kernel that filled the gap would cost the
//              neighbour nothing against it, and it would lose a kernel's
//              share every batch.)
//
// At most one tenant issues work during a turn. A command is never cut: the
// turn ends at the first command boundary past its budget, and the overrun is
// charged like the rest. A batch of launches counts as one step of the turn
// and is itself cut at the budget, so the overrun is still at most one kernel.
#pragma once

#include "vgpu/protocol/status.h"
#include "vgpu/scheduler/policy.h"
#include "vgpu/scheduler/quota_gate.h"
#include "vgpu/scheduler/types.h"

namespace vgpu::scheduler {

struct TurnPlan {
  enum class Kind {
    kRun,        // run `tenant` for up to `budget`
    kIdle,       // nothing is runnable
    kWaitUntil,  // work is pending but nothing may start before `until`
    kRetry,      // the policy's view was stale; it has been corrected: plan again
    kHeld,       // the gate says wait: `tenant` is idle to the policy until the gate relents
    kRejected,   // the gate says no: fail `tenant`'s pending work with `error`
  };
  Kind kind = Kind::kIdle;
  TenantId tenant = 0;
  Nanos budget = 0;
  Nanos until = 0;
  Status error = Status::kSuccess;
};

// The per-tenant queues, as a turn sees them.
class TurnSource {
 public:
  enum class QueueState { kReady, kEmpty, kGone };

  virtual ~TurnSource() = default;
  virtual QueueState state(TenantId tenant) = 0;
  // Runs the tenant's next command, or a batch of its next commands that
  // stops after the one that brings the device time to `budget` (a source may
  // batch consecutive kernel launches). False if there was none; else
  // `gpu_time` is the measured device time of all it ran and `more` whether
  // commands remain queued.
  virtual bool run_next(TenantId tenant, Nanos budget, Nanos* gpu_time, bool* more) = 0;
  // Told of each tenant that became runnable while a command ran, before the
  // source makes it runnable.
  class ArrivalListener {
   public:
    virtual void before_runnable(Nanos at) = 0;  // `at`: when it became runnable

   protected:
    ~ArrivalListener() = default;
  };
  // After each command (or batch) of a turn, before it is charged: make the
  // tenants that became runnable while it ran runnable with the policy, in
  // the order they did, calling arrivals.before_runnable first for each.
  virtual void after_command(ArrivalListener& arrivals) = 0;
};

TurnPlan plan_turn(SchedulingPolicy& policy, QuotaGate& gate, TurnSource& source, Nanos now);

// Runs a kRun plan; returns the GPU time used.
Nanos run_turn(SchedulingPolicy& policy, QuotaGate& gate, TurnSource& source, const Clock& clock,
               const TurnPlan& plan);

}  // namespace vgpu::scheduler
