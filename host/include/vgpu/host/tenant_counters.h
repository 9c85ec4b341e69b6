// What each VM did wrong or was held back for, counted where the daemon sees
// it: messages the decoder refused, well-formed requests answered with an
// error, queued work that failed, and times its queue was full so its ring
// was left unread (back-pressure). Only failures are counted (a success costs
// nothing here). Read by the admin `status` operation (daemon_status.h).
//
// Threads: the transport thread (opened, closed, waits, waited, malformed,
// refused, backpressure) and the dispatcher thread (work_failed); snapshot() from the
// admin thread. One mutex, taken on failure paths only.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "vgpu/scheduler/command.h"

namespace vgpu::host {

struct TenantCount {
  std::string vm;
  uint64_t channels = 0;      // open now
  uint64_t waiting = 0;       // open now but not admitted (a real VM refused as unassigned)
  uint64_t malformed = 0;     // refused by the decoder, or naming a client it cannot be
  uint64_t refused = 0;       // well-formed, answered with an error (bad handle, pointer, range...)
  uint64_t work_failed = 0;   // queued work that failed when it ran (or the quota refused)
  uint64_t backpressure = 0;  // times its queue was full and its requests waited in its ring

  uint64_t violations() const { return malformed + refused; }
};

class TenantCounters {
 public:
  void opened(scheduler::TenantId tenant, const std::string& vm);
  // A VM with no channel left is forgotten unless it has something on record,
  // so the map grows only with VMs that misbehaved.
  void closed(scheduler::TenantId tenant);
  // A real VM's channel kept though it is not admitted, and the end of that
  // wait (admitted, or closed).
  void waits(scheduler::TenantId tenant, const std::string& vm);
  void waited(scheduler::TenantId tenant);
  void malformed(scheduler::TenantId tenant) { bump(tenant, &TenantCount::malformed); }
  void refused(scheduler::TenantId tenant) { bump(tenant, &TenantCount::refused); }
  void work_failed(scheduler::TenantId tenant) { bump(tenant, &TenantCount::work_failed); }
  void backpressure(scheduler::TenantId tenant) { bump(tenant, &TenantCount::backpressure); }

  std::map<scheduler::TenantId, TenantCount> snapshot() const;
  TenantCount totals() const;  // over every VM ever counted

 private:
  void bump(scheduler::TenantId tenant, uint64_t TenantCount::*field);
  // `open` (channels or waiting) up by one, or down by one (then a VM with
  // nothing left is forgotten).
  void count_up(scheduler::TenantId tenant, const std::string& vm, uint64_t TenantCount::*open);
  void count_down(scheduler::TenantId tenant, uint64_t TenantCount::*open);
  void forget_if_idle(std::map<scheduler::TenantId, TenantCount>::iterator it);  // mu_ held

  mutable std::mutex mu_;
  std::map<scheduler::TenantId, TenantCount> tenants_;  // guarded by mu_
  TenantCount totals_;                                  // guarded by mu_
};

}  // namespace vgpu::host
