#include "scheduler_control.h"

#include <spdlog/spdlog.h>

#include "vgpu/scheduler/policy_factory.h"

namespace vgpu::daemon {

Result SchedulerControl::load() {
  SchedulerSettings s;
  if (Result r = resolve_scheduler_settings(flags_, &s); !r.ok()) return r;
  std::lock_guard lock(mu_);
  current_ = std::move(s);
  return {};
}

SchedulerSettings SchedulerControl::settings() const {
  std::lock_guard lock(mu_);
  return current_;
}

std::unique_ptr<scheduler::SchedulingPolicy> SchedulerControl::make_policy() const {
  const SchedulerSettings s = settings();
  std::unique_ptr<scheduler::SchedulingPolicy> policy;
  // Settings are checked when read, so this cannot fail; fall back to the
  // default rather than run without a policy if it ever did.
  if (!scheduler::make_policy(s.policy, policy_options(s), &policy).ok()) {
    (void)scheduler::make_policy(scheduler::kDefaultPolicy, scheduler::PolicyOptions{}, &policy);
  }
  return policy;
}

scheduler::DispatcherConfig SchedulerControl::dispatcher_config() const {
  scheduler::DispatcherConfig c;
  c.overlap_depth = settings().overlap_depth;
  return c;
}

void SchedulerControl::attach(scheduler::DispatcherGroup* dispatcher, PinSink pins) {
  std::lock_guard lock(mu_);
  dispatcher_ = dispatcher;
  pins_ = std::move(pins);
}

void SchedulerControl::vm_opened(scheduler::TenantId tenant, const std::string& vm) {
  std::lock_guard lock(mu_);
  vms_[vm] = tenant;
  if (pins_) pins_(tenant, pin_for_vm(current_, vm));
}

Result SchedulerControl::reload() {
  SchedulerSettings next;
  if (Result r = resolve_scheduler_settings(flags_, &next); !r.ok()) return r;
  std::lock_guard lock(mu_);
  if (next == current_) {
    spdlog::info("vgpud: scheduling settings unchanged ({})", describe(current_));
    return {};
  }
  if (dispatcher_) {
    if (next.policy != current_.policy || next.slice_ms != current_.slice_ms) {
      if (Result r = dispatcher_->configure_policy(next.policy, policy_options(next)); !r.ok())
        return r;  // checked already; kept for safety
    }
    dispatcher_->set_overlap_depth(next.overlap_depth);
    size_t repinned = 0;
    for (const auto& [vm, tenant] : vms_) {
      const scheduler::ParamsOverride before = pin_for_vm(current_, vm);
      const scheduler::ParamsOverride after = pin_for_vm(next, vm);
      if (before == after) continue;
      if (pins_) pins_(tenant, after);
      ++repinned;
    }
    spdlog::info("vgpud: scheduling now {} (was {}); {} connected or known VM(s) re-weighted",
                 describe(next), describe(current_), repinned);
  }
  current_ = std::move(next);
  return {};
}

}  // namespace vgpu::daemon
