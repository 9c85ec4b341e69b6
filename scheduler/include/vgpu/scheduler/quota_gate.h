// The budget hook: before each slice the dispatcher asks the gate whether the
// tenant may run and for how much; after it, it settles what was measured.
// The quota store implements this against SQLite; UnlimitedGate lets all run.
#pragma once

#include "vgpu/protocol/status.h"
#include "vgpu/scheduler/types.h"

namespace vgpu::scheduler {

struct Grant {
  enum class Kind {
    kRun,     // may run for up to `budget`
    kWait,    // out of budget: keep its work queued until the gate changes its mind
    kReject,  // out of budget: fail its pending work with `error`
  };
  Kind kind = Kind::kRun;
  Nanos budget = 0;
  Status error = Status::kSuccess;
};

class QuotaGate {
 public:
  virtual ~QuotaGate() = default;
  // Reserves up to `want` of the tenant's budget for one slice.
  virtual Grant reserve(TenantId tenant, Nanos want) = 0;
  // Returns the reservation, charging `used` (measured; it may exceed the
  // reservation by at most one command, since kernels cannot be preempted).
  virtual void settle(TenantId tenant, Nanos reserved, Nanos used) = 0;
};

class UnlimitedGate final : public QuotaGate {
 public:
  Grant reserve(TenantId, Nanos want) override { return {Grant::Kind::kRun, want, Status::kSuccess}; }
  void settle(TenantId, Nanos, Nanos) override {}
};

}  // namespace vgpu::scheduler
