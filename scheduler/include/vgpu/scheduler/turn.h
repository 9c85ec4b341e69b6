// One turn (one slice of one tenant): the protocol the dispatcher and the
// simulation harness share, so that what the simulation measures is what the
// daemon runs.
//
//   plan_turn  asks the policy who goes next, checks that tenant still has
//              work, and asks the quota gate how much it may use.
//   run_turn   runs that tenant's queue in order, charging each command's
//              measured time to the policy, until the budget is spent, the
//              queue is empty, or the policy says another tenant should go
//              now; then settles with the gate.
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
  // Between two commands of a turn: report tenants that became runnable.
  virtual void between_commands() {}
};

TurnPlan plan_turn(Policy& policy, QuotaGate& gate, TurnSource& source, Nanos now);

// Runs a kRun plan; returns the GPU time used.
Nanos run_turn(Policy& policy, QuotaGate& gate, TurnSource& source, const Clock& clock,
               const TurnPlan& plan);

}  // namespace vgpu::scheduler
